package abvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/bench/vmlab"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

// box is where the router under test runs: the lab VM (--where vm) or a
// network namespace of this host (--where host). Either way its LAN port
// guestLAN faces lanTap and its WAN port guestWAN faces wanTap in the
// lab's namespace, with the MACs vmlab.DefaultMAC(0) and (1). *vmlab.VM
// is one as it is.
type box interface {
	// Run and RunContext run a shell command in the box and return its
	// combined output; a non-zero exit is an error.
	Run(cmd string) (string, error)
	RunContext(ctx context.Context, cmd string) (string, error)
	// WriteFile writes a file where the box's commands read it.
	WriteFile(path string, data []byte, perm os.FileMode) error
	// ProcStat returns the per-CPU times of the CPUs the router under
	// test runs on, in a fixed order.
	ProcStat(ctx context.Context) ([]vmlab.CPUTimes, error)
	Close() error
}

// boxPaths are where the router under test's files are, as the box's
// commands name them.
type boxPaths struct {
	dir, shaped string // the unshaped and the shaped configuration
	binary      string // pppfwd
	log         string // pppfwd's output
	// pidFile is where the started pppfwd's pid is noted (""; pidof
	// finds it: the box runs no other pppfwd).
	pidFile string
	// kernelLog holds the kernel path's messages (pppd's).
	kernelLog string
	// socket is pppfwd's control socket ("": the default).
	socket string
	// etcPPP is a private copy of /etc/ppp bound over it for the box's
	// commands, so that run-ab.sh kernel adds its secrets there ("":
	// none: the VM's own).
	etcPPP string
}

// vmPaths are the guest's.
var vmPaths = boxPaths{dir: guestDir, shaped: guestShaped, binary: guestBinary, log: "/tmp/pppfwd.log", kernelLog: "/var/log/messages"}

// hostPaths are those under root of a host box running binary.
func hostPaths(root, binary string) boxPaths {
	return boxPaths{dir: filepath.Join(root, "ab"), shaped: filepath.Join(root, "abs"), binary: binary,
		log: filepath.Join(root, "pppfwd.log"), pidFile: filepath.Join(root, "pppfwd.pid"),
		kernelLog: filepath.Join(root, "pppd.log"), socket: filepath.Join(root, "pppfwd.sock"),
		etcPPP: filepath.Join(root, "etc-ppp")}
}

// adjust adds to a generated file what keeps a host box's state in its
// own directory: pppfwd's control socket and pppd's log. The VM's are
// left as generated.
func (p boxPaths) adjust(name, body string) string {
	if p.pidFile == "" {
		return body
	}
	switch name {
	case "pppfwd.conf":
		body += "\n# The A/B runs in a namespace of this host: its own control socket.\ncontrol.socket " + p.socket + "\n"
	case "pppd.peer":
		body += "# The A/B runs in a namespace of this host: its own log.\nlogfile " + p.kernelLog + "\n"
	}
	return body
}

// startPppfwd starts pppfwd in the background with dir's pppfwd.conf,
// its output written (or appended) to the log.
func (p boxPaths) startPppfwd(dir string, appendLog bool) string {
	redir := ">"
	if appendLog {
		redir = ">>"
	}
	note := ""
	if p.pidFile != "" {
		note = " echo $! >" + p.pidFile + ";"
	}
	return fmt.Sprintf("PPPFWD=%s sh %s/run-ab.sh pppfwd %s%s 2>&1 &%s", p.binary, dir, redir, p.log, note)
}

// stopPppfwd stops the running pppfwd and waits up to 10 s for it to exit.
func (p boxPaths) stopPppfwd() string {
	if p.pidFile == "" {
		return "kill $(pidof pppfwd); i=0; while pidof pppfwd >/dev/null; do i=$((i+1)); [ $i -le 100 ] || exit 1; sleep 0.1; done; "
	}
	pid := "$(cat " + p.pidFile + ")"
	return "kill " + pid + "; i=0; while kill -0 " + pid + " 2>/dev/null; do i=$((i+1)); [ $i -le 100 ] || exit 1; sleep 0.1; done; "
}

// status runs pppfwd status.
func (p boxPaths) status() string {
	if p.socket == "" {
		return p.binary + " status"
	}
	return p.binary + " status -s " + p.socket
}

// hostBox is a network namespace of this host holding the router under
// test: guestLAN and guestWAN are veth ends whose peers are lanTap and
// wanTap in the lab's namespace. Its commands run in the namespace (ip
// netns exec), pinned to its CPUs when they were given; its files are
// under a directory of this host; its per-CPU times are this host's, of
// its CPUs.
type hostBox struct {
	lab    *nettest.Lab
	ns     *nettest.NS
	root   string // the box's files (boxPaths under it)
	paths  boxPaths
	cpus   []int
	pin    bool // run the commands under taskset -c cpus
	bindPP bool // bind paths.etcPPP over /etc/ppp
}

// hostBoxConfig configure openHostBox.
type hostBoxConfig struct {
	Lab   *nettest.NS // the lab's namespace (lanTap, wanTap)
	Root  string      // the box's directory (emptied first)
	Paths boxPaths
	Files []vmlab.ExtraFile // written under Root (Body only)
	// CPUs run the router under test: RPS of its ports steers their
	// receive work there and, with Pin, its commands run there.
	CPUs []int
	Pin  bool
	// GenCPU, if >= 0, takes the receive work of the lab's ends
	// (the generator's and the end hosts' side).
	GenCPU int
	// Kernel: the kernel path may run (a private /etc/ppp is made).
	Kernel bool
}

// openHostBox makes the namespace, its veth pairs and files.
func openHostBox(c hostBoxConfig) (_ *hostBox, err error) {
	if err := os.RemoveAll(c.Root); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Root, 0o700); err != nil {
		return nil, err
	}
	lab := nettest.New()
	h := &hostBox{lab: lab, root: c.Root, paths: c.Paths, cpus: c.CPUs, pin: c.Pin}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if h.ns, err = lab.NewNS("abrt"); err != nil {
		return nil, err
	}
	for i, p := range []struct{ in, out string }{{guestLAN, lanTap}, {guestWAN, wanTap}} {
		// Made inside the namespace: this host's own namespace may have
		// an eth0 already. Deleting the namespace deletes the pair.
		if _, err := h.ns.Exec("ip", "link", "add", "name", p.in, "type", "veth", "peer", "name", p.out, "netns", c.Lab.Name); err != nil {
			return nil, err
		}
		if err := h.ns.SetUp(p.in); err != nil {
			return nil, err
		}
		if err := c.Lab.SetUp(p.out); err != nil {
			return nil, err
		}
		mac := vmlab.DefaultMAC(i)
		if err := h.ns.SetMAC(p.in, fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])); err != nil {
			return nil, err
		}
		if err := h.ns.DisableOffloads(p.in); err != nil {
			return nil, err
		}
		// No IPv6 on the ports, as in the VM: the wire carries only
		// what the A/B sends (a kernel without IPv6 has none anyway).
		_ = h.ns.Sysctl("net.ipv6.conf."+p.in+".disable_ipv6", "1")
		// On veth a frame's receive work runs on the CPU that sent it:
		// RPS puts the router's on its CPUs, as a NIC's queues would.
		if err := setRPS(h.ns, p.in, c.CPUs); err != nil {
			return nil, err
		}
		if c.GenCPU >= 0 {
			if err := setRPS(c.Lab, p.out, []int{c.GenCPU}); err != nil {
				return nil, err
			}
		}
	}
	if c.Kernel {
		if fi, err := os.Stat("/etc/ppp"); err == nil && fi.IsDir() {
			// run-ab.sh kernel adds its secrets to /etc/ppp: to a copy.
			if err := os.MkdirAll(c.Paths.etcPPP, 0o700); err != nil {
				return nil, err
			}
			if out, err := exec.Command("cp", "-a", "/etc/ppp/.", c.Paths.etcPPP+"/").CombinedOutput(); err != nil {
				return nil, fmt.Errorf("copying /etc/ppp: %v: %s", err, out)
			}
			h.bindPP = true
		}
	}
	for _, f := range c.Files {
		if err := h.WriteFile(f.Path, f.Body, f.Mode); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// setRPS steers the receive work of ns's port ifname to cpus.
func setRPS(ns *nettest.NS, ifname string, cpus []int) error {
	// ip netns exec mounts the namespace's own sysfs.
	path := "/sys/class/net/" + ifname + "/queues/rx-0/rps_cpus"
	if _, err := ns.Exec("sh", "-c", "echo "+cpuMask(cpus)+" >"+path); err != nil {
		return fmt.Errorf("RPS of %s: %w", ifname, err)
	}
	return nil
}

// Run is RunContext within a minute.
func (h *hostBox) Run(cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return h.RunContext(ctx, cmd)
}

// RunContext runs cmd under sh in the namespace. Programs it starts in
// the background (pppd, pppfwd) stay until Close.
func (h *hostBox) RunContext(ctx context.Context, cmd string) (string, error) {
	script := cmd
	if h.bindPP {
		// ip netns exec gives each command a mount namespace of its
		// own: the binding is the command's and its children's.
		script = "mount --bind " + h.paths.etcPPP + " /etc/ppp || exit 1; " + cmd
	}
	args := []string{"sh", "-c", script}
	if h.pin {
		args = append([]string{"taskset", "-c", cpuList(h.cpus)}, args...)
	}
	c := h.ns.Command(ctx, args[0], args[1:]...)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	// A daemon that kept the output open would hold Wait.
	c.WaitDelay = 5 * time.Second
	err := c.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	o := strings.TrimSuffix(out.String(), "\n")
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return o, fmt.Errorf("%q in the router's namespace: %w", cmd, err)
	}
	return o, nil
}

// WriteFile writes path (its directory created mode 0700) with perm.
func (h *hostBox) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm.Perm())
	if err != nil {
		return err
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ProcStat returns this host's per-CPU times of the box's CPUs.
func (h *hostBox) ProcStat(ctx context.Context) ([]vmlab.CPUTimes, error) {
	all, err := hostStat()
	if err != nil {
		return nil, err
	}
	return pickCPUs(all, h.cpus)
}

// Close ends every process in the namespace (SIGTERM, SIGKILL after
// 5 s), then removes the namespace, its veth pairs and the box's files.
func (h *hostBox) Close() error {
	if h.ns != nil {
		h.killAll()
	}
	err := h.lab.Close()
	os.RemoveAll(h.root)
	return err
}

func (h *hostBox) killAll() {
	pids := func() []int {
		out, err := exec.Command("ip", "netns", "pids", h.ns.Name).Output()
		if err != nil {
			return nil
		}
		var ps []int
		for _, f := range strings.Fields(string(out)) {
			if p, err := strconv.Atoi(f); err == nil && p != os.Getpid() {
				ps = append(ps, p)
			}
		}
		return ps
	}
	sig := syscall.SIGTERM
	for deadline := time.Now().Add(5 * time.Second); ; {
		ps := pids()
		if len(ps) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sig = syscall.SIGKILL
		}
		for _, p := range ps {
			_ = syscall.Kill(p, sig)
		}
		if sig == syscall.SIGKILL {
			return
		}
		sig = 0 // after the first SIGTERM: poll until gone or the deadline
		time.Sleep(100 * time.Millisecond)
	}
}

// pickCPUs returns the times of cpus, in cpus' order.
func pickCPUs(all []vmlab.CPUTimes, cpus []int) ([]vmlab.CPUTimes, error) {
	out := make([]vmlab.CPUTimes, 0, len(cpus))
	for _, c := range cpus {
		i := slices.IndexFunc(all, func(t vmlab.CPUTimes) bool { return t.CPU == c })
		if i < 0 {
			return nil, fmt.Errorf("abvm: CPU %d is not in /proc/stat (offline?)", c)
		}
		out = append(out, all[i])
	}
	return out, nil
}
