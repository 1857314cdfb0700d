package idle

import "testing"

// TestParseStrace reads strace -c's table, with and without the errors
// column filled.
func TestParseStrace(t *testing.T) {
	in := []byte(`% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.000600          30        20           ppoll
 30.00    0.000300          10        30         5 futex
 10.00    0.000100          10        10           read
------ ----------- ----------- --------- --------- ----------------
100.00    0.001000          16        60         5 total
`)
	total, top, err := parseStrace(in)
	if err != nil {
		t.Fatal(err)
	}
	if total != 60 || top["futex"] != 30 || top["ppoll"] != 20 || top["read"] != 10 || len(top) != 3 {
		t.Fatalf("total %d top %v", total, top)
	}
	if _, _, err := parseStrace([]byte("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n")); err == nil {
		t.Fatal("no error for output without a summary")
	}
}

// TestParsePing reads the counts of ping's summary.
func TestParsePing(t *testing.T) {
	out := `PING 203.0.113.7 (203.0.113.7) 56(84) bytes of data.

--- 203.0.113.7 ping statistics ---
1000 packets transmitted, 998 received, 0.2% packet loss, time 1998ms
rtt min/avg/max/mdev = 0.051/0.080/0.402/0.020 ms
`
	sent, got, err := parsePing(out)
	if err != nil || sent != 1000 || got != 998 {
		t.Fatalf("parsePing: %d, %d, %v", sent, got, err)
	}
	if _, _, err := parsePing("ping: connect: Network is unreachable\n"); err == nil {
		t.Fatal("no summary should be an error")
	}
}
