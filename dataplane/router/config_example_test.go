package router

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite pppfwd.conf.example from the key table")

// TestExampleConfigFromTable: pppfwd.conf.example is what the key table
// writes (every key once, none that is not in the table, each with the
// table's help and allowed values). After changing the table, rewrite
// it with: go test ./dataplane/router -run TestExampleConfigFromTable -update
func TestExampleConfigFromTable(t *testing.T) {
	const file = "../../pppfwd.conf.example"
	want := ExampleConfig()
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Name what is missing or extra first: a clearer message than a diff.
	inFile := map[string]int{}
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[min(strings.Count(exampleHeader, "\n"), len(lines)):] {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "# "))
		switch {
		case len(f) == 0:
		case keyIndex[f[0]] != nil:
			inFile[f[0]]++
		case isKeyLike(f[0]):
			t.Errorf("%s holds %q, which is not a key of the table", file, f[0])
		}
	}
	for _, k := range keyTable {
		if inFile[k.Name] != 1 {
			t.Errorf("%s has key %s %d times, want once", file, k.Name, inFile[k.Name])
		}
	}
	if string(b) != want {
		got, exp := strings.Split(string(b), "\n"), strings.Split(want, "\n")
		for i := 0; i < max(len(got), len(exp)); i++ {
			g, e := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(exp) {
				e = exp[i]
			}
			if g != e {
				t.Fatalf("%s differs from the key table at line %d:\n have %q\n want %q\n(rewrite it: go test ./dataplane/router -run TestExampleConfigFromTable -update)", file, i+1, g, e)
			}
		}
	}
}

// isKeyLike reports whether s looks like a configuration key (word.word).
func isKeyLike(s string) bool {
	a, b, ok := strings.Cut(s, ".")
	return ok && a != "" && b != "" && strings.Trim(a+b, "abcdefghijklmnopqrstuvwxyz_0123456789") == ""
}
