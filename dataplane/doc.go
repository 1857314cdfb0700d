// Package dataplane is pppfwd's per-core forwarding engine: the worker loop,
// WAN steering, SPSC batch rings, routing, MSS clamping, ICMP errors and
// drop accounting.
//
// It may import dataplane/nat, dataplane/ndp, shaper, hdr, internal and
// nic, and no control-protocol package (pppoe).
package dataplane
