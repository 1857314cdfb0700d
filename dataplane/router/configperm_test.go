//go:build unix

package router

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckConfigFile: the configuration file (it holds the PPPoE
// password and names the scripts pppfwd runs) draws a warning when group
// or others have any access to it or when another user owns it.
func TestCheckConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pppfwd.conf")
	if err := os.WriteFile(file, []byte("pppoe.password secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	for _, c := range []struct {
		mode os.FileMode
		euid int // the user pppfwd runs as
		want []string
	}{
		{0o600, me, nil},
		{0o400, me, nil},
		{0o700, me, nil},
		{0o640, me, []string{"mode 0640", "read it", "chmod 600"}},
		{0o604, me, []string{"mode 0604", "read it"}},
		{0o644, me, []string{"mode 0644", "read it"}},
		{0o620, me, []string{"mode 0620", "change it"}},
		{0o602, me, []string{"mode 0602", "change it"}},
		{0o666, me, []string{"read it (the PPPoE password) and change it"}},
		{0o610, me, []string{"mode 0610", "access it"}},
		{0o600, me + 1, []string{"owned by uid", "chown"}},
		{0o644, me + 1, []string{"mode 0644", "owned by uid"}},
	} {
		if err := os.Chmod(file, c.mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		err = checkConfigFile(file, fi, c.euid)
		if (err != nil) != (c.want != nil) {
			t.Errorf("mode %04o euid %d: %v, want a warning: %v", c.mode, c.euid, err, c.want != nil)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("mode %04o euid %d: %q lacks %q", c.mode, c.euid, err, w)
			}
		}
		if err != nil && !strings.HasPrefix(err.Error(), file+": ") {
			t.Errorf("warning %q does not name the file first", err)
		}
	}
	// The exported check compares with the user this process runs as.
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(file)
	if err := CheckConfigFile(file, fi); err != nil {
		t.Fatalf("own 0600 file: %v", err)
	}
	// Without owner information (another GOOS) only the mode counts.
	if err := checkConfigFile(file, fakeInfo{mode: 0o600}, me+1); err != nil {
		t.Fatalf("no owner information: %v", err)
	}
	if err := checkConfigFile(file, fakeInfo{mode: 0o660}, me); err == nil {
		t.Fatal("no owner information, mode 0660: no warning")
	}
}

// fakeInfo is an fs.FileInfo without a Stat_t.
type fakeInfo struct{ mode os.FileMode }

func (f fakeInfo) Name() string       { return "pppfwd.conf" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() os.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return false }
func (f fakeInfo) Sys() any           { return nil }
