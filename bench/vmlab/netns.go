package vmlab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
)

// Netns is a network namespace created with `ip netns add`, for the lab's
// taps and the pppfwd side of a test.
type Netns struct {
	Name string
}

var netnsSeq atomic.Int32

// NewNetns creates a namespace named <prefix><pid>-<n>, with lo up and IPv6
// disabled (so that the only traffic on a tap is what the test sends: no
// router solicitations or MLD reports in captures).
//
// Namespaces of the same prefix left behind by a process that no longer
// exists (a test binary that was killed) are deleted first.
func NewNetns(prefix string) (*Netns, error) {
	removeStaleNetns(prefix)
	name := fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), netnsSeq.Add(1))
	ctx := context.Background()
	if _, err := run(ctx, "", "ip", "netns", "add", name); err != nil {
		return nil, fmt.Errorf("vmlab: %w", err)
	}
	n := &Netns{Name: name}
	err := n.Do(func() error {
		for _, p := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+p+"/disable_ipv6", []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		_, err = run(ctx, "", "ip", "-n", name, "link", "set", "lo", "up")
	}
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("vmlab: setting up netns %s: %w", name, err)
	}
	return n, nil
}

// removeStaleNetns deletes <prefix><pid>-<n> namespaces whose pid is gone.
func removeStaleNetns(prefix string) {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidStr, seq, ok := strings.Cut(rest, "-")
		pid, err1 := strconv.Atoi(pidStr)
		_, err2 := strconv.Atoi(seq)
		if !ok || err1 != nil || err2 != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pidStr); errors.Is(err, fs.ErrNotExist) {
			_, _ = run(context.Background(), "", "ip", "netns", "del", e.Name())
		}
	}
}

// Command returns a command that runs inside the namespace.
func (n *Netns) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Run runs a command inside the namespace and returns its stdout.
func (n *Netns) Run(ctx context.Context, name string, args ...string) (string, error) {
	b, err := run(ctx, "", "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	return string(b), err
}

// Close deletes the namespace (processes still inside keep it alive until
// they exit).
func (n *Netns) Close() error {
	_, err := run(context.Background(), "", "ip", "netns", "del", n.Name)
	return err
}
