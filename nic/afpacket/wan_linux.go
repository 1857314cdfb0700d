package afpacket

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// wanInsns assembles the fanout program computing WANSpec.Queue.
//
// As ownerInsns, it runs on the skb with data at the network header (the
// Ethernet header pulled, its type in skb->protocol) and len counting the
// bytes from there, as len(frame[14:]) does in Queue; a tag the kernel
// left in the frame shows as protocol 0x8100 with the tag's last two
// bytes holding the inner type. Reads use LD_ABS/LD_IND only at offsets
// checked against len, so their implicit "return 0" never decides.
//
// Registers: R6 the skb; R7 len; R8 the offset of the header being read
// (PPPoE, then the network header, then the transport header); R9 the
// bytes from the network header on, then the port steered by.
func wanInsns(s *WANSpec) asm.Instructions {
	be16 := func(v uint16) int32 { return int32(binary.NativeEndian.Uint16([]byte{byte(v >> 8), byte(v)})) }
	fp := asm.R10
	in := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbPktType, asm.Word),
		asm.JEq.Imm(asm.R2, packetOutgoing, "q0"),
		asm.LoadMem(asm.R7, asm.R6, skbLen, asm.Word),
		asm.Mov.Imm(asm.R8, 0),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JEq.Imm(asm.R2, be16(etherPPPoESes), "pppoe"),
		asm.JNE.Imm(asm.R2, be16(etherVLAN), "q0"),
		asm.JLT.Imm(asm.R7, 4, "q0"),
		asm.LoadAbs(2, asm.Half),
		asm.JNE.Imm(asm.R0, etherPPPoESes, "q0"),
		asm.Mov.Imm(asm.R8, 4),

		// PPPoE session header (version/type, code, id, length) and
		// the PPP protocol.
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol("pppoe"),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R7, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Byte),
		asm.JNE.Imm(asm.R0, 0x11, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 1, asm.Byte),
		asm.JNE.Imm(asm.R0, 0, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 6, asm.Half),
		asm.Add.Imm(asm.R8, 8), // R8 = network header
		asm.Mov.Reg(asm.R9, asm.R7),
		asm.Sub.Reg(asm.R9, asm.R8), // R9 = bytes from it
		asm.JEq.Imm(asm.R0, pppIPv6, "ipv6"),
		asm.JNE.Imm(asm.R0, pppIPv4, "q0"),

		// IPv4 without options, not a fragment, 8 transport bytes.
		asm.JLT.Imm(asm.R9, 28, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Byte),
		asm.JNE.Imm(asm.R0, 0x45, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 6, asm.Half),
		asm.And.Imm(asm.R0, 0x3fff),
		asm.JNE.Imm(asm.R0, 0, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 9, asm.Byte),
		asm.Add.Imm(asm.R8, 20), // R8 = transport header
		asm.JEq.Imm(asm.R0, 6, "ports"),
		asm.JEq.Imm(asm.R0, 17, "ports"),
		asm.JNE.Imm(asm.R0, 1, "q0"),

		// ICMP: an echo's id, or an error's quoted source.
		asm.LoadInd(asm.R0, asm.R8, 0, asm.Byte),
		asm.JEq.Imm(asm.R0, 0, "echo"),
		asm.JEq.Imm(asm.R0, 8, "echo"),
		asm.JEq.Imm(asm.R0, 3, "error"),
		asm.JEq.Imm(asm.R0, 11, "error"),
		asm.JEq.Imm(asm.R0, 12, "error"),
		asm.Ja.Label("q0"),

		asm.LoadInd(asm.R0, asm.R8, 4, asm.Half).WithSymbol("echo"),
		asm.Ja.Label("steer"),

		// The quoted header at R8+8: no options, 8 bytes after it.
		asm.JLT.Imm(asm.R9, 20+8+28, "q0").WithSymbol("error"),
		asm.LoadInd(asm.R0, asm.R8, 8, asm.Byte),
		asm.JNE.Imm(asm.R0, 0x45, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 8+9, asm.Byte),
		asm.JEq.Imm(asm.R0, 6, "qports"),
		asm.JEq.Imm(asm.R0, 17, "qports"),
		asm.JNE.Imm(asm.R0, 1, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 8+20+4, asm.Half), // the quoted echo id
		asm.Ja.Label("steer"),
		asm.LoadInd(asm.R0, asm.R8, 8+20, asm.Half).WithSymbol("qports"), // the quoted source port
		asm.Ja.Label("steer"),

		// TCP, UDP: the destination port.
		asm.LoadInd(asm.R0, asm.R8, 2, asm.Half).WithSymbol("ports"),
	}
	// The Ports entries, in order, then PortQueue(R9, Workers).
	in = append(in, asm.Mov.Reg(asm.R9, asm.R0).WithSymbol("steer"))
	for i, p := range s.Ports {
		next := fmt.Sprintf("port%d", i+1)
		in = append(in,
			asm.JNE.Imm(asm.R9, int32(p.Port), next),
			asm.Mov.Imm(asm.R0, int32(p.Queue)),
			asm.Return(),
		)
		in = append(in, asm.Mov.Reg(asm.R0, asm.R9).WithSymbol(next))
	}
	if len(s.Ports) == 0 {
		in = append(in, asm.Mov.Reg(asm.R0, asm.R9))
	}
	in = append(in,
		asm.RSh.Imm(asm.R0, 1),
		asm.Mod.Imm(asm.R0, int32(s.Workers)),
		asm.Return(),

		asm.Mov.Imm(asm.R0, 0).WithSymbol("q0"),
		asm.Return(),

		// IPv6: a whole header, no extension header, no ICMPv6 error.
		asm.JLT.Imm(asm.R9, 40, "q0").WithSymbol("ipv6"),
		asm.LoadInd(asm.R0, asm.R8, 6, asm.Byte),
		asm.JEq.Imm(asm.R0, 0, "q0"),
		asm.JEq.Imm(asm.R0, 43, "q0"),
		asm.JEq.Imm(asm.R0, 44, "q0"),
		asm.JEq.Imm(asm.R0, 60, "q0"),
		asm.JNE.Imm(asm.R0, 58, "hash6"),
		asm.JLT.Imm(asm.R9, 41, "q0"),
		asm.LoadInd(asm.R0, asm.R8, 40, asm.Byte),
		asm.JLT.Imm(asm.R0, 128, "q0"),

		// Source and destination to the stack: source at slotAddr6,
		// destination 16 bytes up.
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("hash6"),
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Add.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, fp),
		asm.Add.Imm(asm.R3, slotAddr6),
		asm.Mov.Imm(asm.R4, 32),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "q0"),
	)
	// FlowHash6(destination, source): the LAN host is the destination.
	in = append(in, flowHash6Insns(slotAddr6+16, slotAddr6)...)
	in = append(in,
		// R0 = uint32(R7) * Workers >> 32.
		asm.Mov.Reg(asm.R0, asm.R7),
		asm.LSh.Imm(asm.R0, 32),
		asm.RSh.Imm(asm.R0, 32),
		asm.Mul.Imm(asm.R0, int32(s.Workers)),
		asm.RSh.Imm(asm.R0, 32),
		asm.Return(),
	)
	return in
}

// newWANProgram loads the WAN fanout program for s.
func newWANProgram(s *WANSpec) (*ebpf.Program, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return loadSocketFilter("pppfwd_wan", wanInsns(s), "WAN program")
}

// loadWAN loads the WAN program (a variable for tests of the fallback).
var loadWAN = newWANProgram
