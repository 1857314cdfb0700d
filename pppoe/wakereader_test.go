package pppoe

import (
	"context"
	"testing"
	"time"
)

// TestStopWakesReader: a client and a server whose Conn is a ReaderWaker
// return promptly when their context ends, although their reader waits up
// to readPoll (a second) between frames so that an idle session makes no
// wakeups.
func TestStopWakesReader(t *testing.T) {
	if readPoll < 500*time.Millisecond {
		t.Fatalf("readPoll %v: the test needs a long one to tell", readPoll)
	}
	for _, who := range []string{"client", "server"} {
		a, _ := Pipe()
		var run func(context.Context) error
		if who == "client" {
			run = NewClient(ClientConfig{Username: "u", Password: "p"}, a, nil).Run
		} else {
			run = NewServer(ServerConfig{ACName: "ac"}, a).Run
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); run(ctx) }()
		time.Sleep(50 * time.Millisecond)
		t0 := time.Now()
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Run did not return", who)
		}
		if d := time.Since(t0); d > readPoll/2 {
			t.Fatalf("%s: Run took %v to return after cancel: the reader was not woken", who, d)
		}
		a.Close()
	}
}
