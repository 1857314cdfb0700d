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
