package pppoe

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestClientReconnect: Reconnect sends PADT for the session (the AC sees
// it) and brings a new session up at once, without a failure's holdoff;
// outside Run it fails with ErrNotRunning.
func TestClientReconnect(t *testing.T) {
	cc, sc := Pipe()
	srv := NewServer(ServerConfig{Users: map[string]string{"u": "p"}, LocalAddr: 0x0a000001,
		PoolFirst: 0x0a00000a, PoolLast: 0x0a000014}, sc)
	// A holdoff far longer than the test: only Reconnect's "now" can
	// bring the second session up in time.
	cli := NewClient(ClientConfig{Username: "u", Password: "p", PADOWait: -1, HoldoffDelay: time.Hour, MaxHoldoff: time.Hour}, cc, nil)
	if err := cli.Reconnect("early"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Reconnect before Run: %v, want ErrNotRunning", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sdone, cdone := make(chan error, 1), make(chan error, 1)
	go func() { sdone <- srv.Run(ctx) }()
	go func() { cdone <- cli.Run(ctx) }()
	defer func() {
		cancel()
		<-cdone
		<-sdone
	}()
	waitState := func(want uint64, within time.Duration) Status {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
			st := cli.Status()
			if st.State == StateUp && st.Counters.SessionsUp == want {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %d not up: state %s, last error %q", want, st.State, st.LastError)
			}
		}
	}
	first := waitState(1, 10*time.Second)
	if err := cli.Reconnect("reconnect requested"); err != nil {
		t.Fatal(err)
	}
	// Run's loop sleeps until its next timer (LCP echo, 10 s) unless
	// Reconnect wakes it.
	second := waitState(2, 3*time.Second)
	if c := srv.Counters(); c.PADTReceived != 1 || c.SessionsUp != 2 {
		t.Fatalf("AC counters %+v: want one PADT received and two sessions", c)
	}
	if second.SessionID == first.SessionID || second.Counters.PADTSent != 1 || second.Counters.Reconnects != 1 ||
		second.LastError != "reconnect requested" {
		t.Fatalf("after Reconnect: session %#x (was %#x), PADT sent %d, reconnects %d, last error %q",
			second.SessionID, first.SessionID, second.Counters.PADTSent, second.Counters.Reconnects, second.LastError)
	}
}
