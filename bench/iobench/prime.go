package iobench

import (
	"errors"
	"fmt"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// Check verifies the packet a sink received for flow i.
type Check func(i int, p Packet) error

// CheckUpPPPoE is the uplink check for pppfwd: the packet left in the
// synthetic PPPoE session, from its public address, to the flow's remote
// end and port (ICMP: any echo id, the NAT may rewrite it).
func CheckUpPPPoE(flows []Flow) Check {
	s := pipeline.Session()
	return func(i int, p Packet) error {
		if !p.PPPoE || p.Session != s.ID || p.SrcMAC != s.LocalMAC || p.DstMAC != s.PeerMAC {
			return fmt.Errorf("flow %d: not in session %#x from %x to %x (pppoe %v, session %#x, %x -> %x)",
				i, s.ID, s.LocalMAC, s.PeerMAC, p.PPPoE, p.Session, p.SrcMAC, p.DstMAC)
		}
		return checkUp(flows[i], p, s.LocalAddr)
	}
}

// CheckUpMasq is the uplink check for the kernel baseline: a plain IPv4
// frame from the masquerade address pub.
func CheckUpMasq(flows []Flow, pub uint32) Check {
	return func(i int, p Packet) error {
		if p.PPPoE {
			return fmt.Errorf("flow %d: PPPoE frame from the kernel", i)
		}
		return checkUp(flows[i], p, pub)
	}
}

// CheckUpNull is the uplink check for the NullForwarder: the frame
// arrives as the generator sent it (plain IPv4 from the flow's host,
// TTL 64).
func CheckUpNull(flows []Flow) Check {
	return func(i int, p Packet) error {
		f := flows[i]
		if p.PPPoE || p.Proto != f.Proto || p.Src != f.Host || p.Dst != f.Remote || p.TTL != 64 {
			return fmt.Errorf("flow %d: got pppoe %v proto %d %s -> %s TTL %d, want the frame as sent (proto %d %s -> %s TTL 64)",
				i, p.PPPoE, p.Proto, ipStr(p.Src), ipStr(p.Dst), p.TTL, f.Proto, ipStr(f.Host), ipStr(f.Remote))
		}
		return nil
	}
}

func checkUp(f Flow, p Packet, pub uint32) error {
	if p.Proto != f.Proto || p.Src != pub || p.Dst != f.Remote {
		return fmt.Errorf("uplink proto %d %s -> %s, want proto %d %s -> %s", p.Proto, ipStr(p.Src), ipStr(p.Dst),
			f.Proto, ipStr(pub), ipStr(f.Remote))
	}
	if p.TTL != 63 {
		return fmt.Errorf("uplink TTL %d, want 63 (decremented once)", p.TTL)
	}
	if f.Proto == hdr.ProtoICMP {
		if p.ICMPType != hdr.ICMPEcho {
			return fmt.Errorf("uplink ICMP type %d, want echo", p.ICMPType)
		}
	} else if p.DstPort != f.DstPort {
		return fmt.Errorf("uplink dst port %d, want %d", p.DstPort, f.DstPort)
	}
	return nil
}

// CheckDown verifies a downlink packet delivered on the LAN: translated
// back to the flow's host, port (or echo id) and MAC, from its remote end,
// TTL decremented once.
func CheckDown(flows []Flow) Check { return checkDown(flows, 63) }

// CheckDownNull is CheckDown for the NullForwarder: the reply arrives as
// the far end sent it (TTL 64).
func CheckDownNull(flows []Flow) Check { return checkDown(flows, 64) }

func checkDown(flows []Flow, ttl uint8) Check {
	return func(i int, p Packet) error {
		f := flows[i]
		if p.PPPoE || p.Proto != f.Proto || p.Src != f.Remote || p.Dst != f.Host || p.DstMAC != f.HostMAC {
			return fmt.Errorf("flow %d: downlink proto %d %s -> %s (MAC %x, pppoe %v), want proto %d %s -> %s (MAC %x)",
				i, p.Proto, ipStr(p.Src), ipStr(p.Dst), p.DstMAC, p.PPPoE, f.Proto, ipStr(f.Remote), ipStr(f.Host), f.HostMAC)
		}
		if p.TTL != ttl {
			return fmt.Errorf("flow %d: downlink TTL %d, want %d", i, p.TTL, ttl)
		}
		switch f.Proto {
		case hdr.ProtoICMP:
			if p.ICMPType != hdr.ICMPEchoReply || p.SrcPort != f.SrcPort {
				return fmt.Errorf("flow %d: ICMP type %d id %d, want echo reply id %d", i, p.ICMPType, p.SrcPort, f.SrcPort)
			}
		default:
			if p.SrcPort != f.DstPort || p.DstPort != f.SrcPort {
				return fmt.Errorf("flow %d: ports %d -> %d, want %d -> %d", i, p.SrcPort, p.DstPort, f.DstPort, f.SrcPort)
			}
		}
		return nil
	}
}

func ipStr(a uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", byte(a>>24), byte(a>>16), byte(a>>8), byte(a))
}

// FullMatch is the integration tests' classifier: it parses every frame,
// verifies the checksums and the flow's translation with check, and sorts
// frames that are not IPv4 (or PPPoE IPv4) out as Other. The first failure
// is stored in *firstErr when firstErr is not nil.
func FullMatch(flows int, check Check, firstErr *error) Match {
	return func(b []byte) int {
		p, err := Parse(b)
		if errors.Is(err, ErrNotIPv4) {
			return Other
		}
		if err == nil && int(p.ID) >= flows {
			err = fmt.Errorf("IPv4 id %d is no flow index", p.ID)
		}
		if err == nil {
			err = check(int(p.ID), p)
		}
		if err != nil {
			if firstErr != nil && *firstErr == nil {
				*firstErr = err
			}
			return Bad
		}
		return int(p.ID)
	}
}

// Prime sends every flow's uplink frame once from a, waits for each at b
// (checked with upCheck), answers each with Reply, sends the answers from
// b and waits for them at a (checked with downCheck). It returns the
// answers: the downlink frames of the load, which carry whatever external
// port or echo id the translator picked. Frames are sent in chunks so
// that no ring overflows. With retries > 0, frames that did not arrive
// within the timeout are sent again (up to retries times; late
// duplicates are then ignored); with 0 every frame must arrive the first
// time, exactly once.
func Prime(a, b nic.Port, up [][]byte, flows []Flow, upCheck, downCheck Check, timeout time.Duration, retries int) ([][]byte, error) {
	if len(up) != len(flows) {
		return nil, fmt.Errorf("iobench: %d frames for %d flows", len(up), len(flows))
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	down := make([][]byte, len(up))
	if err := exchange(a, b, up, func(i int, p Packet, raw []byte) error {
		if err := upCheck(i, p); err != nil {
			return err
		}
		r, err := Reply(raw)
		down[i] = r
		return err
	}, timeout, retries); err != nil {
		return nil, fmt.Errorf("uplink: %w", err)
	}
	if err := exchange(b, a, down, func(i int, p Packet, _ []byte) error { return downCheck(i, p) }, timeout, retries); err != nil {
		return nil, fmt.Errorf("downlink: %w", err)
	}
	return down, nil
}

// exchange sends frames (frame i carries IPv4 id i) from src in chunks
// and waits until each arrived at dst exactly once (see Prime for
// retries).
func exchange(src, dst nic.Port, frames [][]byte, got func(i int, p Packet, raw []byte) error, timeout time.Duration, retries int) error {
	const chunk = 128
	tx := nic.NewFrames(chunk)
	rx := nic.NewFrames(64)
	seen := make([]bool, len(frames))
	send := func(idx []int) error {
		for i, k := range idx {
			tx[i].SetData(frames[k])
		}
		for k := 0; k < len(idx); {
			n, err := src.Send(0, tx[k:len(idx)])
			if err != nil {
				return err
			}
			k += n
			if n == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		flushTX(src)
		return nil
	}
	for start := 0; start < len(frames); start += chunk {
		end := min(start+chunk, len(frames))
		idx := make([]int, 0, chunk)
		for i := start; i < end; i++ {
			idx = append(idx, i)
		}
		if err := send(idx); err != nil {
			return err
		}
		deadline := time.Now().Add(timeout)
		missing, tries := end-start, 0
		for q := 0; missing > 0; q = (q + 1) % dst.Queues() {
			n, err := dst.Recv(q, rx)
			if err != nil {
				return err
			}
			for _, f := range rx[:n] {
				p, err := Parse(f.Data())
				if errors.Is(err, ErrNotIPv4) {
					continue
				}
				if err != nil {
					return err
				}
				i := int(p.ID)
				if i < start || i >= end {
					if retries > 0 {
						continue // a late duplicate of a resent frame
					}
					return fmt.Errorf("frame with IPv4 id %d outside chunk %d..%d", i, start, end)
				}
				if seen[i] {
					if retries > 0 {
						continue
					}
					return fmt.Errorf("flow %d arrived twice", i)
				}
				seen[i] = true
				missing--
				if err := got(i, p, f.Data()); err != nil {
					return err
				}
			}
			if n == 0 && q == dst.Queues()-1 && time.Now().After(deadline) {
				if tries >= retries {
					return fmt.Errorf("%d of %d frames of chunk %d..%d did not arrive within %v (%d resends)",
						missing, end-start, start, end, timeout, tries)
				}
				tries++
				idx = idx[:0]
				for i := start; i < end; i++ {
					if !seen[i] {
						idx = append(idx, i)
					}
				}
				if err := send(idx); err != nil {
					return err
				}
				deadline = time.Now().Add(timeout)
			} else if n == 0 && q == dst.Queues()-1 {
				_ = dst.Wait(0, time.Millisecond)
			}
		}
	}
	return nil
}
