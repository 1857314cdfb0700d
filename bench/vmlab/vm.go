package vmlab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// NIC is one virtio-net interface of the VM (eth0, eth1, ... in order)
// attached to a tap device in Options.Netns.
type NIC struct {
	// Tap is the tap device's name in the namespace. Start creates it
	// (and Close deletes it) unless it already exists.
	Tap string
	// MAC is the guest interface's address; zero picks DefaultMAC.
	MAC [6]byte
}

// DefaultMAC is the MAC of the guest's i-th NIC when NIC.MAC is zero:
// 52:54:00:12:34:56 for eth0, ...:57 for eth1.
func DefaultMAC(i int) [6]byte { return [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, byte(0x56 + i)} }

// Options configure Start. Only Netns is required.
type Options struct {
	// Netns is the network namespace that holds the taps; qemu runs
	// inside it. Tests make one with nettest.NewLab(t).NewNS and
	// DisableIPv6 on it, so that a tap carries only what the test sends.
	Netns *nettest.NS
	// NICs default to one NIC on tap "vmtap0".
	NICs []NIC
	// CacheDir holds the image ("" = DefaultCacheDir). The image is built
	// on first use.
	CacheDir string
	// MemoryMB is the guest RAM (default 384). The initramfs, unpacked,
	// lives in it, Extra files included.
	MemoryMB int
	// VCPUs is the number of guest CPUs (default 1). Under TCG each vCPU
	// is a host thread.
	VCPUs int
	// Extra files are added to the guest's root file system at boot (a
	// second initramfs archive after the cached image's), e.g. a static
	// pppfwd binary; the image itself is not rebuilt.
	Extra []ExtraFile
	// BootTimeout bounds the boot up to the command loop (default 90 s;
	// a TCG boot takes about 5 s on an idle machine).
	BootTimeout time.Duration
	// CmdTimeout bounds each Run (default 60 s); RunContext takes a ctx.
	CmdTimeout time.Duration
	// Logf receives progress lines (e.g. t.Logf); nil discards them.
	Logf func(format string, args ...any)
}

// VM is a running lab VM. Run and RunContext may be called from several
// goroutines; commands execute one at a time.
type VM struct {
	opts    Options
	Image   *Image
	dir     string
	cmd     *exec.Cmd
	ln      net.Listener
	conn    net.Conn
	rd      *bufio.Reader
	mu      sync.Mutex // serialises commands
	seq     int
	nonce   string
	ownTaps []string
	exited  chan struct{}
	waitErr error
	closeMu sync.Mutex
	closed  bool
}

// CmdError is returned by Run when the command exits non-zero.
type CmdError struct {
	Cmd    string
	Status int
	Output string
}

func (e *CmdError) Error() string {
	out := strings.TrimSpace(e.Output)
	if len(out) > 2000 {
		out = "..." + out[len(out)-2000:]
	}
	return fmt.Sprintf("vmlab: %q exited %d: %s", e.Cmd, e.Status, out)
}

// Start builds (or loads) the image, creates the taps and boots the VM, and
// returns once the guest's command loop answers. ctx bounds the whole boot.
func Start(ctx context.Context, opts Options) (*VM, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Netns == nil || opts.Netns.Name == "" {
		return nil, errors.New("vmlab: Options.Netns must be a namespace of its own")
	}
	if len(opts.NICs) == 0 {
		opts.NICs = []NIC{{Tap: "vmtap0"}}
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 384
	}
	if opts.VCPUs == 0 {
		opts.VCPUs = 1
	}
	if opts.MemoryMB < 0 || opts.VCPUs < 0 {
		return nil, fmt.Errorf("vmlab: MemoryMB %d and VCPUs %d must not be negative", opts.MemoryMB, opts.VCPUs)
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 90 * time.Second
	}
	if opts.CmdTimeout == 0 {
		opts.CmdTimeout = 60 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	img, err := BuildImage(ctx, opts.CacheDir, opts.Logf)
	if err != nil {
		return nil, err
	}
	v := &VM{opts: opts, Image: img, exited: make(chan struct{})}
	v.nonce = strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if err := v.start(ctx); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

func (v *VM) start(ctx context.Context) error {
	var err error
	if v.dir, err = os.MkdirTemp("", "vmlab-"); err != nil {
		return err
	}
	sock := filepath.Join(v.dir, "ctl.sock")
	if v.ln, err = net.Listen("unix", sock); err != nil {
		return err
	}
	initrd := v.Image.Initramfs
	if len(v.opts.Extra) > 0 {
		initrd = filepath.Join(v.dir, "initrd")
		if err := writeInitrd(initrd, v.Image.Initramfs, v.opts.Extra); err != nil {
			return err
		}
	}
	args := []string{"-accel", "tcg", "-m", strconv.Itoa(v.opts.MemoryMB), "-smp", strconv.Itoa(v.opts.VCPUs),
		"-display", "none", "-nodefaults", "-no-reboot", "-no-user-config",
		"-kernel", v.Image.Kernel, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 quiet loglevel=4",
		"-chardev", "file,id=con,path=" + filepath.Join(v.dir, "console.log"),
		"-serial", "chardev:con",
		"-chardev", "socket,id=ctl,path=" + sock,
		"-serial", "chardev:ctl",
	}
	for i, n := range v.opts.NICs {
		if err := v.ensureTap(n.Tap); err != nil {
			return err
		}
		mac := n.MAC
		if mac == ([6]byte{}) {
			mac = DefaultMAC(i)
		}
		args = append(args,
			"-netdev", fmt.Sprintf("tap,id=n%d,ifname=%s,script=no,downscript=no", i, n.Tap),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=n%d,mac=%s,romfile=", i, net.HardwareAddr(mac[:])))
	}
	// The VM outlives ctx (it bounds the boot only); qemu dies with the
	// thread that started it (see nettest.NS.Command).
	v.cmd = v.opts.Netns.Command(context.Background(), "qemu-system-x86_64", args...)
	var qout bytes.Buffer
	v.cmd.Stdout, v.cmd.Stderr = &qout, &qout
	v.opts.Logf("vmlab: booting kernel %s in netns %s", v.Image.KernelVersion, v.opts.Netns.Name)
	if err := v.cmd.Start(); err != nil {
		return fmt.Errorf("vmlab: starting qemu: %w", err)
	}
	go func() {
		v.waitErr = v.cmd.Wait()
		close(v.exited)
	}()

	boot, cancel := context.WithTimeout(ctx, v.opts.BootTimeout)
	defer cancel()
	type acceptResult struct {
		c   net.Conn
		err error
	}
	accepted := make(chan acceptResult, 1) // Close's ln.Close ends a pending Accept
	go func() {
		c, err := v.ln.Accept()
		accepted <- acceptResult{c, err}
	}()
	select {
	case a := <-accepted:
		if a.err != nil {
			return a.err
		}
		v.conn = a.c
	case <-v.exited:
		return fmt.Errorf("vmlab: qemu exited: %v: %s", v.waitErr, qout.String())
	case <-boot.Done():
		return fmt.Errorf("vmlab: qemu did not connect its control port: %w", boot.Err())
	}
	v.rd = bufio.NewReaderSize(v.conn, 1<<16)
	t0 := time.Now()
	if err := v.readUntil(boot, "@@VMLAB-READY@@", nil); err != nil {
		return fmt.Errorf("vmlab: boot: %w; console:\n%s", err, tail(v.Console(), 3000))
	}
	v.opts.Logf("vmlab: guest ready after %v", time.Since(t0).Round(time.Millisecond))
	return nil
}

// ensureTap creates the tap (up) unless it exists, else brings it up.
func (v *VM) ensureTap(tap string) error {
	ns := v.opts.Netns
	if _, err := ns.Interface(tap); err == nil {
		if err := ns.SetUp(tap); err != nil {
			return fmt.Errorf("vmlab: %w", err)
		}
		return nil
	}
	if err := ns.AddTap(tap); err != nil {
		return fmt.Errorf("vmlab: %w", err)
	}
	v.ownTaps = append(v.ownTaps, tap)
	return nil
}

// readUntil reads lines until one equals marker; lines before it are
// appended to out (if non-nil). The context bounds the wait.
func (v *VM) readUntil(ctx context.Context, marker string, out *bytes.Buffer) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = v.conn.SetReadDeadline(dl)
	} else {
		_ = v.conn.SetReadDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = v.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		line, err := v.rd.ReadBytes('\n')
		if err != nil {
			if out != nil {
				out.Write(line)
			}
			if cerr := ctxErr(ctx); cerr != nil {
				return cerr
			}
			select {
			case <-v.exited:
				return fmt.Errorf("qemu exited (%v) while waiting for %s", v.waitErr, marker)
			default:
			}
			return err
		}
		if string(bytes.TrimRight(line, "\r\n")) == marker {
			return nil
		}
		if out != nil {
			out.Write(line)
		}
	}
}

// Run runs cmd under bash in the VM and returns its combined stdout and
// stderr, within Options.CmdTimeout. A non-zero exit returns the output and
// a *CmdError. Start long-running programs in the background
// (`pppoe-server ... &`, or daemons that fork).
func (v *VM) Run(cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), v.opts.CmdTimeout)
	defer cancel()
	return v.RunContext(ctx, cmd)
}

// RunContext is Run bounded by ctx. If ctx ends first the command keeps
// running in the guest; its output is skipped by the next command.
func (v *VM) RunContext(ctx context.Context, cmd string) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		return "", errors.New("vmlab: VM not running")
	}
	v.seq++
	id := fmt.Sprintf("%s%d", v.nonce, v.seq)
	line := id + " " + base64.StdEncoding.EncodeToString([]byte(cmd)) + "\n"
	if dl, ok := ctx.Deadline(); ok {
		_ = v.conn.SetWriteDeadline(dl)
	}
	if _, err := v.conn.Write([]byte(line)); err != nil {
		return "", fmt.Errorf("vmlab: sending %q: %w", cmd, err)
	}
	if err := v.readUntil(ctx, "@@VMLAB-BEGIN "+id+"@@", nil); err != nil {
		return "", fmt.Errorf("vmlab: %q: %w", cmd, err)
	}
	var out bytes.Buffer
	prefix := "@@VMLAB-END " + id + " "
	if dl, ok := ctx.Deadline(); ok {
		_ = v.conn.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = v.conn.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		l, err := v.rd.ReadBytes('\n')
		if err != nil {
			out.Write(l)
			if cerr := ctxErr(ctx); cerr != nil {
				err = cerr
			}
			return out.String(), fmt.Errorf("vmlab: %q: %w", cmd, err)
		}
		s := strings.TrimRight(string(l), "\r\n")
		if rest, ok := strings.CutPrefix(s, prefix); ok && strings.HasSuffix(rest, "@@") {
			rc, err := strconv.Atoi(strings.TrimSuffix(rest, "@@"))
			if err != nil {
				return out.String(), fmt.Errorf("vmlab: bad end marker %q", s)
			}
			o := strings.TrimSuffix(out.String(), "\n") // the guest adds one
			if rc != 0 {
				return o, &CmdError{Cmd: cmd, Status: rc, Output: o}
			}
			return o, nil
		}
		out.Write(l)
	}
}

// Console returns the guest's kernel console (ttyS0) so far.
func (v *VM) Console() string {
	if v.dir == "" {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(v.dir, "console.log"))
	return string(b)
}

// Dir is the VM's private runtime directory on the host (control socket,
// console log, the initramfs with Options.Extra); it is removed by Close.
func (v *VM) Dir() string { return v.dir }

// Close stops qemu (SIGTERM, then SIGKILL after 5 s), deletes the taps
// Start created and the runtime directory. It is safe to call twice.
func (v *VM) Close() error {
	v.closeMu.Lock()
	defer v.closeMu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	if v.conn != nil {
		v.conn.Close()
	}
	if v.ln != nil {
		v.ln.Close()
	}
	var err error
	if v.cmd != nil && v.cmd.Process != nil {
		terminate(v.cmd.Process, v.exited)
	}
	for _, tap := range v.ownTaps {
		if e := v.opts.Netns.DelLink(tap); e != nil && err == nil {
			err = e
		}
	}
	if v.dir != "" {
		os.RemoveAll(v.dir)
	}
	return err
}

// ctxErr is ctx.Err(), also when the connection's deadline (set from ctx)
// fired a moment before ctx's own timer.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Available reports why the lab cannot run here, or nil: it needs Linux,
// root, /dev/net/tun, qemu-system-x86_64 and ip, and either a cached image
// or apt-get and dpkg-deb to build one (scripts/vmlab-deps.sh).
func Available() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("vmlab: not supported on %s (needs Linux netns and tap)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("vmlab: needs root (network namespaces, tap devices)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("vmlab: no tap support: %w", err)
	}
	need := []string{"qemu-system-x86_64", "ip"}
	if _, err := LoadImage(""); err != nil {
		need = append(need, "apt-get", "apt-cache", "dpkg-deb")
	}
	for _, c := range need {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("vmlab: %s not found (run scripts/vmlab-deps.sh): %w", c, err)
		}
	}
	return nil
}

// WriteFile writes data to path in the guest (parents created) with the
// given permission bits.
func (v *VM) WriteFile(path string, data []byte, perm os.FileMode) error {
	q := shellQuote(path)
	b64 := base64.StdEncoding.EncodeToString(data)
	cmd := fmt.Sprintf("mkdir -p \"$(dirname %s)\" && : >%s.b64", q, q)
	if _, err := v.Run(cmd); err != nil {
		return err
	}
	const chunk = 3000 // keeps each command line small
	for len(b64) > 0 {
		n := min(chunk, len(b64))
		if _, err := v.Run(fmt.Sprintf("printf '%%s' '%s' >>%s.b64", b64[:n], q)); err != nil {
			return err
		}
		b64 = b64[n:]
	}
	_, err := v.Run(fmt.Sprintf("base64 -d <%s.b64 >%s && rm %s.b64 && chmod %o %s", q, q, q, perm.Perm(), q))
	return err
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
