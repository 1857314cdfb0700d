// Package scale sweeps pppfwd's in-memory pipeline (bench/pipeline) over
// worker counts, flow counts, frame sizes and steering modes, and fits a
// per-core model to the sweep: from the measured cost of a packet's work
// and of steering it, the packet rate a CPU of a given clock and core
// count would reach, where the steering core saturates, and how that
// compares with Ethernet line rates. It writes the points and the model
// as JSON, CSV and plots (PNG and SVG).
//
// The model (model.go) is a set of pure functions of the measured costs;
// everything that reads clocks or runs the pipeline stays outside it.
//
// It may import bench/pipeline, the dataplane and shaper (for the
// pipeline's options), and gonum.org/v1/plot; only cmd imports it.
package scale
