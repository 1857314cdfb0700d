//go:build !linux

package nettest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"

	"github.com/pppfwd/pppfwd/nic"
)

var errOS = fmt.Errorf("nettest: network namespaces not supported on %s: %w", runtime.GOOS, nic.ErrNotSupported)

// Lab is not supported on this GOOS: every method returns an error.
type Lab struct{}

// New returns a Lab whose methods all fail on this GOOS.
func New() *Lab { return &Lab{} }

// Prefix returns "".
func (l *Lab) Prefix() string { return "" }

// Close does nothing.
func (l *Lab) Close() error { return nil }

// NS is not supported on this GOOS.
type NS struct{ Name string }

// Root returns a namespace handle whose methods fail.
func (l *Lab) Root() *NS { return &NS{} }

// NewNS fails on this GOOS.
func (l *Lab) NewNS(name string) (*NS, error) { return nil, errOS }

// Veth fails on this GOOS.
func (l *Lab) Veth(a string, nsA *NS, b string, nsB *NS, queues int) error { return errOS }

// NewLine fails on this GOOS.
func (l *Lab) NewLine(cfg LineConfig) (*Line, error) { return nil, errOS }

// Masquerade fails on this GOOS.
func (ln *Line) Masquerade() error { return errOS }

// Do fails on this GOOS.
func (ns *NS) Do(fn func() error) error { return errOS }

// Exec fails on this GOOS.
func (ns *NS) Exec(name string, args ...string) (string, error) { return "", errOS }

// ExecInput fails on this GOOS.
func (ns *NS) ExecInput(stdin []byte, name string, args ...string) (string, error) {
	return "", errOS
}

// Start fails on this GOOS.
func (ns *NS) Start(name string, args ...string) (*exec.Cmd, error) { return nil, errOS }

// Command returns a command whose Start fails on this GOOS.
func (ns *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Err = errOS
	return cmd
}

// AddTap fails on this GOOS.
func (ns *NS) AddTap(name string) error { return errOS }

// DelLink fails on this GOOS.
func (ns *NS) DelLink(ifname string) error { return errOS }

// DisableIPv6 fails on this GOOS.
func (ns *NS) DisableIPv6() error { return errOS }

// SetUp fails on this GOOS.
func (ns *NS) SetUp(ifname string) error { return errOS }

// SetMTU fails on this GOOS.
func (ns *NS) SetMTU(ifname string, mtu int) error { return errOS }

// SetMAC fails on this GOOS.
func (ns *NS) SetMAC(ifname, mac string) error { return errOS }

// AddAddr fails on this GOOS.
func (ns *NS) AddAddr(ifname string, p netip.Prefix) error { return errOS }

// AddRoute fails on this GOOS.
func (ns *NS) AddRoute(dst string, via netip.Addr) error { return errOS }

// AddNeigh fails on this GOOS.
func (ns *NS) AddNeigh(ifname string, ip netip.Addr, mac string) error { return errOS }

// Interface fails on this GOOS.
func (ns *NS) Interface(ifname string) (*net.Interface, error) { return nil, errOS }

// MAC fails on this GOOS.
func (ns *NS) MAC(ifname string) (string, error) { return "", errOS }

// SetFeature fails on this GOOS.
func (ns *NS) SetFeature(ifname, feature string, on bool) error { return errOS }

// Feature fails on this GOOS.
func (ns *NS) Feature(ifname, feature string) (bool, error) { return false, errOS }

// DisableOffloads fails on this GOOS.
func (ns *NS) DisableOffloads(ifname string) error { return errOS }

// Sysctl fails on this GOOS.
func (ns *NS) Sysctl(key, value string) error { return errOS }

// ReadSysctl fails on this GOOS.
func (ns *NS) ReadSysctl(key string) (string, error) { return "", errOS }

// EnableForwarding fails on this GOOS.
func (ns *NS) EnableForwarding() error { return errOS }

// LoadNft fails on this GOOS.
func (ns *NS) LoadNft(ruleset string) error { return errOS }
