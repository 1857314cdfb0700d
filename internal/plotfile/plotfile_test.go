package plotfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// TestSave: a PNG and an SVG under the name given, in that order; a
// directory that does not exist fails with nothing written.
func TestSave(t *testing.T) {
	dir := t.TempDir()
	p := plot.New()
	p.Title.Text = "t"
	files, err := Save(p, 4*vg.Centimeter, 3*vg.Centimeter, dir, "fig")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != filepath.Join(dir, "fig.png") || files[1] != filepath.Join(dir, "fig.svg") {
		t.Fatalf("files %v", files)
	}
	png, err := os.ReadFile(files[0])
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v, %d bytes", err, len(png))
	}
	svg, err := os.ReadFile(files[1])
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("svg: %v, %d bytes", err, len(svg))
	}
	if files, err := Save(p, 4*vg.Centimeter, 3*vg.Centimeter, filepath.Join(dir, "missing"), "fig"); err == nil || len(files) != 0 {
		t.Fatalf("into a missing directory: %v, %v", files, err)
	}
}
