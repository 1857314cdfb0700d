package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// fanoutEBPF is PACKET_FANOUT_EBPF: the group's socket-filter program
// returns the queue (modulo the number of sockets).
const fanoutEBPF FanoutMode = unix.PACKET_FANOUT_EBPF

// errOwnerFanout marks failures of the owner program (loading, joining a
// PACKET_FANOUT_EBPF group, attaching): Open then falls back.
var errOwnerFanout = errors.New("afpacket: owner fanout")

// Offsets in struct __sk_buff.
const (
	skbLen         = 0
	skbPktType     = 4
	skbProtocol    = 16
	skbVlanPresent = 20
)

// packetOutgoing is PACKET_OUTGOING (linux/if_packet.h).
const packetOutgoing = 4

// Stack slots of the program (offsets from R10).
const (
	slotSrc   = -8  // IPv4 source address
	slotFrag  = -16 // IPv4 fragment bits (flags & offset)
	slotProto = -24 // endpoint protocol
	slotIHL   = -32 // quoted header's length (ICMP errors)
	slotAddr  = -40 // endpoint address (ICMP errors)
	slotAddr6 = -32 // IPv6 source and destination, 32 bytes up to R10
)

// ownerInsns assembles the fanout program computing OwnerSpec.Queue.
//
// The program runs on the skb as the packet socket's receive path sees
// it: data starts at the network header (the kernel has pulled the
// Ethernet header, whose type is skb->protocol), and len counts the bytes
// from there, padding included, as len(frame[14:]) does in Queue. A
// VLAN tag the kernel stripped shows as vlan_present: Queue sees such a
// frame as type 0x8100, queue 0. Reads use LD_ABS/LD_IND (network byte
// order, any part of a paged skb) only at offsets Queue has checked
// against the header's lengths, so their implicit "return 0" past the
// end never decides a queue; IPv6 addresses are copied with
// bpf_skb_load_bytes and read as little-endian words as FlowHash6 does.
//
// Registers: R6 the skb (LD_ABS/LD_IND need it there); R7, R8, R9 hold
// values across loads, which clobber R0-R5; the endpoint is (R7 proto,
// R8 address, R9 port) at "steer" (forwards, then PortQueue of R9) and
// "hash" (EndpointHash, for packets without an endpoint).
func ownerInsns(s *OwnerSpec) asm.Instructions {
	// skb->protocol is the big-endian field loaded in host order.
	be16 := func(v uint16) int32 { return int32(binary.NativeEndian.Uint16([]byte{byte(v >> 8), byte(v)})) }
	fp := asm.R10
	in := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbPktType, asm.Word),
		asm.JEq.Imm(asm.R2, packetOutgoing, "q0"),
		asm.LoadMem(asm.R2, asm.R6, skbVlanPresent, asm.Word),
		asm.JNE.Imm(asm.R2, 0, "q0"),
		asm.LoadMem(asm.R7, asm.R6, skbLen, asm.Word),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JEq.Imm(asm.R2, be16(etherIPv6), "ipv6"),
		asm.JNE.Imm(asm.R2, be16(etherIPv4), "q0"),

		// IPv4 header: version, IHL, total length, fragment bits.
		asm.JLT.Imm(asm.R7, 20, "q0"),
		asm.LoadAbs(12, asm.Word),
		asm.StoreMem(fp, slotSrc, asm.R0, asm.DWord),
		asm.LoadAbs(0, asm.Byte),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 4),
		asm.JNE.Imm(asm.R1, 4, "fallback"),
		asm.And.Imm(asm.R0, 0xf),
		asm.LSh.Imm(asm.R0, 2),
		asm.Mov.Reg(asm.R8, asm.R0), // R8 = IHL
		asm.JLT.Imm(asm.R8, 20, "fallback"),
		asm.LoadAbs(2, asm.Half),
		asm.Mov.Reg(asm.R9, asm.R0), // R9 = total length
		asm.JLT.Reg(asm.R9, asm.R8, "fallback"),
		asm.JGT.Reg(asm.R9, asm.R7, "fallback"),
		asm.LoadAbs(6, asm.Half),
		asm.And.Imm(asm.R0, 0x3fff),
		asm.StoreMem(fp, slotFrag, asm.R0, asm.DWord),
		asm.And.Imm(asm.R0, 0x1fff),
		asm.JNE.Imm(asm.R0, 0, "fallback"), // a later fragment
		asm.Sub.Reg(asm.R9, asm.R8),        // R9 = transport length
		asm.LoadAbs(9, asm.Byte),
		asm.StoreMem(fp, slotProto, asm.R0, asm.DWord),
		asm.JEq.Imm(asm.R0, 6, "ports"),
		asm.JEq.Imm(asm.R0, 17, "ports"),
		asm.JEq.Imm(asm.R0, 1, "icmp"),
		asm.Ja.Label("fallback"),

		// TCP, UDP: the source port.
		asm.JLT.Imm(asm.R9, 4, "fallback").WithSymbol("ports"),
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Half),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.LoadMem(asm.R7, fp, slotProto, asm.DWord),
		asm.LoadMem(asm.R8, fp, slotSrc, asm.DWord),
		asm.Ja.Label("steer"),

		// ICMP: an echo request's id, or an error's quoted packet.
		asm.JLT.Imm(asm.R9, 8, "fallback").WithSymbol("icmp"),
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Byte),
		asm.JEq.Imm(asm.R0, 8, "echo"),
		asm.JEq.Imm(asm.R0, 3, "error"),
		asm.JEq.Imm(asm.R0, 4, "error"),
		asm.JEq.Imm(asm.R0, 5, "error"),
		asm.JEq.Imm(asm.R0, 11, "error"),
		asm.JEq.Imm(asm.R0, 12, "error"),
		asm.Ja.Label("fallback"),

		asm.LoadInd(asm.R0, asm.R8, 4, asm.Half).WithSymbol("echo"),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.Mov.Imm(asm.R7, 1),
		asm.LoadMem(asm.R8, fp, slotSrc, asm.DWord),
		asm.Ja.Label("steer"),

		// The quoted header starts at R8 (IHL + 8) and has R9 bytes.
		asm.LoadMem(asm.R1, fp, slotFrag, asm.DWord).WithSymbol("error"),
		asm.JNE.Imm(asm.R1, 0, "fallback"), // a first fragment: the quote may be cut
		asm.Add.Imm(asm.R8, 8),
		asm.Sub.Imm(asm.R9, 8),
		asm.JLT.Imm(asm.R9, 20, "fallback"),
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Byte),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 4),
		asm.JNE.Imm(asm.R1, 4, "fallback"),
		asm.And.Imm(asm.R0, 0xf),
		asm.LSh.Imm(asm.R0, 2),
		asm.StoreMem(fp, slotIHL, asm.R0, asm.DWord),
		asm.JLT.Imm(asm.R0, 20, "fallback"),
		asm.Add.Imm(asm.R0, 4),
		asm.JGT.Reg(asm.R0, asm.R9, "fallback"),
		asm.LoadInd(asm.R0, asm.R8, 9, asm.Byte),
		asm.StoreMem(fp, slotProto, asm.R0, asm.DWord),
		asm.LoadInd(asm.R0, asm.R8, 16, asm.Word),
		asm.StoreMem(fp, slotAddr, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, fp, slotProto, asm.DWord),
		asm.LoadMem(asm.R2, fp, slotIHL, asm.DWord),
		asm.JEq.Imm(asm.R1, 6, "qports"),
		asm.JEq.Imm(asm.R1, 17, "qports"),
		asm.JNE.Imm(asm.R1, 1, "fallback"),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R9, "fallback"),
		asm.Add.Reg(asm.R8, asm.R2),
		asm.LoadInd(asm.R0, asm.R8, 4, asm.Half), // the quoted echo id
		asm.Ja.Label("quoted"),
		asm.Add.Reg(asm.R8, asm.R2).WithSymbol("qports"),
		asm.LoadInd(asm.R0, asm.R8, 2, asm.Half), // the quoted destination port
		asm.Mov.Reg(asm.R9, asm.R0).WithSymbol("quoted"),
		asm.LoadMem(asm.R7, fp, slotProto, asm.DWord),
		asm.LoadMem(asm.R8, fp, slotAddr, asm.DWord),
	}
	in = append(in, asm.Ja.Label("steer"))

	// Forwards, in order, then the hash.
	for i, f := range s.Forwards {
		next := fmt.Sprintf("fwd%d", i+1)
		first := asm.JNE.Imm(asm.R7, int32(f.Proto), next)
		if i == 0 {
			first = first.WithSymbol("steer")
		} else {
			first = first.WithSymbol(fmt.Sprintf("fwd%d", i))
		}
		in = append(in,
			first,
			asm.LoadImm(asm.R1, int64(f.Addr), asm.DWord),
			asm.JNE.Reg(asm.R8, asm.R1, next),
			asm.JNE.Imm(asm.R9, int32(f.Port), next),
			asm.Mov.Imm(asm.R0, int32(f.Queue)),
			asm.Return(),
		)
	}
	// PortQueue(R9, Workers).
	last := asm.Mov.Reg(asm.R0, asm.R9)
	if n := len(s.Forwards); n == 0 {
		last = last.WithSymbol("steer")
	} else {
		last = last.WithSymbol(fmt.Sprintf("fwd%d", n))
	}
	in = append(in, last,
		asm.RSh.Imm(asm.R0, 1),
		asm.Mod.Imm(asm.R0, int32(s.Workers)),
		asm.Return(),

		// No endpoint: the source address's hash.
		asm.Mov.Imm(asm.R7, 0).WithSymbol("fallback"),
		asm.LoadMem(asm.R8, fp, slotSrc, asm.DWord),
		asm.Mov.Imm(asm.R9, 0),

		// EndpointHash(R7, R8, R9, Workers).
		asm.Mov.Reg(asm.R0, asm.R8).WithSymbol("hash"),
		asm.LSh.Imm(asm.R0, 24),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.LSh.Imm(asm.R1, 8),
		asm.Or.Reg(asm.R0, asm.R1),
		asm.Or.Reg(asm.R0, asm.R7),
		asm.LoadImm(asm.R1, imm64(golden), asm.DWord),
		asm.Mul.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 29),
		asm.Xor.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R1, imm64(mixA), asm.DWord),
		asm.Mul.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.RSh.Imm(asm.R1, 32),
		asm.Xor.Reg(asm.R0, asm.R1),
		asm.Ja.Label("scale"),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("q0"),
		asm.Return(),

		// IPv6: the header fits, then FlowHash6(source, destination).
		asm.JLT.Imm(asm.R7, 40, "q0").WithSymbol("ipv6"),
		asm.LoadAbs(0, asm.Byte),
		asm.RSh.Imm(asm.R0, 4),
		asm.JNE.Imm(asm.R0, 6, "q0"),
		asm.LoadAbs(4, asm.Half),
		asm.Add.Imm(asm.R0, 40),
		asm.JGT.Reg(asm.R0, asm.R7, "q0"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, fp),
		asm.Add.Imm(asm.R3, slotAddr6),
		asm.Mov.Imm(asm.R4, 32),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "q0"),
	)
	// The LAN host is the source.
	in = append(in, flowHash6Insns(slotAddr6, slotAddr6+16)...)
	in = append(in,
		asm.Mov.Reg(asm.R0, asm.R7),

		// R0 = uint32(R0) * Workers >> 32.
		asm.LSh.Imm(asm.R0, 32).WithSymbol("scale"),
		asm.RSh.Imm(asm.R0, 32),
		asm.Mul.Imm(asm.R0, int32(s.Workers)),
		asm.RSh.Imm(asm.R0, 32),
		asm.Return(),
	)
	return in
}

// imm64 is v's bits as LoadImm's operand.
func imm64(v uint64) int64 { return int64(v) }

// mix64Insns is mix64 on r (R1, R2 scratch).
func mix64Insns(r asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, r),
		asm.RSh.Imm(asm.R1, 30),
		asm.Xor.Reg(r, asm.R1),
		asm.LoadImm(asm.R2, imm64(mixA), asm.DWord),
		asm.Mul.Reg(r, asm.R2),
		asm.Mov.Reg(asm.R1, r),
		asm.RSh.Imm(asm.R1, 27),
		asm.Xor.Reg(r, asm.R1),
		asm.LoadImm(asm.R2, imm64(mixB), asm.DWord),
		asm.Mul.Reg(r, asm.R2),
		asm.Mov.Reg(asm.R1, r),
		asm.RSh.Imm(asm.R1, 31),
		asm.Xor.Reg(r, asm.R1),
	}
}

// newOwnerProgram loads the fanout program for s.
func newOwnerProgram(s *OwnerSpec) (*ebpf.Program, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return loadSocketFilter("pppfwd_owner", ownerInsns(s), "program")
}

// loadSocketFilter loads a fanout program; what names it in the error,
// which wraps errOwnerFanout.
func loadSocketFilter(name string, in asm.Instructions, what string) (*ebpf.Program, error) {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         name,
		Type:         ebpf.SocketFilter,
		License:      "Dual MIT/GPL",
		Instructions: in,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: load %s: %w", errOwnerFanout, what, err)
	}
	return p, nil
}

// attachOwner makes prog the fanout program of the PACKET_FANOUT_EBPF
// group fd belongs to. The group keeps its own reference to prog.
func attachOwner(fd int, prog *ebpf.Program) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT_DATA, prog.FD()); err != nil {
		return fmt.Errorf("%w: PACKET_FANOUT_DATA: %w", errOwnerFanout, err)
	}
	return nil
}

// flowHash6Insns leaves in R7 FlowHash6 of the two IPv6 addresses
// copied to the stack at host and remote (offsets from R10, 16 bytes
// each): R7 = addrWord6(host), R8 = addrWord6(remote), then
// mix64(mix64(R7) ^ R8). It uses R1 and R2.
func flowHash6Insns(host, remote int16) asm.Instructions {
	var in asm.Instructions
	for _, w := range []struct {
		r   asm.Register
		off int16
	}{{asm.R7, host}, {asm.R8, remote}} {
		in = append(in,
			asm.LoadMem(w.r, asm.R10, w.off, asm.DWord),
			asm.HostTo(asm.LE, w.r, asm.DWord),
			asm.LoadMem(asm.R1, asm.R10, w.off+8, asm.DWord),
			asm.HostTo(asm.LE, asm.R1, asm.DWord),
			asm.LoadImm(asm.R2, imm64(golden), asm.DWord),
			asm.Mul.Reg(asm.R1, asm.R2),
			asm.Xor.Reg(w.r, asm.R1),
		)
	}
	in = append(in, mix64Insns(asm.R7)...)
	in = append(in, asm.Xor.Reg(asm.R7, asm.R8))
	return append(in, mix64Insns(asm.R7)...)
}
