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
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

func TestParseDepends(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"libc6 (>= 2.34), ppp (>= 2.3.10-1)", []string{"libc6", "ppp"}},
		{"libsystemd0 | libelogind0, libssl3 (>= 3.0.0)", []string{"libsystemd0", "libssl3"}},
		{"perl:any, libfoo1:amd64 (= 1.0)", []string{"perl", "libfoo1"}},
		{"", nil},
		{" , ", nil},
	}
	for _, tt := range tests {
		if got := parseDepends(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseDepends(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestModName(t *testing.T) {
	for in, want := range map[string]string{
		"/lib/modules/x/kernel/lib/crc-ccitt.ko": "crc_ccitt",
		"ppp_generic":                            "ppp_generic",
		"virtio_pci_modern_dev.ko":               "virtio_pci_modern_dev",
	} {
		if got := modName(in); got != want {
			t.Errorf("modName(%q) = %q, want %q", in, got, want)
		}
	}
}

type cpioEntry struct {
	mode       uint32
	body       string
	rmaj, rmin uint32
}

// readNewc is an independent, strict newc reader for the round trip test.
func readNewc(t *testing.T, b []byte) map[string]cpioEntry {
	t.Helper()
	out := map[string]cpioEntry{}
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("offset %d field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 || off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at offset %d", off)
		}
		mode, size, rmaj, rmin, nsize := field(1), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+int(nsize)-1])
		if b[off+110+int(nsize)-1] != 0 {
			t.Fatalf("%s: name not NUL-terminated", name)
		}
		doff := (off + 110 + int(nsize) + 3) &^ 3
		if name == "TRAILER!!!" {
			if rest := b[doff:]; len(bytes.Trim(rest, "\x00")) != 0 {
				t.Fatalf("data after trailer")
			}
			return out
		}
		if _, dup := out[name]; dup {
			t.Fatalf("%s archived twice", name)
		}
		out[name] = cpioEntry{mode, string(b[doff : doff+int(size)]), rmaj, rmin}
		off = (doff + int(size) + 3) &^ 3
	}
}

func TestCpioTree(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/sbin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "init"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/sbin/pppd"), []byte("ELF..."), 0o755))
	must(os.Chmod(filepath.Join(root, "usr/sbin/pppd"), 0o754|os.ModeSetuid))
	must(os.WriteFile(filepath.Join(root, "empty"), nil, 0o644))
	must(os.Symlink("usr/sbin", filepath.Join(root, "sbin")))
	var buf bytes.Buffer
	must(writeCpioTree(&buf, root))
	got := readNewc(t, buf.Bytes())
	want := map[string]cpioEntry{
		"init":          {cpioIFREG | 0o755, "#!/bin/sh\n", 0, 0},
		"usr":           {cpioIFDIR | 0o755, "", 0, 0},
		"usr/sbin":      {cpioIFDIR | 0o755, "", 0, 0},
		"usr/sbin/pppd": {cpioIFREG | 0o4754, "ELF...", 0, 0},
		"empty":         {cpioIFREG | 0o644, "", 0, 0},
		"sbin":          {cpioIFLNK | 0o777, "usr/sbin", 0, 0},
		"dev":           {cpioIFDIR | 0o755, "", 0, 0},
		"dev/console":   {cpioIFCHR | 0o600, "", 5, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("archive:\n got %v\nwant %v", got, want)
	}
}

func TestParseTsharkFields(t *testing.T) {
	out := "1|eth:ethertype:pppoed||\n" +
		"2|eth:ethertype:pppoes:ppp:lcp|8388608|Malformed Packet (Exception occurred)\n" +
		"3|eth:ethertype:pppoes:ppp:data||\n" +
		"4|eth:ethertype:pppoes:ppp:ip:icmp:data|4194304;2097152|Echo reply;Sequence number\n" +
		"5|eth:ethertype:pppoes:ppp:chap||\n" +
		"6|eth:ethertype:data||\n"
	r, err := parseTsharkFields([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if r.Frames != 6 {
		t.Errorf("Frames = %d, want 6", r.Frames)
	}
	wantProto := map[string]int{"eth": 6, "ethertype": 6, "pppoed": 1, "pppoes": 4, "ppp": 4,
		"lcp": 1, "data": 3, "ip": 1, "icmp": 1, "chap": 1}
	if !reflect.DeepEqual(r.Protocols, wantProto) {
		t.Errorf("Protocols = %v, want %v", r.Protocols, wantProto)
	}
	if len(r.Problems) != 3 || !strings.HasPrefix(r.Problems[0], "frame 2:") ||
		!strings.Contains(r.Problems[0], "Malformed") || !strings.HasPrefix(r.Problems[1], "frame 3:") ||
		!strings.HasPrefix(r.Problems[2], "frame 6:") {
		t.Errorf("Problems = %q, want frames 2 (malformed), 3 and 6 (undissected)", r.Problems)
	}
	if _, err := parseTsharkFields(nil); err == nil {
		t.Error("empty capture: want an error")
	}
	if _, err := parseTsharkFields([]byte("garbage\n")); err == nil {
		t.Error("garbage line: want an error")
	}
}

// fakeGuest speaks the guest side of the control protocol (guest/init.sh)
// over a net.Pipe, answering from a table keyed by command.
type reply struct {
	noise string // written before the BEGIN marker
	out   string
	rc    int
	hang  bool
}

func newFakeVM(t *testing.T, replies map[string]reply) *VM {
	host, guest := net.Pipe()
	v := &VM{opts: Options{CmdTimeout: 2 * time.Second}, conn: host, rd: bufio.NewReader(host),
		nonce: "t", exited: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rd := bufio.NewReader(guest)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			id, b64, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			cmd, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Errorf("guest: bad base64 %q", b64)
				return
			}
			r, ok := replies[string(cmd)]
			if !ok {
				t.Errorf("guest: unexpected command %q", cmd)
				return
			}
			if r.hang {
				continue
			}
			fmt.Fprintf(guest, "%s@@VMLAB-BEGIN %s@@\n%s\n@@VMLAB-END %s %d@@\n", r.noise, id, r.out, id, r.rc)
		}
	}()
	t.Cleanup(func() {
		host.Close()
		guest.Close()
		<-done
	})
	return v
}

func TestRunProtocol(t *testing.T) {
	v := newFakeVM(t, map[string]reply{
		"echo hi":    {out: "hi\n"},
		"true":       {},
		"exit 3":     {out: "no newline", rc: 3},
		"noisy":      {noise: "kernel: x\n@@VMLAB-END t0 0@@\n@@VMLAB-BEGIN t0@@\n", out: "ok"},
		"fake-end":   {out: "@@VMLAB-END other 0@@\nreal"},
		"sleep 1000": {hang: true},
	})
	tests := []struct {
		cmd     string
		want    string
		wantErr int // -1: none, else exit status
	}{
		{"echo hi", "hi\n", -1},
		{"true", "", -1},
		{"exit 3", "no newline", 3},
		{"noisy", "ok", -1},
		{"fake-end", "@@VMLAB-END other 0@@\nreal", -1},
	}
	for _, tt := range tests {
		got, err := v.Run(tt.cmd)
		if got != tt.want {
			t.Errorf("Run(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
		var ce *CmdError
		switch {
		case tt.wantErr < 0 && err != nil:
			t.Errorf("Run(%q): unexpected error %v", tt.cmd, err)
		case tt.wantErr >= 0 && (!errors.As(err, &ce) || ce.Status != tt.wantErr):
			t.Errorf("Run(%q): error %v, want exit status %d", tt.cmd, err, tt.wantErr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := v.RunContext(ctx, "sleep 1000"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung command: error %v, want deadline exceeded", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("hung command returned after %v", d)
	}
	// The channel stays usable: the next command skips to its own marker.
	if got, err := v.Run("echo hi"); err != nil || got != "hi\n" {
		t.Errorf("after timeout: Run = %q, %v", got, err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/ppp/options": "'/etc/ppp/options'",
		"it's":             `'it'\''s'`,
		"":                 "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Start refuses to boot without a namespace of the VM's own: qemu and its
// taps never go into the caller's (root) namespace.
func TestStartNeedsNamespace(t *testing.T) {
	for _, ns := range []*nettest.NS{nil, {}} {
		vm, err := Start(context.Background(), Options{Netns: ns})
		if err == nil {
			vm.Close()
			t.Fatalf("Start with Netns %v booted a VM", ns)
		}
		if Available() == nil && !strings.Contains(err.Error(), "Netns") {
			t.Errorf("Start with Netns %v: %v, want a Netns error", ns, err)
		}
	}
}
