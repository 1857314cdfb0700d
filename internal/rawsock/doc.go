// Package rawsock is a small raw Ethernet frame socket for the PPPoE
// control plane and the labs: on Linux an AF_PACKET SOCK_RAW socket bound to
// one interface. Its *Conn has the method set of pppoe.Conn.
//
// VLAN tags that the kernel moved into packet metadata (RX VLAN offload,
// skb_vlan_untag) are put back into received frames, so callers always see
// the frame as it was on the wire. Frames this socket sent are not
// received back.
//
// It may import nic and x/sys/unix only.
package rawsock
