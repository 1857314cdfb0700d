package plotfile

import (
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Save writes p, w by h, as dir/name.png and dir/name.svg and returns the
// files written, also those written before a failure.
func Save(p *plot.Plot, w, h vg.Length, dir, name string) ([]string, error) {
	var files []string
	for _, ext := range []string{".png", ".svg"} {
		f := filepath.Join(dir, name+ext)
		if err := p.Save(w, h, f); err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}
