package router

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/pppoe"
)

// Session hooks run off the fast path, one at a time and in order, on a
// goroutine of their own: the PPPoE client never waits for them.
//
//   - ResolvFile gets "nameserver" lines for the DNS servers IPCP gave
//     (pppd's usepeerdns writes /etc/ppp/resolv.conf the same way), written
//     to a temporary file in the same directory (made if missing), synced
//     and renamed over it (over a symlink's target), on every session that
//     brings DNS servers; it is left as it is when the session goes down.
//   - UpScript runs when a session is up, DownScript when it goes down,
//     as pppd's ip-up and ip-down: a down only after its up ran, an up
//     once per session. Like pppd they get a small environment (PATH and
//     the session: PPPFWD_EVENT (up or down), PPPFWD_WAN_INTERFACE,
//     PPPFWD_LOCAL, PPPFWD_PEER, PPPFWD_DNS1, PPPFWD_DNS2,
//     PPPFWD_SESSION_ID, PPPFWD_MTU, and pppd's IPLOCAL, IPREMOTE, DNS1,
//     DNS2) and pppd's arguments (interface, tty, speed, local address,
//     remote address, ipparam; here the WAN interface, "", 0, the
//     addresses, ""). There is no ppp interface: a script that configures
//     one is not a drop-in. A script gets HookTimeout; then its whole
//     process group is killed.
//
// Hook events beyond HookQueue waiting are dropped and logged; Close waits
// at most HookTimeout+5s for the queue.
const (
	HookTimeout = 30 * time.Second
	HookQueue   = 16
)

type hookEvent struct {
	up bool
	s  pppoe.Session // a copy: the up session, or the one that went down
}

type hooks struct {
	cfg     *Config
	logf    func(string, ...any)
	events  chan hookEvent
	done    chan struct{}
	timeout time.Duration // HookTimeout (tests shorten it)

	mu     sync.Mutex // publish vs close
	closed bool
	last   *pppoe.Session // the last session published up (its down event reuses it)
}

func newHooks(cfg *Config, logf func(string, ...any)) *hooks {
	if cfg.ResolvFile == "" && cfg.UpScript == "" && cfg.DownScript == "" {
		return nil
	}
	h := &hooks{cfg: cfg, logf: logf, events: make(chan hookEvent, HookQueue), done: make(chan struct{}), timeout: HookTimeout}
	go h.run()
	return h
}

// publish queues the hook work for a session change (nil: down).
func (h *hooks) publish(s *pppoe.Session) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	ev := hookEvent{up: s != nil}
	switch {
	case s != nil && h.last != nil && h.last.ID == s.ID && h.last.LocalAddr == s.LocalAddr:
		*h.last = *s // the same session published again (an MTU change): no second up
		return
	case s != nil:
		ev.s = *s
	case h.last != nil:
		ev.s = *h.last
	default:
		return // down without an up that ran: nothing to undo
	}
	select {
	case h.events <- ev:
		if ev.up {
			h.last = &ev.s
		} else {
			h.last = nil
		}
	default:
		// Dropped: an up leaves last as it was (its down will not run); a
		// down keeps last, so the next up is taken as a new session only
		// after this one's down is queued.
		h.logf("pppfwd: hooks: %d events waiting, session %s dropped", HookQueue, map[bool]string{true: "up", false: "down"}[ev.up])
	}
}

// close waits for the queued hooks to finish.
func (h *hooks) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.events)
	}
	h.mu.Unlock()
	select {
	case <-h.done:
	case <-time.After(h.timeout + 5*time.Second):
		h.logf("pppfwd: hooks still running at shutdown: not waiting for them")
	}
}

func (h *hooks) run() {
	defer close(h.done)
	for ev := range h.events {
		if ev.up && h.cfg.ResolvFile != "" && ev.s.DNS != [2]uint32{} {
			if err := writeResolv(h.cfg.ResolvFile, ev.s.DNS); err != nil {
				h.logf("pppfwd: %v", err)
			}
		}
		script := h.cfg.DownScript
		if ev.up {
			script = h.cfg.UpScript
		}
		if script != "" {
			if err := h.runScript(script, ev); err != nil {
				h.logf("pppfwd: %s: %v", script, err)
			}
		}
	}
}

func (h *hooks) runScript(script string, ev hookEvent) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	local, peer := addrString(ev.s.LocalAddr), addrString(ev.s.PeerAddr)
	dns1, dns2 := dnsString(ev.s.DNS[0]), dnsString(ev.s.DNS[1])
	cmd := exec.CommandContext(ctx, script, h.cfg.WANInterface, "", "0", local, peer, "")
	event := "down"
	if ev.up {
		event = "up"
	}
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"PPPFWD_EVENT=" + event,
		"PPPFWD_WAN_INTERFACE=" + h.cfg.WANInterface,
		"PPPFWD_LOCAL=" + local, "PPPFWD_PEER=" + peer,
		"PPPFWD_DNS1=" + dns1, "PPPFWD_DNS2=" + dns2,
		"PPPFWD_SESSION_ID=" + strconv.Itoa(int(ev.s.ID)),
		"PPPFWD_MTU=" + strconv.Itoa(ev.s.MTU),
		"IPLOCAL=" + local, "IPREMOTE=" + peer, "DNS1=" + dns1, "DNS2=" + dns2,
	}
	// Its own process group, killed whole on timeout; what it leaves in
	// the background does not hold the hooks up past WaitDelay.
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited; what it left running keeps its output
	}
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// capped keeps the first 4 KiB written to it (a script's output, for the
// log).
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := 4096 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (c *capped) String() string { return string(c.b) }

func dnsString(a uint32) string {
	if a == 0 {
		return ""
	}
	return addrString(a)
}

// writeResolv replaces file (or, for a symlink, its target) with the
// servers' nameserver lines.
func writeResolv(file string, dns [2]uint32) error {
	var b strings.Builder
	b.WriteString("# written by pppfwd from the PPPoE session (IPCP)\n")
	for _, a := range dns {
		if a != 0 {
			fmt.Fprintf(&b, "nameserver %s\n", addrString(a))
		}
	}
	if err := writeFileAtomic(file, []byte(b.String())); err != nil {
		return fmt.Errorf("resolv file: %w", err)
	}
	return nil
}

// writeFileAtomic replaces file (or, for a symlink, its target) with data:
// a temporary file in the same directory (made if missing), synced, mode
// 0644, renamed over it. A reader sees the old file or the new one.
func writeFileAtomic(file string, data []byte) error {
	if p, err := filepath.EvalSymlinks(file); err == nil {
		file = p
	} else if t, lerr := os.Readlink(file); lerr == nil {
		// A symlink to a file that does not exist yet: write the target.
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(file), t)
		}
		file = t
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".pppfwd-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}
