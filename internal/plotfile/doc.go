// Package plotfile writes a gonum plot as the PNG and SVG pair the
// benchmarks' reports and docs/ carry (bench scale, bench ab, bench io).
//
// It may import gonum.org/v1/plot only.
package plotfile
