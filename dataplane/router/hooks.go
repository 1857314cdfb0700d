package router

import (
	"context"
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
//     to a temporary file and renamed over it, on every session that brings
//     DNS servers; it is left as it is when the session goes down.
//   - UpScript runs when a session is up, DownScript when it goes down
//     (pppd's ip-up and ip-down), with HookTimeout to finish and the
//     session in the environment: PPPFWD_EVENT (up or down),
//     PPPFWD_WAN_INTERFACE, PPPFWD_LOCAL, PPPFWD_PEER, PPPFWD_DNS1,
//     PPPFWD_DNS2, PPPFWD_SESSION_ID, PPPFWD_MTU.
//
// Hook events beyond HookQueue waiting are dropped and logged.
const (
	HookTimeout = 30 * time.Second
	HookQueue   = 16
)

type hookEvent struct {
	up bool
	s  pppoe.Session // a copy: the up session, or the one that went down
}

type hooks struct {
	cfg    *Config
	logf   func(string, ...any)
	events chan hookEvent
	done   chan struct{}

	mu     sync.Mutex // publish vs close
	closed bool
	last   *pppoe.Session // the last session published up (its down event reuses it)
}

func newHooks(cfg *Config, logf func(string, ...any)) *hooks {
	if cfg.ResolvFile == "" && cfg.UpScript == "" && cfg.DownScript == "" {
		return nil
	}
	h := &hooks{cfg: cfg, logf: logf, events: make(chan hookEvent, HookQueue), done: make(chan struct{})}
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
	case s != nil:
		ev.s = *s
		h.last = &ev.s
	case h.last != nil:
		ev.s = *h.last
		h.last = nil
	default:
		return // down without an up: nothing ran
	}
	select {
	case h.events <- ev:
	default:
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
	<-h.done
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
	ctx, cancel := context.WithTimeout(context.Background(), HookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	event := "down"
	if ev.up {
		event = "up"
	}
	cmd.Env = append(os.Environ(),
		"PPPFWD_EVENT="+event,
		"PPPFWD_WAN_INTERFACE="+h.cfg.WANInterface,
		"PPPFWD_LOCAL="+addrString(ev.s.LocalAddr),
		"PPPFWD_PEER="+addrString(ev.s.PeerAddr),
		"PPPFWD_DNS1="+dnsString(ev.s.DNS[0]),
		"PPPFWD_DNS2="+dnsString(ev.s.DNS[1]),
		"PPPFWD_SESSION_ID="+strconv.Itoa(int(ev.s.ID)),
		"PPPFWD_MTU="+strconv.Itoa(ev.s.MTU),
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func dnsString(a uint32) string {
	if a == 0 {
		return ""
	}
	return addrString(a)
}

// writeResolv replaces file with the servers' nameserver lines.
func writeResolv(file string, dns [2]uint32) error {
	var b strings.Builder
	b.WriteString("# written by pppfwd from the PPPoE session (IPCP)\n")
	for _, a := range dns {
		if a != 0 {
			fmt.Fprintf(&b, "nameserver %s\n", addrString(a))
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".pppfwd-resolv-*")
	if err != nil {
		return fmt.Errorf("resolv file: %w", err)
	}
	_, err = tmp.WriteString(b.String())
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
		return fmt.Errorf("resolv file %s: %w", file, err)
	}
	return nil
}
