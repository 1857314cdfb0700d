//go:build !unix

package router

import (
	"io/fs"
	"os/exec"
)

// setProcessGroup: only the command itself is killed on this GOOS.
func setProcessGroup(*exec.Cmd) {}

// No O_NOFOLLOW or O_DIRECTORY on this GOOS: writeFileAtomic's Lstat
// check and O_EXCL are what keep it off links.
const (
	oNoFollow  = 0
	oDirectory = 0
)

// syncDir: directories cannot be synced on this GOOS.
func syncDir(string) error { return nil }

// fileOwner: no file owners on this GOOS.
func fileOwner(fs.FileInfo) (uid int, ok bool) { return 0, false }
