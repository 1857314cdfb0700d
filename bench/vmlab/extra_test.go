package vmlab

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteExtraCpio(t *testing.T) {
	src := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(src, []byte("\x7fELF prog"), 0o750); err != nil {
		t.Fatal(err)
	}
	files := []ExtraFile{
		{Path: "/usr/local/sbin/pppfwd", Src: src},
		{Path: "/usr/local/sbin/other", Src: src, Mode: 0o700},
		{Path: "/etc/ppp/options", Body: []byte("# replaced\n")},
		{Path: "/etc/secret", Body: []byte("s"), Mode: 0o600},
		{Path: "/empty"},
	}
	var buf bytes.Buffer
	if err := writeExtraCpio(&buf, files); err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, buf.Bytes())
	want := map[string]cpioEntry{
		"usr":                   {cpioIFDIR | 0o755, "", 0, 0},
		"usr/local":             {cpioIFDIR | 0o755, "", 0, 0},
		"usr/local/sbin":        {cpioIFDIR | 0o755, "", 0, 0},
		"usr/local/sbin/pppfwd": {cpioIFREG | 0o750, "\x7fELF prog", 0, 0},
		"usr/local/sbin/other":  {cpioIFREG | 0o700, "\x7fELF prog", 0, 0},
		"etc":                   {cpioIFDIR | 0o755, "", 0, 0},
		"etc/ppp":               {cpioIFDIR | 0o755, "", 0, 0},
		"etc/ppp/options":       {cpioIFREG | 0o644, "# replaced\n", 0, 0},
		"etc/secret":            {cpioIFREG | 0o600, "s", 0, 0},
		"empty":                 {cpioIFREG | 0o644, "", 0, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("archive:\n got %v\nwant %v", got, want)
	}
	// The kernel creates no missing parents: each directory must come
	// before what is in it.
	b := buf.String()
	for _, pair := range [][2]string{{"usr\x00", "usr/local\x00"}, {"usr/local\x00", "usr/local/sbin\x00"},
		{"usr/local/sbin\x00", "usr/local/sbin/pppfwd\x00"}, {"etc/ppp\x00", "etc/ppp/options\x00"}} {
		if i, j := strings.Index(b, pair[0]), strings.Index(b, pair[1]); i < 0 || j < 0 || i > j {
			t.Errorf("%q (at %d) must precede %q (at %d)", pair[0], i, pair[1], j)
		}
	}
	// Inode numbers must not collide with the image's (from 1), or the
	// kernel could take a member for a hard link.
	if ino := b[6:14]; ino < "01000000" {
		t.Errorf("first inode %s, want >= %08x", ino, extraInode)
	}
}

func TestWriteExtraCpioErrors(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][]ExtraFile{
		"relative":       {{Path: "etc/x"}},
		"unclean":        {{Path: "/etc/../x"}},
		"trailing slash": {{Path: "/etc/x/"}},
		"root":           {{Path: "/"}},
		"under tmp":      {{Path: "/tmp/x"}},
		"under proc":     {{Path: "/proc/x"}},
		"is dev":         {{Path: "/dev"}},
		"twice":          {{Path: "/x"}, {Path: "/x"}},
		"under a file":   {{Path: "/x"}, {Path: "/x/y"}},
		"is a parent":    {{Path: "/x/y"}, {Path: "/x"}},
		"src and body":   {{Path: "/x", Src: src, Body: []byte{}}},
		"missing src":    {{Path: "/x", Src: filepath.Join(dir, "nonexistent")}},
		"src is a dir":   {{Path: "/x", Src: dir}},
		"dir mode":       {{Path: "/x", Mode: os.ModeDir | 0o755}},
	} {
		if err := writeExtraCpio(&bytes.Buffer{}, files); err == nil {
			t.Errorf("%s: %+v accepted", name, files)
		}
	}
	// /tmpfoo is not under /tmp.
	if err := writeExtraCpio(&bytes.Buffer{}, []ExtraFile{{Path: "/tmpfoo/x"}, {Path: "/devices"}}); err != nil {
		t.Errorf("/tmpfoo/x, /devices: %v", err)
	}
}

// writeInitrd appends the extra archive after the image's, starting on a
// 4-byte boundary (the kernel reads an uncompressed archive only there).
func TestWriteInitrd(t *testing.T) {
	dir := t.TempDir()
	for _, baseLen := range []int{8, 9, 10, 11} {
		base := bytes.Repeat([]byte{0x1f}, baseLen)
		basePath := filepath.Join(dir, "base")
		if err := os.WriteFile(basePath, base, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "initrd")
		if err := writeInitrd(dst, basePath, []ExtraFile{{Path: "/etc/x", Body: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b[:baseLen], base) {
			t.Fatalf("base %d: image not copied first", baseLen)
		}
		off := (baseLen + 3) &^ 3
		if pad := b[baseLen:off]; len(bytes.Trim(pad, "\x00")) != 0 {
			t.Fatalf("base %d: padding % x is not zeros", baseLen, pad)
		}
		got := readNewc(t, b[off:])
		if e, ok := got["etc/x"]; !ok || e.body != "x" {
			t.Errorf("base %d: extra archive %v lacks etc/x", baseLen, got)
		}
	}
	if err := writeInitrd(filepath.Join(dir, "initrd2"), filepath.Join(dir, "nonexistent"), nil); err == nil {
		t.Error("missing base image accepted")
	}
}
