package ifmtu

import (
	"errors"
	"syscall"
	"testing"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationSetMax: on a veth in a namespace, Set changes what Get
// reads, Max reads the driver's limit (veth: 65535) and Set above it
// fails with EINVAL; an unknown interface is an error.
func TestIntegrationSetMax(t *testing.T) {
	lab := nettest.NewLab(t)
	ns, err := lab.NewNS("ifmtu")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth("a0", ns, "b0", ns, 1); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		if m, err := Get("a0"); err != nil || m != 1500 {
			t.Errorf("Get: %d %v, want 1500", m, err)
		}
		if err := Set("a0", 1512); err != nil {
			t.Errorf("Set 1512: %v", err)
		}
		if m, err := Get("a0"); err != nil || m != 1512 {
			t.Errorf("Get after Set: %d %v, want 1512", m, err)
		}
		max, err := Max("a0")
		if err != nil || max != 65535 {
			t.Errorf("Max: %d %v, want 65535", max, err)
		}
		if err := Set("a0", max+1); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("Set above the maximum: %v, want EINVAL", err)
		}
		if _, err := Max("nosuch0"); err == nil {
			t.Error("Max of a missing interface: no error")
		}
		if err := Set("nosuch0", 1500); err == nil {
			t.Error("Set of a missing interface: no error")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
