package afxdp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Offsets in struct xdp_md.
const (
	xdpMdData         = 0
	xdpMdDataEnd      = 4
	xdpMdRxQueueIndex = 16
)

// XDP actions.
const (
	xdpPass     = 2
	xdpRedirect = 4
)

// programInsns assembles the XDP program:
//
//	if EtherTypes given:
//	    if data + 14 > data_end: return XDP_PASS
//	    if eth.type not in EtherTypes: return XDP_PASS
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
//
// The low bits of bpf_redirect_map's flags are the action returned when
// the map has no socket for the queue (kernel >= 5.3).
func programInsns(mapFD int, etherTypes []uint16) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	if len(etherTypes) > 0 {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R6, xdpMdData, asm.Word),
			asm.LoadMem(asm.R3, asm.R6, xdpMdDataEnd, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		)
		for _, et := range etherTypes {
			// The load reads the big-endian field in host order.
			v := binary.NativeEndian.Uint16([]byte{byte(et >> 8), byte(et)})
			insns = append(insns, asm.JEq.Imm(asm.R5, int32(v), "redirect"))
		}
		insns = append(insns, asm.Ja.Label("pass"))
	}
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.R6, xdpMdRxQueueIndex, asm.Word).WithSymbol("redirect"),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	)
	if len(etherTypes) > 0 {
		insns = append(insns,
			asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
			asm.Return(),
		)
	}
	return insns
}

// newXSKMap creates the queue -> socket map.
func newXSKMap(queues int) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       "pppfwd_xsks",
		Type:       ebpf.XSKMap,
		KeySize:    4,
		ValueSize:  4,
		MaxEntries: uint32(queues),
	})
	if err != nil {
		return nil, sysErr("create XSKMAP", err, "CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN)")
	}
	return m, nil
}

// newProgram loads the XDP program redirecting to m.
func newProgram(m *ebpf.Map, etherTypes []uint16) (*ebpf.Program, error) {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "pppfwd_xsk",
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: programInsns(m.FD(), etherTypes),
	})
	if err != nil {
		return nil, sysErr("load XDP program", err, "CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN)")
	}
	return p, nil
}

// attach attaches prog to ifindex in the requested mode and returns the
// link and the mode in use.
func attach(prog *ebpf.Program, ifname string, ifindex int, mode Mode) (link.Link, Mode, error) {
	try := func(m Mode) (link.Link, error) {
		flags := link.XDPGenericMode
		if m == ModeNative {
			flags = link.XDPDriverMode
		}
		return link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: flags})
	}
	if mode == ModeAuto || mode == ModeNative {
		l, err := try(ModeNative)
		if err == nil {
			return l, ModeNative, nil
		}
		if mode == ModeNative || isPermission(err) || errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
			return nil, 0, attachErr(ifname, ModeNative, err)
		}
	}
	l, err := try(ModeGeneric)
	if err != nil {
		return nil, 0, attachErr(ifname, ModeGeneric, err)
	}
	return l, ModeGeneric, nil
}

func attachErr(ifname string, m Mode, err error) error {
	switch {
	case isPermission(err):
		return sysErr("attach XDP to "+ifname, err, "CAP_NET_ADMIN")
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
		return fmt.Errorf("afxdp: attach %s XDP to %s: another XDP program is attached: %w", m, ifname, err)
	case errors.Is(err, unix.ENOSPC):
		return fmt.Errorf("%w: %s mode on %s: a veth needs at least as many RX queues as its peer has TX queues: %w",
			ErrXDPRefused, m, ifname, err)
	}
	return fmt.Errorf("%w: %s mode on %s: %w", ErrXDPRefused, m, ifname, err)
}

func isPermission(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}

// sysErr wraps err, naming the capability when it is a permission error.
func sysErr(op string, err error, capability string) error {
	if isPermission(err) {
		return fmt.Errorf("%w: %s: need %s: %w", ErrPermission, op, capability, err)
	}
	return fmt.Errorf("afxdp: %s: %w", op, err)
}
