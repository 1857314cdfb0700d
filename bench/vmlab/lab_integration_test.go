package vmlab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
)

// requireLab skips the test with the reason when the lab cannot run here.
// In CI (.ci/run sets CI) a missing tool fails the test instead:
// scripts/deps.sh installs them all.
func requireLab(t *testing.T, capture bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("vmlab: boots a VM; skipped in -short mode")
	}
	skip := func(err error) {
		t.Helper()
		if errors.Is(err, exec.ErrNotFound) && os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err := Available(); err != nil {
		skip(err)
	}
	if capture {
		if err := CaptureAvailable(); err != nil {
			skip(err)
		}
	}
}

// newLab creates a namespace (IPv6 off: the tap carries only what the test
// sends) and boots a VM with one NIC on tap "vmtap0" there; both are
// removed at cleanup.
func newLab(t *testing.T) (*nettest.NS, *VM) {
	t.Helper()
	return newLabWith(t, Options{})
}

// newLabWith is newLab with opts (Netns and Logf are set here).
func newLabWith(t *testing.T, opts Options) (*nettest.NS, *VM) {
	t.Helper()
	ns, err := nettest.NewLab(t).NewNS("vmlab")
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.DisableIPv6(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts.Netns, opts.Logf = ns, t.Logf
	vm, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := vm.Run("tail -n 60 /var/log/messages; ls /var/log"); err == nil {
				t.Logf("guest syslog:\n%s", out)
			}
			t.Logf("guest console:\n%s", tail(vm.Console(), 4000))
		}
		if err := vm.Close(); err != nil {
			t.Errorf("vm close: %v", err)
		}
	})
	return ns, vm
}

// startCapture captures on the tap; at cleanup the pcap is decoded and any
// malformed or undissected frame fails the test. It returns the pcap's path.
func startCapture(t *testing.T, ns *nettest.NS, tap string, check func(*PcapReport)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capture.pcap")
	c, err := StartCapture(context.Background(), ns, tap, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		r, err := DecodePcap(context.Background(), path)
		if err != nil {
			t.Errorf("decoding capture: %v", err)
			return
		}
		t.Logf("capture %s", r)
		if len(r.Problems) > 0 {
			t.Errorf("capture has malformed or unknown frames:\n%s", strings.Join(r.Problems, "\n"))
		}
		if check != nil {
			check(r)
		}
		// VMLAB_PCAP_DIR keeps every capture (e.g. as CI artifacts).
		if dir := os.Getenv("VMLAB_PCAP_DIR"); dir != "" {
			b, _ := os.ReadFile(path)
			name := strings.ReplaceAll(t.Name(), "/", "_") + ".pcap"
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Errorf("keeping capture: %v", err)
			}
		}
	})
	return path
}

// openRaw opens a raw frame socket on ifname inside ns.
func openRaw(t *testing.T, ns *nettest.NS, ifname string, ethertypes ...uint16) *rawsock.Conn {
	t.Helper()
	var c *rawsock.Conn
	err := ns.Do(func() error {
		var err error
		c, err = rawsock.Open(ifname, ethertypes...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pppoeTag finds a discovery tag in a PPPoE discovery frame (no VLAN).
func pppoeTag(frame []byte, typ uint16) ([]byte, bool) {
	if len(frame) < 20 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(frame[18:20]))
	tags := frame[20:]
	if n > len(tags) {
		return nil, false
	}
	tags = tags[:n]
	for len(tags) >= 4 {
		t, l := binary.BigEndian.Uint16(tags), int(binary.BigEndian.Uint16(tags[2:]))
		if 4+l > len(tags) {
			return nil, false
		}
		if t == typ {
			return tags[4 : 4+l], true
		}
		tags = tags[4+l:]
	}
	return nil, false
}

// countFrames counts the frames of the capture at path matching a tshark
// display filter.
func countFrames(t *testing.T, path, filter string) int {
	t.Helper()
	n, err := CountFrames(context.Background(), path, filter)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIntegrationVMLab boots the lab, checks that the PPP modules loaded and
// that rp-pppoe's pppoe-server answers a PADI sent from the namespace with
// a PADO carrying its AC-Name; the capture must decode cleanly.
func TestIntegrationVMLab(t *testing.T) {
	requireLab(t, true)
	t0 := time.Now()
	ns, vm := newLab(t)
	t.Logf("boot took %v", time.Since(t0).Round(time.Millisecond))
	pcap := startCapture(t, ns, "vmtap0", func(r *PcapReport) {
		if r.Protocols["pppoed"] < 2 || r.Frames != r.Protocols["pppoed"] {
			t.Errorf("capture: want only PADI and PADO frames, got %s", r)
		}
	})

	out, err := vm.Run("cat /vmlab/modules.log; lsmod")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "FAILED") {
		t.Errorf("module load failed:\n%s", out)
	}
	for _, m := range []string{"ppp_generic", "pppoe", "pppox", "ppp_async", "slhc", "virtio_net"} {
		if !strings.Contains(out, "\n"+m+" ") {
			t.Errorf("module %s not loaded; lsmod:\n%s", m, out)
		}
	}
	for _, c := range []string{"test -c /dev/ppp", "test -c /dev/ptmx && grep -q ' /dev/pts devpts ' /proc/mounts",
		"pppd --version", "test -x /usr/sbin/pppoe-server", "test -e /usr/lib/pppd/2.4.9/rp-pppoe.so",
		"ip link show eth0 | grep -q 52:54:00:12:34:56"} {
		if out, err := vm.Run(c); err != nil {
			t.Errorf("%s: %v (%s)", c, err, out)
		}
	}

	if _, err := vm.Run("pppoe-server -I eth0 -C vmlab-ac -S isp -L 10.99.0.1 -R 10.99.0.10 -N 4"); err != nil {
		t.Fatal(err)
	}
	if out, err := vm.Run("sleep 0.5; pidof pppoe-server"); err != nil {
		t.Fatalf("pppoe-server not running: %v %s", err, out)
	}

	conn := openRaw(t, ns, "vmtap0", 0x8863)
	mac := conn.HardwareAddr()
	// PADI: dst ff:ff:ff:ff:ff:ff, EtherType 0x8863, ver/type 0x11,
	// code 0x09 (PADI), session 0, length 4, tag Service-Name "" (0x0101).
	padi := append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, mac[:]...)
	padi = append(padi, 0x88, 0x63, 0x11, 0x09, 0x00, 0x00, 0x00, 0x04, 0x01, 0x01, 0x00, 0x00)
	var acName []byte
	buf := make([]byte, 2048)
	deadline := time.Now().Add(30 * time.Second)
	for acName == nil && time.Now().Before(deadline) {
		if err := conn.WriteFrame(padi); err != nil {
			t.Fatal(err)
		}
		until := time.Now().Add(2 * time.Second)
		for time.Now().Before(until) {
			n, err := conn.ReadFrame(buf, time.Until(until))
			if errors.Is(err, rawsock.ErrTimeout) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			f := buf[:n]
			// PADO (code 0x07) addressed to us from the VM's NIC.
			if n >= 20 && bytes.Equal(f[0:6], mac[:]) && f[15] == 0x07 &&
				bytes.Equal(f[6:12], []byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}) {
				if v, ok := pppoeTag(f, 0x0102); ok {
					acName = v
				} else {
					t.Fatalf("PADO without AC-Name: % x", f)
				}
				break
			}
		}
	}
	if string(acName) != "vmlab-ac" {
		t.Fatalf("no PADO with AC-Name vmlab-ac from pppoe-server (got %q)", acName)
	}
	if n := countFrames(t, pcap, `pppoe.code == 0x07 && pppoed.tags.ac_name == "vmlab-ac"`); n < 1 {
		t.Errorf("tshark finds %d PADOs from vmlab-ac in the capture", n)
	}
}
