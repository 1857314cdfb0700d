package ndp

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

// knownErr reports whether err is one of Parse's documented errors.
func knownErr(err error) bool {
	switch err {
	case ErrTruncated, ErrNotIPv6, ErrExtHeader, ErrNotICMPv6, ErrChecksum:
		return true
	}
	_, ok := err.(invalidError)
	return ok && errors.Is(err, ErrInvalid)
}

// sameFields compares two Messages but for Body.
func sameFields(a, b Message) bool {
	a.Body, b.Body = nil, nil
	return reflect.DeepEqual(a, b)
}

// FuzzParse: Parse never panics; errors are the documented ones with a
// zero Message; what it accepts has a valid checksum and a Body inside
// the frame; an accepted NS or NA rebuilt from its fields parses to the
// same fields (and gopacket sees the same target), and the public
// builders' answers to it parse as what they promise.
func FuzzParse(f *testing.F) {
	for _, fx := range allFixtures() {
		f.Add(clone(fx), false)
	}
	f.Add(redirectFrame(), true)
	f.Add(AppendUnsolicitedNA(nil, rtrLL, rtrMAC, true), true)
	f.Add(AppendNS(nil, hdr.Addr6{}, rtrLL, rtrMAC), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, frame []byte, fix bool) {
		// With fix, the payload length and checksum are made to fit
		// whatever the fuzzer wrote, so it gets past them to the ND
		// checks (on a copy: the engine's input must not change).
		if fix && len(frame) >= headersLen+4 && len(frame) <= headersLen+0xffff {
			frame = fixup(clone(frame))
		}
		m, err := Parse(frame)
		if err != nil {
			if !knownErr(err) {
				t.Fatalf("undocumented error %v", err)
			}
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("Message not zero on error: %+v", m)
			}
			return
		}
		if len(m.Body) < 4 || len(frame) < headersLen+len(m.Body) || &m.Body[0] != &frame[headersLen] {
			t.Fatalf("Body of %d bytes not inside the frame", len(m.Body))
		}
		if !hdr.ICMP6ChecksumOK(m.Body, &m.Src, &m.Dst) || m.Type != m.Body[0] || hdr.IsMulticast6(&m.Src) {
			t.Fatalf("accepted %+v", m)
		}
		mac := [6]byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
		unspec := isUnspecified(&m.Src)
		switch m.Type {
		case hdr.ICMP6NeighborSol:
			var sll *[6]byte
			if m.HasSourceLL {
				sll = &m.SourceLL
			}
			again := mustParse(t, appendNS(nil, m.DstMAC, m.SrcMAC, &m.Src, &m.Dst, &m.Target, sll))
			if !sameFields(again, m) {
				t.Fatalf("NS rebuilt as %+v, was %+v", again, m)
			}
			na := mustParse(t, AppendNA(nil, &m, m.Target, mac, true))
			wantDst := m.Src
			if unspec {
				wantDst = AllNodes()
			}
			if na.Type != hdr.ICMP6NeighborAdv || na.Target != m.Target || na.Dst != wantDst || na.Src != m.Target ||
				!na.Router || na.Solicited == unspec || !na.Override || !na.HasTargetLL || na.TargetLL != mac {
				t.Fatalf("NA %+v answering %+v", na, m)
			}
			ns := mustParse(t, AppendNS(nil, m.Src, m.Target, mac))
			if ns.Type != hdr.ICMP6NeighborSol || ns.Target != m.Target || ns.HasSourceLL == unspec || !IsSolicitedNode(&ns.Dst) {
				t.Fatalf("NS %+v for %+v", ns, m)
			}
			checkGopacketTarget(t, frame, m.Target)
		case hdr.ICMP6NeighborAdv:
			var flags uint8
			if m.Router {
				flags |= naRouter
			}
			if m.Solicited {
				flags |= naSolicited
			}
			if m.Override {
				flags |= naOverride
			}
			var tll *[6]byte
			if m.HasTargetLL {
				tll = &m.TargetLL
			}
			again := mustParse(t, appendNA(nil, m.DstMAC, m.SrcMAC, &m.Src, &m.Dst, &m.Target, flags, tll))
			if !sameFields(again, m) {
				t.Fatalf("NA rebuilt as %+v, was %+v", again, m)
			}
			na := mustParse(t, AppendUnsolicitedNA(nil, m.Target, mac, m.Router))
			if na.Target != m.Target || na.Router != m.Router || na.Solicited || !na.Override || na.TargetLL != mac {
				t.Fatalf("unsolicited NA %+v for %+v", na, m)
			}
			checkGopacketTarget(t, frame, m.Target)
		case hdr.ICMP6EchoRequest:
			src := hostIP
			rep := mustParse(t, AppendEchoReply(nil, &m, src, mac))
			if rep.Type != hdr.ICMP6EchoReply || rep.EchoID != m.EchoID || rep.EchoSeq != m.EchoSeq ||
				rep.Dst != m.Src || rep.DstMAC != m.SrcMAC || !bytes.Equal(rep.Body[8:], m.Body[8:]) {
				t.Fatalf("echo reply %+v to %+v", rep, m)
			}
		case hdr.ICMP6RouterAdv:
			if !hdr.IsLinkLocal6(&m.Src) || m.HopLimit != 255 {
				t.Fatalf("accepted RA %+v", m)
			}
			_, _ = ParseRA(m.Body)
		}
	})
}

// checkGopacketTarget: gopacket decodes frame's NS or NA with target.
func checkGopacketTarget(t *testing.T, frame []byte, target hdr.Addr6) {
	t.Helper()
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
	if e := p.ErrorLayer(); e != nil {
		t.Fatalf("gopacket: %v", e.Error())
	}
	var got []byte
	switch l := p.Layer(layers.LayerTypeICMPv6NeighborSolicitation).(type) {
	case *layers.ICMPv6NeighborSolicitation:
		got = l.TargetAddress
	}
	if l, ok := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement); ok {
		got = l.TargetAddress
	}
	if !bytes.Equal(got, target[:]) {
		t.Fatalf("gopacket target %x, we parsed %x", got, target)
	}
}

// FuzzParseRA: ParseRA never panics; errors match ErrInvalid with a zero
// RA; an RA it accepts, built again with AppendRA, passes Parse and
// decodes to the same RA (less what AppendRA normalizes: prefixes masked
// to their length, router lifetime and reachable time capped).
func FuzzParseRA(f *testing.F) {
	f.Add(clone(raFixture[headersLen:]))
	ra := testRA()
	ra.Prefixes[0].Prefix[15] = 1
	ra.Managed, ra.RouterLifetime, ra.ReachableTime, ra.RetransTimer = true, 0, time.Hour, time.Second
	f.Add(clone(AppendRA(nil, &ra)[headersLen:]))
	f.Add([]byte{hdr.ICMP6RouterAdv, 0, 0, 0, 64, 0xc0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		ra, err := ParseRA(body)
		if err != nil {
			if _, ok := err.(invalidError); !ok || !errors.Is(err, ErrInvalid) {
				t.Fatalf("undocumented error %v", err)
			}
			if !reflect.DeepEqual(ra, RA{}) {
				t.Fatalf("RA not zero on error: %+v", ra)
			}
			return
		}
		if len(body) > 0xffff-256 {
			return // AppendRA might have to cut the lists
		}
		ra.Src = rtrLL
		m, err := Parse(AppendRA(nil, &ra))
		if err != nil || m.Type != hdr.ICMP6RouterAdv {
			t.Fatalf("rebuilt RA: %v, %+v", err, m)
		}
		got, err := ParseRA(m.Body)
		if err != nil {
			t.Fatalf("ParseRA of the rebuilt RA: %v", err)
		}
		want := ra
		want.Src = hdr.Addr6{}
		want.RouterLifetime = min(want.RouterLifetime, MaxRouterLifetime)
		want.ReachableTime = min(want.ReachableTime, MaxReachableTime)
		if want.Prefixes != nil {
			want.Prefixes = append([]PrefixInfo(nil), want.Prefixes...)
			for i := range want.Prefixes {
				want.Prefixes[i].Prefix = maskPrefix(want.Prefixes[i].Prefix, int(want.Prefixes[i].Bits))
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("rebuilt\n%+v\nwant\n%+v", got, want)
		}
	})
}
