package main

import (
	"fmt"
	"io"
)

// benchIO is replaced by the bench/iobench wiring.
func benchIO(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "pppfwd bench io: not built yet")
	return 1
}
