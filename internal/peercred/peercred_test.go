package peercred

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestUID: the peer of a connection from this process is this process's
// effective user.
func TestUID(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skipf("no peer credentials on %s", runtime.GOOS)
	}
	path := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	uid, err := UID(s)
	if err != nil || int(uid) != os.Geteuid() {
		t.Fatalf("UID = %d, %v; want %d", uid, err, os.Geteuid())
	}
}
