// Package nat is pppfwd's NAT44 (masquerade between the LAN and the PPPoE
// address): one Table per worker, each owning a disjoint slice of the
// external port (and ICMP id) space, touched by no other thread.
//
// # Behaviour (RFC 4787, RFC 5382, RFC 5508)
//
//   - Endpoint-independent mapping (EIM): a LAN endpoint (proto, addr, port
//     or ICMP echo id) keeps one external port for every destination. To
//     keep that true across workers, a LAN endpoint is owned by one worker
//     (EndpointOwner: the worker holding its port, or the forward's Worker
//     for port-forward endpoints); Outbound on another worker answers
//     Redirect. LANSteer computes the owner from a packet so LAN steering
//     can avoid most redirects.
//   - Endpoint-independent filtering (EIF) by default, address-dependent
//     (ADF) as an option (Config.Filtering). ICMP echo replies always need
//     the exact flow.
//   - Port preservation (RFC 4787 REQ-3, REQ-4): the owner of a LAN port
//     holds it (Partition interleaves the ports by pairs), so the port is
//     kept when free; otherwise the first free port from it upward of the
//     same parity, then of any parity. LAN ports and ids below 1024 map
//     into 1-1023 (REQ-3a), from the worker's low share; only when that is
//     full into its range. Ports of 1024 and up never take a low port.
//   - Hairpinning with "external source IP address and port" (REQ-9a), and
//     NAT reflection for port forwards. A LAN packet to the public address
//     on a low-share port that no forward holds is Local (the router's own
//     services), so low mappings are not hairpinned.
//   - Timers: UDP 5 min (>= 2 min enforced), TCP established 2 h 4 min,
//     TCP transitory 4 min, ICMP query 60 s (RFC minimums enforced).
//   - TCP state: SYN/established/FIN/RST, enough to choose the timer.
//   - ICMP errors translated both ways, embedded IP + transport header and
//     every checksum (incremental, RFC 1624).
//   - Port forwards are static 1:1 mappings (DNAT/SNAT that needs no
//     state); the forwarded LAN endpoint always leaves with the forward's
//     external port. The forward's worker tracks, per remote endpoint, the
//     connections the forwarded endpoint sends to through the WAN (flow
//     timers and TCP state), and a WAN ICMP error quoting the forward
//     passes only for a remote endpoint it tracks (RFC 5508 REQ-3/4).
//     Forward state holds at most a quarter of Capacity.
//   - Limits: Capacity (slots), MaxBytes and MaxPerHost. A flow that cannot
//     be created gets Reject (ICMP administratively prohibited); existing
//     flows are untouched.
//   - Unsolicited WAN traffic is dropped and counted by reason.
//   - A first fragment (offset 0, MF) holds the ports and is translated
//     like a whole packet; later fragments get ReasonFragment here: the
//     dataplane forwards them by what their first fragment decided
//     (dataplane/frag.go). IP options are translated normally.
//
// # Memory and expiry
//
// State lives in one open-addressing table (linear probing, backward-shift
// deletion, no tombstones) of 20-byte pointer-free slots sized at New. A slot
// is one of: a flow (5-tuple, external port, TCP state, expiry), a mapping
// (LAN endpoint -> external port, with a flow reference count), an ADF
// permission (LAN endpoint + remote address, only with ADF), a per-host
// flow counter, or a forward state (a forward's LAN endpoint + remote
// endpoint, TCP state, expiry; no references). A new TCP connection usually uses two slots (mapping and
// flow); further flows of the same LAN socket use one. A per-port array
// finds the mapping of an external port in O(1).
//
// # Fast path
//
// A packet of an established flow costs one hash probe each way, in one
// pass over its headers (fast.go): no parsed view, and none of the
// general path's checks that the flow's existence already implies; any
// other packet takes the general path. Outbound probes the flow by its
// LAN 5-tuple. Inbound (TCP/UDP) reads the LAN
// endpoint of the external port from a second per-port array (host bits
// below the LAN prefix and port, 4 bytes a port, kept only when the LAN
// prefix is /16 or longer) and probes the flow with it; the flow must
// carry the packet's external port, so a stale array entry of a freed
// port only sends the packet to the slow path (port array -> mapping slot
// -> flow), which ICMP echo replies and wider LANs always take. Checksums
// are updated incrementally (RFC 1624), the transport checksum in one fold
// for address and port. Outbound and Inbound check the IPv4 header's
// version, lengths and fragment bits themselves (the bounds the rewrite
// needs) but not its checksum: the worker verifies it before calling them
// (hdr.IPv4.HeaderChecksumOK), and an incremental update would keep a bad
// checksum bad anyway.
//
// Expire sweeps at most budget slots per call from a cursor; lookups also
// treat an expired flow or forward state as gone, so timers are exact whatever the sweep
// speed. A mapping lives until its last flow has been removed.
//
// It may import hdr, internal and nic only.
package nat
