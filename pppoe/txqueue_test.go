package pppoe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// errRingFull stands for the dataplane's ErrInjectFull: a transient
// refusal.
var errRingFull = errors.New("dataplane: injection ring full")

// TestTransientWriteErrors: a Conn that refuses every write for 2 s, then
// half of them, neither ends the client (nor the AC) nor keeps the session
// from coming up and staying up; the errors are counted.
func TestTransientWriteErrors(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run(side, func(t *testing.T) {
			p := newSimPair(t, nil, nil)
			nd := p.cn
			if side == "server" {
				nd = p.sn
			}
			start, n := p.net.now, 0
			nd.fail = func([]byte) error {
				n++
				if p.net.now.Sub(start) < 2*time.Second || n%2 == 0 {
					return fmt.Errorf("inject: %w", errRingFull)
				}
				return nil
			}
			p.waitUp(t, time.Minute)
			p.net.run(2*time.Minute, func() bool { return !p.up() })
			st := p.c.Status()
			if !p.up() || st.Counters.SessionsUp != 1 {
				t.Fatalf("up %v, sessions up %d, last error %q", p.up(), st.Counters.SessionsUp, st.LastError)
			}
			if err := (*clientCore)(p.c).err(); err != nil {
				t.Fatalf("client core error %v", err)
			}
			if err := (*serverCore)(p.s).err(); err != nil {
				t.Fatalf("server core error %v", err)
			}
			errs := st.Counters.WriteErrors
			if side == "server" {
				errs = p.s.Counters().WriteErrors
			}
			if errs < 10 {
				t.Fatalf("%d write errors counted", errs)
			}
			if side == "client" && st.LastError == "" {
				t.Fatal("no LastError for the write errors")
			}
		})
	}
}

// TestTxQueueOrderAndBound: frames refused by the Conn leave in order once
// it takes them again; a full queue drops its oldest frames, counted; a
// closed Conn is permanent.
func TestTxQueueOrderAndBound(t *testing.T) {
	n := newSimNet(t)
	nd := n.conn(1)
	refuse := true
	nd.fail = func([]byte) error {
		if refuse {
			return errRingFull
		}
		return nil
	}
	q := txQueue{conn: nd}
	now := n.now
	for i := range txQueueLen + 4 {
		q.write([]byte{byte(i)}, now)
	}
	if q.dropped != 4 || len(q.frames) != txQueueLen || q.errors != 1 || q.err != nil {
		t.Fatalf("dropped %d, waiting %d, errors %d, err %v", q.dropped, len(q.frames), q.errors, q.err)
	}
	q.flush(now) // not yet due
	if len(n.sent) != 0 {
		t.Fatal("flushed before the retry time")
	}
	now = q.next()
	q.flush(now) // still refused: backoff doubles
	if q.errors != 2 || q.next().Sub(now) != 2*txRetryMin {
		t.Fatalf("errors %d, next retry in %v", q.errors, q.next().Sub(now))
	}
	refuse = false
	q.write([]byte{0xff}, now) // queues behind the waiting ones (dropping one more)
	now = q.next()
	q.flush(now)
	if q.pending() || !q.next().IsZero() || len(n.sent) != txQueueLen || q.dropped != 5 {
		t.Fatalf("pending %v, sent %d, dropped %d", q.pending(), len(n.sent), q.dropped)
	}
	for i, f := range n.sent[:txQueueLen-1] {
		if f.b[0] != byte(i+5) {
			t.Fatalf("frame %d is %d: reordered", i, f.b[0])
		}
	}
	if n.sent[txQueueLen-1].b[0] != 0xff {
		t.Fatal("the new frame overtook the waiting ones")
	}
	q.write([]byte{0xfe}, now) // an empty queue: straight out
	if q.pending() || len(n.sent) != txQueueLen+1 {
		t.Fatal("a write with nothing waiting was queued")
	}
	nd.fail = func([]byte) error { return fmt.Errorf("write: %w", os.ErrClosed) }
	q.write([]byte{1}, now)
	if !errors.Is(q.err, os.ErrClosed) || q.pending() {
		t.Fatalf("closed Conn: err %v, pending %v", q.err, q.pending())
	}
}

// flakyConn refuses the writes fail says no to.
type flakyConn struct {
	Conn
	mu   sync.Mutex
	n    int
	fail func(n int) error
}

func (f *flakyConn) WriteFrame(b []byte) error {
	f.mu.Lock()
	f.n++
	err := f.fail(f.n)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.Conn.WriteFrame(b)
}

// TestRunTransientWriteErrors: Run over a Conn refusing every other write
// brings the session up and keeps running; a Conn whose writes say it is
// closed ends Run with that error.
func TestRunTransientWriteErrors(t *testing.T) {
	a, b := Pipe()
	defer a.Close()
	defer b.Close()
	srv := NewServer(ServerConfig{Auth: AuthCHAPMD5, Users: map[string]string{testUser: testPass},
		LocalAddr: srvAddr, PoolFirst: poolLo, PoolLast: poolHi, RestartTimer: 200 * time.Millisecond},
		&flakyConn{Conn: b, fail: func(n int) error {
			if n%2 == 0 {
				return errRingFull
			}
			return nil
		}})
	ups := make(chan *hdr.Session, 8)
	fc := &flakyConn{Conn: a, fail: func(n int) error {
		if n%2 == 1 {
			return errRingFull
		}
		return nil
	}}
	cli := NewClient(ClientConfig{Username: testUser, Password: testPass, PADOWait: time.Millisecond,
		RestartTimer: 200 * time.Millisecond, EchoInterval: 50 * time.Millisecond, TerminateTimeout: 500 * time.Millisecond,
	}, fc, func(s *hdr.Session) { ups <- s })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serr, cerr := make(chan error, 1), make(chan error, 1)
	go func() { serr <- srv.Run(ctx) }()
	go func() { cerr <- cli.Run(ctx) }()
	select {
	case s := <-ups:
		if s == nil {
			t.Fatal("nil session")
		}
	case err := <-cerr:
		t.Fatalf("client Run ended: %v", err)
	case err := <-serr:
		t.Fatalf("server Run ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("not up: %+v", cli.Status())
	}
	if st := cli.Status(); st.Counters.WriteErrors == 0 {
		t.Fatalf("no write errors counted: %+v", st.Counters)
	}
	// Now the Conn is closed under the client: its next write (an echo)
	// ends Run with the error.
	fc.mu.Lock()
	fc.fail = func(int) error { return fmt.Errorf("afpacket: %w", ErrClosed) }
	fc.mu.Unlock()
	select {
	case err := <-cerr:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Run ended with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end on a closed Conn")
	}
	cancel()
	if err := <-serr; err != nil {
		t.Fatal(err)
	}
}
