// Package shaperbench is the latency-under-load scenario behind
// `pppfwd bench shaper`: bulk load at a multiple of the shaped rate plus a
// sparse ping flow, on a simulated clock, through a Path into a line model
// (a FIFO at line rate with a fixed buffer, the bufferbloated modem). The
// Path is the shaper alone (ShaperPath, the default) or the whole dataplane
// (PipelinePath: dataplane.Engine over memports, driven with Engine.Poll on
// the manual clock). It reports the shaped rate's error, the ping's added
// delay with the shaper on and off, and the shaper's cost per packet.
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package shaperbench
