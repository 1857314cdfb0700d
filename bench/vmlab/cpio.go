package vmlab

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// cpio "newc" (SVR4 without CRC) archive writer, the format the Linux kernel
// unpacks as an initramfs.

const (
	cpioIFDIR = 0o040000
	cpioIFREG = 0o100000
	cpioIFLNK = 0o120000
	cpioIFCHR = 0o020000
)

type cpioWriter struct {
	w   *bufio.Writer
	ino uint32
	n   int64 // bytes written, for padding
}

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<16), ino: 1}
}

func (c *cpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return err
}

func (c *cpioWriter) pad4() error {
	if r := c.n % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// entry writes one archive member. For regular files and symlinks body is
// the content (symlink: the target); rdev is major,minor for device nodes.
func (c *cpioWriter) entry(name string, mode uint32, body []byte, rmaj, rmin uint32) error {
	nlink := uint32(1)
	if mode&0o170000 == cpioIFDIR {
		nlink = 2
	}
	h := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(body), 0, 0, rmaj, rmin, len(name)+1, 0)
	c.ino++
	if err := c.write([]byte(h)); err != nil {
		return err
	}
	if err := c.write(append([]byte(name), 0)); err != nil {
		return err
	}
	if err := c.pad4(); err != nil {
		return err
	}
	if err := c.write(body); err != nil {
		return err
	}
	return c.pad4()
}

// close writes the trailer and flushes.
func (c *cpioWriter) close() error {
	if err := c.entry("TRAILER!!!", 0, nil, 0, 0); err != nil {
		return err
	}
	return c.w.Flush()
}

// cpioMode converts a Go file mode to the Unix st_mode bits cpio stores.
func cpioMode(m fs.FileMode) (uint32, bool) {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	switch {
	case m.IsDir():
		return v | cpioIFDIR, true
	case m.IsRegular():
		return v | cpioIFREG, true
	case m&fs.ModeSymlink != 0:
		return v | cpioIFLNK, true
	}
	return 0, false
}

// writeCpioTree archives the tree under root (owner root:root, mtime 0,
// sorted so that a directory precedes its contents) plus a /dev/console
// node, which the kernel needs before init mounts devtmpfs.
func writeCpioTree(w io.Writer, root string) error {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel != "." {
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	c := newCpioWriter(w)
	hasDev := false
	for _, name := range names {
		p := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode, ok := cpioMode(fi.Mode())
		if !ok {
			continue // sockets, fifos, devices from packages: not needed
		}
		var body []byte
		switch {
		case fi.Mode().IsRegular():
			if body, err = os.ReadFile(p); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			body = []byte(t)
		}
		if err := c.entry(name, mode, body, 0, 0); err != nil {
			return err
		}
		if name == "dev" && fi.IsDir() {
			hasDev = true
		}
	}
	if !hasDev {
		if err := c.entry("dev", cpioIFDIR|0o755, nil, 0, 0); err != nil {
			return err
		}
	}
	if err := c.entry("dev/console", cpioIFCHR|0o600, nil, 5, 1); err != nil {
		return err
	}
	return c.close()
}
