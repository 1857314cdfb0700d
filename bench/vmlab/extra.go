package vmlab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ExtraFile is a file added to the guest's root file system at boot, on top
// of the cached image, without rebuilding it (see Options.Extra).
type ExtraFile struct {
	// Path is the file's absolute path in the guest, e.g.
	// /usr/local/sbin/pppfwd. Missing parent directories are created
	// (mode 0755); a file of the image at that path is replaced. Paths
	// under /proc, /sys, /dev and /tmp are refused: the guest mounts file
	// systems over them.
	Path string
	// Mode holds the permission bits; zero means Src's permission bits,
	// or 0644 for Body.
	Mode fs.FileMode
	// Src is a host file whose content is copied; when empty, Body is
	// the content.
	Src  string
	Body []byte
}

// hiddenDirs are mounted over by the guest's init, so that an initramfs
// file there would never be seen.
var hiddenDirs = []string{"proc", "sys", "dev", "tmp"}

// extraInode numbers the extra archive's members far from the image's
// (which count up from 1), so that no member looks like a hard link of
// one in the image.
const extraInode = 1 << 24

// writeExtraCpio writes files as one uncompressed newc archive: each
// file's parent directories (once each, before it), then the file.
func writeExtraCpio(w io.Writer, files []ExtraFile) error {
	c := newCpioWriter(w)
	c.ino = extraInode
	dirs := map[string]bool{}
	seen := map[string]bool{}
	for _, f := range files {
		name, err := extraName(f.Path)
		if err != nil {
			return err
		}
		if seen[name] {
			return fmt.Errorf("vmlab: extra file %s given twice", f.Path)
		}
		if dirs[name] {
			return fmt.Errorf("vmlab: extra file %s is also a parent directory", f.Path)
		}
		seen[name] = true
		if f.Src != "" && f.Body != nil {
			return fmt.Errorf("vmlab: extra file %s has both Src and Body", f.Path)
		}
		body, perm := f.Body, fs.FileMode(0o644)
		if f.Src != "" {
			fi, err := os.Stat(f.Src)
			if err != nil {
				return fmt.Errorf("vmlab: extra file %s: %w", f.Path, err)
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("vmlab: extra file %s: %s is not a regular file", f.Path, f.Src)
			}
			if body, err = os.ReadFile(f.Src); err != nil {
				return fmt.Errorf("vmlab: extra file %s: %w", f.Path, err)
			}
			perm = fi.Mode().Perm()
		}
		if f.Mode != 0 {
			if f.Mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				return fmt.Errorf("vmlab: extra file %s: mode %v is not a regular file's", f.Path, f.Mode)
			}
			perm = f.Mode
		}
		var parents []string
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			d := parents[i]
			if seen[d] {
				return fmt.Errorf("vmlab: extra file %s is under extra file /%s", f.Path, d)
			}
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := c.entry(d, cpioIFDIR|0o755, nil, 0, 0); err != nil {
				return err
			}
		}
		mode, _ := cpioMode(perm)
		if err := c.entry(name, mode, body, 0, 0); err != nil {
			return err
		}
	}
	return c.close()
}

// extraName validates an ExtraFile.Path and returns it as an archive
// member name (no leading slash).
func extraName(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		return "", fmt.Errorf("vmlab: extra file path %q must be absolute and clean", p)
	}
	name := p[1:]
	top, _, _ := strings.Cut(name, "/")
	for _, h := range hiddenDirs {
		if top == h {
			return "", fmt.Errorf("vmlab: extra file %s: /%s is mounted over at boot", p, h)
		}
	}
	if strings.ContainsRune(name, 0) {
		return "", errors.New("vmlab: extra file path contains NUL")
	}
	return name, nil
}

// writeInitrd writes to dst the image's initramfs followed by the extra
// files' archive. Linux unpacks concatenated initramfs archives in order,
// later members replacing earlier ones; an uncompressed archive must start
// at a multiple of 4 bytes, so the base is padded with zeros (which the
// unpacker skips).
func writeInitrd(dst, base string, files []ExtraFile) (err error) {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	in, err := os.Open(base)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, in)
	in.Close()
	if err != nil {
		return err
	}
	if r := n % 4; r != 0 {
		if _, err := out.Write(make([]byte, 4-r)); err != nil {
			return err
		}
	}
	return writeExtraCpio(out, files)
}
