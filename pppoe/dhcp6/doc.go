// Package dhcp6 is a DHCPv6 prefix-delegation client (RFC 8415, IA_PD)
// for pppfwd's WAN, and a small server for tests and the lab's simulated
// ISP.
//
// After IPv6CP opens, the router asks the ISP for a delegated prefix over
// the PPPoE session, takes a /64 of it for the LAN and renews it. The
// package does no I/O and reads no clock; the caller wires it up:
//
//	c := dhcp6.NewClient(dhcp6.ClientConfig{MAC: mac, PrefixLen: 56,
//		Send: func(msg []byte) {
//			pkt := dhcp6.EncodeUDP6(nil, &linkLocal, &dhcp6.AllDHCPRelayAgentsAndServers,
//				1, dhcp6.ClientPort, dhcp6.ServerPort, msg)
//			// ... send pkt as PPP IPv6 over the session
//		},
//		OnLease: func(l dhcp6.Lease) { /* configure the LAN /64, or remove it if l.Valid == 0 */ },
//	})
//	c.Start(now)
//	// for each IPv6 packet received for the router:
//	if _, _, _, dport, payload, ok := dhcp6.DecodeUDP6(pkt); ok && dport == dhcp6.ClientPort {
//		c.Input(payload, now)
//	}
//	// and whenever the clock reaches c.Next(): c.Tick(now)
//
// The codec (Parse, Message.Append) knows the options a PD client needs:
// CLIENTID, SERVERID, IA_PD with IAPREFIX, ORO, ELAPSED_TIME, STATUS_CODE,
// RAPID_COMMIT and DNS_SERVERS. Other options are skipped and not kept.
// Relay messages are not supported. This is the control plane's slow path:
// decoding copies and allocates.
//
// It may import hdr, internal and nic only (never the dataplane).
package dhcp6
