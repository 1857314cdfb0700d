// Package ndp parses and builds the IPv6 Neighbor Discovery (RFC 4861) and
// ICMPv6 echo (RFC 4443) frames the router's LAN control plane handles:
// it answers Neighbor Solicitations for its own addresses, learns
// neighbours from NS/NA, solicits unknown neighbours, answers Router
// Solicitations, sends periodic Router Advertisements and answers echo
// requests to its own addresses.
//
// Frames are untagged Ethernet II + IPv6 + ICMPv6, with no IPv6 extension
// headers. This is the slow path, but Parse does not allocate, and the
// builders append to a caller's buffer (b []byte in, the extended slice
// out), allocating only when b lacks room; ParseRA allocates its lists.
// Parse and ParseRA never panic on any input.
//
// It may import hdr, internal and nic only.
package ndp
