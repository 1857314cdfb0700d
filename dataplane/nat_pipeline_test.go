package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
)

// stunProbe sends one UDP datagram from the LAN host's endpoint to dst
// through the pipeline and returns the external port it left with.
func stunProbe(t *testing.T, r *rig, sport uint16, dst uint32, dport uint16) uint16 {
	t.Helper()
	fr := lanFrame(t, pkt{src: hostIP, dst: dst, sport: sport, dport: dport, proto: layers.IPProtocolUDP, payload: 20})
	r.lan.Inject(int(sport)%r.lan.Queues(), fr) // RSS puts flows on any queue
	r.step()
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("probe to %x:%d: %d frames out; drops %v", dst, dport, len(out), r.e.Totals().DropMap())
	}
	ipb := pppoePayload(t, out[0])
	decodeIPv4(t, ipb)
	return be16(ipb[20:])
}

// reaches reports whether a datagram from src:sport to the external port
// reaches the LAN host.
func reaches(t *testing.T, r *rig, src uint32, sport, ext uint16) bool {
	t.Helper()
	r.wan.Inject(0, wanFrame(t, pkt{src: src, dst: pubIP, sport: sport, dport: ext, proto: layers.IPProtocolUDP, payload: 20}))
	r.step()
	return len(r.drainLAN()) == 1
}

// TestSTUNClassificationPipeline classifies the NAT the way RFC 5780
// clients do, through the whole pipeline on two workers: mapping
// behaviour from probes to two server addresses and ports, filtering
// behaviour from replies by addresses and ports the host never sent to.
func TestSTUNClassificationPipeline(t *testing.T) {
	srvA, srvB := ip4(203, 0, 113, 1), ip4(203, 0, 113, 2)
	for _, c := range []struct {
		name      string
		filtering nat.Filtering
		wantEIF   bool
	}{{"default", nat.EndpointIndependent, true}, {"adf", nat.AddressDependent, false}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 2, func(cfg *Config) { cfg.NAT.Filtering = c.filtering })
			for _, sport := range []uint16{3478, 40001, 40002, 40003} {
				// Mapping test I/II/III: same endpoint to A:3478, B:3478, B:3479.
				p1 := stunProbe(t, r, sport, srvA, 3478)
				p2 := stunProbe(t, r, sport, srvB, 3478)
				p3 := stunProbe(t, r, sport, srvB, 3479)
				if p1 != p2 || p2 != p3 {
					t.Fatalf("endpoint %d: mappings %d %d %d: not endpoint-independent", sport, p1, p2, p3)
				}
				if p1 != sport && sport >= 1024 && int(r.e.Owner()[sport]) == r.e.LANOwner(lanFrame(t, pkt{src: hostIP, dst: srvA, sport: sport, dport: 3478, proto: layers.IPProtocolUDP})[14:]) {
					t.Errorf("endpoint %d: port not preserved (got %d) although its worker owns it", sport, p1)
				}
				// Filtering test II: a different address; III: same address, other port.
				other := reaches(t, r, ip4(198, 18, 0, 9), 5000, p1)
				otherPort := reaches(t, r, srvA, 9999, p1)
				if other != c.wantEIF || !otherPort {
					t.Fatalf("endpoint %d: other address reaches %v, other port reaches %v (want %v, true)", sport, other, otherPort, c.wantEIF)
				}
			}
			if c.wantEIF {
				if d := r.e.Totals().Drops[DropNAT]; d != 0 {
					t.Fatalf("drops %v", r.e.Totals().DropMap())
				}
			} else if d := r.e.Totals().Drops[DropNAT]; d == 0 {
				t.Fatal("ADF dropped nothing")
			}
		})
	}
}

// The LAN server of forwardRig's port forward.
var (
	server    = ip4(192, 168, 1, 100)
	serverMAC = [6]byte{2, 0, 0, 0, 0, 0x64}
)

// forwardRig is a two-worker rig with TCP port 443 forwarded to the LAN
// server's port 8443, the server's MAC known.
func forwardRig(t *testing.T) *rig {
	r := newRig(t, 2, func(cfg *Config) {
		cfg.NAT.Forwards = []nat.Forward{{Proto: hdr.ProtoTCP, ExtPort: 443, LANAddr: server, LANPort: 8443}}
	})
	r.e.SetNeighbor(server, serverMAC)
	return r
}

// TestPortForwardPipeline: a TCP forward reaches its LAN server whatever
// worker steering picks, the server's replies leave with the forwarded
// port, and a LAN host reaches the forward through the public address
// (NAT reflection).
func TestPortForwardPipeline(t *testing.T) {
	r := forwardRig(t)
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 50000, dport: 443, proto: layers.IPProtocolTCP, syn: true}))
	r.step()
	in := r.drainLAN()
	if len(in) != 1 {
		t.Fatalf("forwarded SYN: %d frames; drops %v", len(in), r.e.Totals().DropMap())
	}
	p := decodeIPv4(t, in[0][14:])
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	tcp := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if !ip.DstIP.Equal(netIP(server)) || tcp.DstPort != 8443 || [6]byte(in[0][0:6]) != serverMAC {
		t.Fatalf("forward went to %v:%d", ip.DstIP, tcp.DstPort)
	}
	// The server's SYN-ACK, arriving on either LAN queue.
	for q := 0; q < 2; q++ {
		fr := lanFrame(t, pkt{src: server, dst: remoteIP, sport: 8443, dport: 50000, proto: layers.IPProtocolTCP})
		copy(fr[6:12], serverMAC[:])
		r.lan.Inject(q, fr)
		r.step()
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("reply on queue %d: %d frames; drops %v", q, len(out), r.e.Totals().DropMap())
		}
		pp := decodeIPv4(t, pppoePayload(t, out[0]))
		if tc := pp.Layer(layers.LayerTypeTCP).(*layers.TCP); tc.SrcPort != 443 || !pp.Layer(layers.LayerTypeIPv4).(*layers.IPv4).SrcIP.Equal(netIP(pubIP)) {
			t.Fatalf("reply left as port %d", tc.SrcPort)
		}
	}
	// NAT reflection: the LAN host connects to the public address.
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: pubIP, sport: 41000, dport: 443, proto: layers.IPProtocolTCP, syn: true}))
	r.step()
	hp := r.drainLAN()
	if len(hp) != 1 {
		t.Fatalf("reflection: %d frames; drops %v", len(hp), r.e.Totals().DropMap())
	}
	pp := decodeIPv4(t, hp[0][14:])
	if ipl := pp.Layer(layers.LayerTypeIPv4).(*layers.IPv4); !ipl.DstIP.Equal(netIP(server)) || pp.Layer(layers.LayerTypeTCP).(*layers.TCP).DstPort != 8443 {
		t.Fatalf("reflected to %v", ipl.DstIP)
	}
	if n := len(r.drainWAN()); n != 0 {
		t.Fatalf("reflection leaked %d frames to the WAN", n)
	}
}

// NAT reflection needs two hand-overs when the LAN packet arrives
// on the forward's worker j but its LAN endpoint is owned by worker k:
// j -> k (endpoint owner, SNAT) -> j (forward owner, DNAT). Both hand-overs must happen.
func TestHairpinTwoHandovers(t *testing.T) {
	r := forwardRig(t)
	fw := int(r.e.Owner()[443])
	var sport uint16
	for p := uint16(41000); ; p++ {
		if nat.EndpointOwner(hdr.ProtoTCP, hostIP, p, 2) != fw {
			sport = p
			break
		}
	}
	r.lan.Inject(fw, lanFrame(t, pkt{src: hostIP, dst: pubIP, sport: sport, dport: 443, proto: layers.IPProtocolTCP, syn: true}))
	r.step()
	r.step()
	if hp := r.drainLAN(); len(hp) != 1 {
		t.Fatalf("reflection arriving on the forward's worker %d, endpoint owned by %d: %d frames; drops %v",
			fw, 1-fw, len(hp), r.e.Totals().DropMap())
	}
}
