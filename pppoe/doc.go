// Package pppoe implements pppfwd's PPPoE client (RFC 2516 discovery, PPP
// LCP/PAP/CHAP/IPCP/IPv6CP) and an access concentrator for labs and tests;
// it publishes the session to the fast path as an hdr.Session.
//
// It may import hdr and nic (the Conn's frames); never the dataplane.
package pppoe
