//go:build unix

package router

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withUmask runs f with the process umask set to mask.
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// leftovers lists the temporary files writeFileAtomic left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".pppfwd-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWriteFileAtomicSymlink: a destination that is a symlink is refused,
// whatever it points at, and neither the link nor its target changes.
func TestWriteFileAtomicSymlink(t *testing.T) {
	elsewhere := t.TempDir() // a directory pppfwd must never write into through a link
	secret := filepath.Join(elsewhere, "shadow")
	if err := os.WriteFile(secret, []byte("root:x:0:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, target string
	}{
		{"to a file elsewhere", secret},
		{"relative, to a file beside it", "real.conf"},
		{"dangling", filepath.Join(elsewhere, "missing", "new")},
		{"to a directory", elsewhere},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "real.conf"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "resolv.conf")
			if err := os.Symlink(c.target, link); err != nil {
				t.Fatal(err)
			}
			err := writeFileAtomic(link, []byte("nameserver 192.0.2.1\n"))
			if !errors.Is(err, errSymlink) || !strings.Contains(err.Error(), link) {
				t.Fatalf("error %v, want the symlink refused by name", err)
			}
			if got, err := os.Readlink(link); err != nil || got != c.target {
				t.Fatalf("link now %q (%v), want %q", got, err, c.target)
			}
			if b, err := os.ReadFile(secret); err != nil || string(b) != "root:x:0:\n" {
				t.Fatalf("target elsewhere now %q (%v)", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "real.conf")); err != nil || string(b) != "old\n" {
				t.Fatalf("target beside it now %q (%v)", b, err)
			}
			if _, err := os.Lstat(filepath.Join(elsewhere, "missing")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a dangling link's directory was made: %v", err)
			}
			if l := leftovers(t, dir); len(l) != 0 {
				t.Fatalf("temporary files left: %v", l)
			}
		})
	}
}

// TestWriteFileAtomicModes: a file is written 0644 and missing
// directories are made 0755 whatever the umask; a file that exists is
// replaced whole (its old mode does not carry over).
func TestWriteFileAtomicModes(t *testing.T) {
	for _, mask := range []int{0o077, 0o000, 0o022, 0o777} {
		root := t.TempDir()
		file := filepath.Join(root, "run", "pppfwd", "stats.json")
		withUmask(t, mask, func() {
			if err := writeFileAtomic(file, []byte("{}\n")); err != nil {
				t.Fatalf("umask %03o: %v", mask, err)
			}
		})
		for _, c := range []struct {
			path string
			mode os.FileMode
		}{{file, 0o644}, {filepath.Join(root, "run"), 0o755 | os.ModeDir}, {filepath.Join(root, "run", "pppfwd"), 0o755 | os.ModeDir}} {
			fi, err := os.Lstat(c.path)
			if err != nil || fi.Mode() != c.mode {
				t.Errorf("umask %03o: %s mode %v (%v), want %v", mask, c.path, fi.Mode(), err, c.mode)
			}
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != "{}\n" {
			t.Fatalf("umask %03o: read %q %v", mask, b, err)
		}
	}
	// An existing 0600 file: replaced by a 0644 one with the new data.
	dir := t.TempDir()
	file := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(file, []byte("old old old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withUmask(t, 0o077, func() {
		if err := writeFileAtomic(file, []byte("new\n")); err != nil {
			t.Fatal(err)
		}
	})
	if fi, err := os.Lstat(file); err != nil || fi.Mode() != 0o644 {
		t.Fatalf("replaced file mode %v (%v), want 0644", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new\n" {
		t.Fatalf("replaced file holds %q", b)
	}
	// A directory that exists keeps its mode.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(file, []byte("again\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("existing directory's mode changed to %v", fi.Mode())
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("temporary files left: %v", l)
	}
}

// TestWriteFileAtomicRefuses: destinations that are not regular files and
// directory paths that cannot be made are errors, and leave nothing.
func TestWriteFileAtomicRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A dangling link where a directory should be: Stat says missing,
	// Mkdir says exists; an error, not a loop.
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "adir"), "not a regular file"},
		{filepath.Join(dir, "fifo"), "not a regular file"},
		{filepath.Join(dir, "afile", "x"), "not a directory"},
		{filepath.Join(dir, "dlink", "x"), "exists"},
	} {
		if err := writeFileAtomic(c.path, []byte("x")); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dangling link's target was made: %v", err)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("temporary files left: %v", l)
	}
}
