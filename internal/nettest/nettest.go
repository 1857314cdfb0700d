package nettest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// RequireRoot skips the test unless it runs as root on Linux.
func RequireRoot(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("network namespaces need Linux, running on %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN for namespaces, CAP_NET_RAW for packet sockets)")
	}
}

// RequireCmd skips the test unless the named command is in $PATH.
func RequireCmd(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("needs the %q command: %v", name, err)
	}
}

// NewLab returns a Lab whose Close runs on t.Cleanup. It skips the test when
// not root or `ip` is missing, and fails it when the lab cannot be created.
func NewLab(t testing.TB) *Lab {
	t.Helper()
	RequireRoot(t)
	RequireCmd(t, "ip")
	l := New()
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("nettest cleanup: %v", err)
		}
	})
	return l
}

// LineConfig describes a Line. Zero values pick the defaults shown.
type LineConfig struct {
	// Routed gives the router namespace addresses on both sides, enables
	// IPv4 forwarding there and puts A and B in different subnets
	// (A 10.77.1.2/24 via 10.77.1.1, B 10.77.2.2/24 via 10.77.2.1). When
	// false, A (10.77.0.1/24) and B (10.77.0.2/24) share one subnet and the
	// router namespace carries no addresses: something must bridge frames
	// between RA and RB (an L2 forwarder under test).
	Routed bool
	// MTU of all four veth ends (default 1500).
	MTU int
	// KeepOffloads leaves GRO/TSO/GSO and tx checksumming as the kernel
	// set them. By default they are switched off on every end so that no
	// superframes travel and every frame carries a finished L4 checksum
	// (a packet-socket forwarder cannot finish CHECKSUM_PARTIAL frames).
	KeepOffloads bool
	// IPv6 keeps IPv6 on. By default it is disabled in the three
	// namespaces so that the links carry no ND, MLD or router
	// solicitations: only what a test sends.
	IPv6 bool
	// Queues is the number of RX and TX queues of each veth (default 1).
	Queues int
}

// Line is the topology every forwarding test uses:
//
//	A [AIf] <--veth--> [RA] R [RB] <--veth--> [BIf] B
//
// A and B are end hosts; R is where the forwarder under test (or the
// kernel) runs.
type Line struct {
	A, R, B            *NS
	AIf, RA, RB, BIf   string
	AAddr, BAddr       netip.Prefix // the end hosts' addresses
	RAAddr, RBAddr     netip.Prefix // router addresses (Routed only)
	AMAC, RAMAC, RBMAC string
	BMAC               string
	cfg                LineConfig
}

func (c *LineConfig) defaults() {
	if c.MTU == 0 {
		c.MTU = 1500
	}
	if c.Queues == 0 {
		c.Queues = 1
	}
}

// MustLine builds a Line in a new Lab tied to t, failing the test on error.
func MustLine(t testing.TB, cfg LineConfig) *Line {
	t.Helper()
	l := NewLab(t)
	ln, err := l.NewLine(cfg)
	if err != nil {
		t.Fatalf("nettest: %v", err)
	}
	return ln
}

func errorf(format string, args ...any) error { return fmt.Errorf("nettest: "+format, args...) }
