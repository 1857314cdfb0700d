package router

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// Session hooks run off the fast path, one at a time and in order, on a
// goroutine of their own: the PPPoE client never waits for them.
//
//   - ResolvFile gets "nameserver" lines for the DNS servers IPCP gave
//     (pppd's usepeerdns writes /etc/ppp/resolv.conf the same way), written
//     to a temporary file in the same directory (made 0755 if missing),
//     synced and renamed over it, mode 0644, on every session that brings
//     DNS servers (a ResolvFile that is a symlink is refused: see
//     writeFileAtomic); it is left as it is when the session goes down.
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
//   - IPv6Script runs when the LAN gets an IPv6 prefix (a static one at
//     start, a delegated one when DHCPv6 brings it) with PPPFWD_EVENT
//     ipv6-up, and when it loses it with ipv6-down (a new prefix: down for
//     the old, then up), as dhcpcd's hooks do; arguments: the event and
//     the LAN prefix; environment: PPPFWD_EVENT, PPPFWD_LAN_INTERFACE,
//     PPPFWD_LAN6_PREFIX, PPPFWD_LAN6_ADDRESS (the router's, prefix::1),
//     PPPFWD_DELEGATED (empty for a static prefix), PPPFWD_DNS6
//     (space-separated). Use it to give a host TAP its IPv6 address or to
//     tell dnsmasq.
//
// Hook events beyond HookQueue waiting are dropped and logged; Close waits
// at most HookTimeout+5s for the queue.
const (
	HookTimeout = 30 * time.Second
	HookQueue   = 16
)

type hookEvent struct {
	up bool
	s  hdr.Session // a copy: the up session, or the one that went down
	v6 *lan6Event  // set for an IPv6 prefix event (then s is unused)
}

// lan6Event is the LAN's IPv6 prefix for IPv6Script.
type lan6Event struct {
	prefix, router, delegated string
	dns                       []string
}

type hooks struct {
	cfg     *Config
	logf    func(string, ...any)
	events  chan hookEvent
	done    chan struct{}
	timeout time.Duration // HookTimeout (tests shorten it)

	mu     sync.Mutex // publish vs close
	closed bool
	last   *hdr.Session // the last session published up (its down event reuses it)
	last6  *lan6Event   // the last IPv6 prefix published up
}

func newHooks(cfg *Config, logf func(string, ...any)) *hooks {
	if cfg.ResolvFile == "" && cfg.UpScript == "" && cfg.DownScript == "" && cfg.IPv6Script == "" {
		return nil
	}
	h := &hooks{cfg: cfg, logf: logf, events: make(chan hookEvent, HookQueue), done: make(chan struct{}), timeout: HookTimeout}
	go h.run()
	return h
}

// publish queues the hook work for a session change (nil: down).
func (h *hooks) publish(s *hdr.Session) {
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

// publish6 queues IPv6Script runs for the LAN's IPv6 prefix (nil: gone).
func (h *hooks) publish6(ev *lan6Event) {
	if h == nil || h.cfg.IPv6Script == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if ev != nil && h.last6 != nil && ev.prefix == h.last6.prefix && ev.delegated == h.last6.delegated &&
		strings.Join(ev.dns, " ") == strings.Join(h.last6.dns, " ") {
		return // nothing a script would see changed
	}
	if h.last6 != nil {
		select {
		case h.events <- hookEvent{v6: h.last6}:
			h.last6 = nil
		default:
			h.logf("pppfwd: hooks: %d events waiting, ipv6-down dropped", HookQueue)
			return
		}
	}
	if ev == nil {
		return
	}
	select {
	case h.events <- hookEvent{up: true, v6: ev}:
		h.last6 = ev
	default:
		h.logf("pppfwd: hooks: %d events waiting, ipv6-up dropped", HookQueue)
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
		if ev.v6 != nil {
			if err := h.runScript6(ev); err != nil {
				h.logf("pppfwd: %s: %v", h.cfg.IPv6Script, err)
			}
			continue
		}
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
	local, peer := addrString(ev.s.LocalAddr), addrString(ev.s.PeerAddr)
	dns1, dns2 := dnsString(ev.s.DNS[0]), dnsString(ev.s.DNS[1])
	event := "down"
	if ev.up {
		event = "up"
	}
	return h.exec(script, []string{h.cfg.WANInterface, "", "0", local, peer, ""}, []string{
		"PPPFWD_EVENT=" + event,
		"PPPFWD_WAN_INTERFACE=" + h.cfg.WANInterface,
		"PPPFWD_LOCAL=" + local, "PPPFWD_PEER=" + peer,
		"PPPFWD_DNS1=" + dns1, "PPPFWD_DNS2=" + dns2,
		"PPPFWD_SESSION_ID=" + strconv.Itoa(int(ev.s.ID)),
		"PPPFWD_MTU=" + strconv.Itoa(ev.s.MTU),
		"IPLOCAL=" + local, "IPREMOTE=" + peer, "DNS1=" + dns1, "DNS2=" + dns2,
	})
}

// runScript6 runs IPv6Script for a prefix event.
func (h *hooks) runScript6(ev hookEvent) error {
	event := "ipv6-down"
	if ev.up {
		event = "ipv6-up"
	}
	v := ev.v6
	return h.exec(h.cfg.IPv6Script, []string{event, v.prefix}, []string{
		"PPPFWD_EVENT=" + event,
		"PPPFWD_LAN_INTERFACE=" + h.cfg.LANInterface,
		"PPPFWD_LAN6_PREFIX=" + v.prefix, "PPPFWD_LAN6_ADDRESS=" + v.router,
		"PPPFWD_DELEGATED=" + v.delegated, "PPPFWD_DNS6=" + strings.Join(v.dns, " "),
	})
}

// exec runs script with args and a small environment (PATH and env).
func (h *hooks) exec(script string, args, env []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
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

// writeResolv replaces file with the servers' nameserver lines
// (writeFileAtomic: never through a symlink).
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

// errSymlink is writeFileAtomic's refusal of a destination that is a
// symlink.
var errSymlink = errors.New("is a symlink: pppfwd does not write through links (name the real file)")

// writeFileAtomic replaces file with data, mode 0644: a reader sees the
// old file or the new one whole. pppfwd runs as root and writes these
// files into directories other users may be able to write, so it never
// writes through a link there:
//
//   - A destination that is a symlink is refused (errSymlink) and left
//     as it is, as is anything else that is not a regular file.
//   - The data goes to a new temporary file in the same directory, opened
//     O_CREATE|O_EXCL|O_NOFOLLOW (never an existing file or a link),
//     chmod 0644 explicitly (whatever the umask), synced, then renamed
//     over file. rename replaces the directory entry, never what a link
//     points to, so a link put there after the check is replaced, not
//     followed. The directory is synced after the rename.
//   - Missing directories are made, 0755 explicitly, each opened
//     O_NOFOLLOW for its chmod. Links among the directories that already
//     exist are followed (/var/run -> /run): the directory path is the
//     administrator's.
func writeFileAtomic(file string, data []byte) error {
	dir := filepath.Dir(file)
	if err := mkdirAll(dir); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if fi, err := os.Lstat(file); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", file, errSymlink)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file", file)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s: sync directory: %w", file, err)
	}
	return nil
}

// createTemp creates a new file named .pppfwd-* in dir, O_EXCL|O_NOFOLLOW,
// mode 0600 until its caller sets it.
func createTemp(dir string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, ".pppfwd-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no unused temporary name in %s", dir)
}

// mkdirAll makes dir and its missing parents, each mode 0755 whatever
// the umask. A directory that exists is left as it is.
func mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if fi, serr := os.Stat(dir); errors.Is(err, fs.ErrExist) && serr == nil && fi.IsDir() {
			return nil // made meanwhile by someone else: theirs, left as it is
		}
		return err // a dangling link among the directories ends here too
	}
	// Set the mode through a descriptor of the directory just made: a
	// link swapped in for it makes the open fail instead of chmod-ing
	// whatever the link points to.
	d, err := os.OpenFile(dir, os.O_RDONLY|oNoFollow|oDirectory, 0)
	if err != nil {
		return err
	}
	err = d.Chmod(0o755)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
