package main

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rank orders pppfwd's rooms from the top: a package may import a package
// of a lower rank, or one in its own room (bench/lab from bench/soak,
// nic from nic/afpacket); never one of its own rank in another room or a
// higher one. The longest matching prefix decides.
var rank = []struct {
	prefix string
	rank   int
}{
	{"cmd", 9},
	{"bench", 8},
	{"dataplane/router", 7},
	{"pppoe", 6},
	{"dataplane/control", 6},
	{"dataplane", 5},
	{"dataplane/ndp", 4},
	{"dataplane/nat", 4},
	{"shaper", 4},
	{"hdr", 3},
	{"internal", 2},
	{"nic", 1},
}

// apart lists rooms of different ranks that import neither way: the
// PPPoE client reaches the fast path only through the router (the
// control plane's WANConn is a pppoe.Conn by shape).
var apart = [][2]string{{"pppoe", "dataplane"}}

// upward reports whether an import from room from (rank fr) of room to
// (rank tr) breaks the one-way picture.
func upward(from string, fr int, to string, tr int) bool {
	if from == to {
		return false
	}
	for _, a := range apart {
		if a == [2]string{from, to} || a == [2]string{to, from} {
			return true
		}
	}
	return tr >= fr
}

const module = "github.com/pppfwd/pppfwd"

// room returns a package's room (its rank table prefix) and rank.
func room(pkg string) (string, int, bool) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	best, r := "", 0
	for _, e := range rank {
		if (rel == e.prefix || strings.HasPrefix(rel, e.prefix+"/")) && len(e.prefix) > len(best) {
			best, r = e.prefix, e.rank
		}
	}
	return best, r, best != ""
}

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

// TestLayers: the import graph points one way between pppfwd's rooms
// (cmd -> bench -> the router -> {pppoe, control} -> dataplane -> {nat,
// ndp, shaper} -> hdr -> internal -> nic, pppoe and dataplane apart); only
// nic/* and internal/* (OS helpers that are not ports) import x/sys/unix and
// only files named *_unsafe.go import unsafe (tests aside).
func TestLayers(t *testing.T) {
	for _, goos := range []string{"linux", "freebsd"} {
		cmd := exec.Command("go", "list", "-json", module+"/...")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		n := 0
		for {
			var p listed
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			n++
			if !slices.Contains(p.GoFiles, "doc.go") {
				t.Errorf("%s (%s) has no doc.go: each package opens with one (its job, what it may import)", p.ImportPath, goos)
			}
			from, fr, ok := room(p.ImportPath)
			if !ok {
				t.Errorf("%s: package in no room of the layer table", p.ImportPath)
				continue
			}
			for _, imp := range p.Imports {
				if imp == "golang.org/x/sys/unix" && from != "nic" && from != "internal" {
					t.Errorf("%s (%s) imports x/sys/unix: only nic/* and internal/* may", p.ImportPath, goos)
				}
				if imp == "unsafe" {
					for _, f := range p.GoFiles {
						if !strings.HasSuffix(f, "_unsafe.go") && importsUnsafe(t, filepath.Join(p.Dir, f)) {
							t.Errorf("%s imports unsafe: only *_unsafe.go files may", filepath.Join(p.Dir, f))
						}
					}
				}
				if !strings.HasPrefix(imp, module) {
					continue
				}
				to, tr, ok := room(imp)
				if !ok {
					continue
				}
				if upward(from, fr, to, tr) {
					t.Errorf("%s (rank %d) imports %s (rank %d): an arrow up or sideways between rooms", p.ImportPath, fr, imp, tr)
				}
			}
		}
		if n < 20 {
			t.Fatalf("go list found %d packages", n)
		}
	}
}

func importsUnsafe(t *testing.T, file string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range f.Imports {
		if im.Path.Value == `"unsafe"` {
			return true
		}
	}
	return false
}

// TestLayersCatchUpwardImports: the rule itself rejects the arrows it
// must (a sanity check of the table, independent of the tree).
func TestLayersCatchUpwardImports(t *testing.T) {
	for _, c := range []struct {
		from, to string
		bad      bool
	}{
		{"pppoe", "dataplane", true},
		{"dataplane", "pppoe", true},
		{"hdr", "pppoe", true},
		{"nic/afpacket", "hdr", true},
		{"dataplane/nat", "dataplane", true},
		{"dataplane/router", "bench/lab", true},
		{"dataplane", "dataplane/control", true},
		{"dataplane/control", "pppoe", true},
		{"pppoe", "dataplane/control", true},
		{"dataplane/nat", "dataplane/control", true},
		{"dataplane/control", "dataplane", false},
		{"dataplane/control", "dataplane/ndp", false},
		{"dataplane/router", "dataplane/control", false},
		{"dataplane", "hdr", false},
		{"dataplane/router", "pppoe/dhcp6", false},
		{"bench/soak", "bench/lab", false},
		{"nic/afpacket", "nic", false},
		{"cmd/pppfwd", "bench/pipeline", false},
	} {
		f, fr, _ := room(module + "/" + c.from)
		to, tr, _ := room(module + "/" + c.to)
		if bad := upward(f, fr, to, tr); bad != c.bad {
			t.Errorf("%s -> %s: flagged %v, want %v", c.from, c.to, bad, c.bad)
		}
	}
}
