// Package hdr provides header views over []byte for the protocols pppfwd's
// fast path touches (Ethernet, 802.1Q, PPPoE, PPP, IPv4, TCP, UDP, ICMP) and
// Internet checksum helpers, including incremental updates (RFC 1624).
//
// Views never copy and never allocate. Accessors assume the view IsValid
// (or the caller checked the length); IsValid never panics.
//
// It may import internal and nic only; every room above may import it.
package hdr
