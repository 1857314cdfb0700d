package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// FuzzFragTable runs the IPv4 fragment table against a map with
// timeouts. The table is a bounded cache (a newer datagram takes an older
// one's slot), so it may forget; but get must never return a value that
// was not put for that exact key (source, IP id, protocol), nor one put
// more than fragTimeout ago, and a get right after the put of its key
// (no other put between) must find it.
//
// Each 6-byte operation: kind (bit 0: put, else get; bit 1: a key that
// shares the last put's slot), source selector, IP id (2 bytes),
// protocol selector, time step.
func FuzzFragTable(f *testing.F) {
	f.Add([]byte{1, 0, 0, 7, 0, 0, 0, 0, 0, 7, 0, 1})
	f.Add([]byte{1, 0, 0, 7, 0, 0, 1, 1, 0, 7, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 7, 0, 0})
	f.Add([]byte{1, 0, 0, 7, 0, 0, 0, 0, 0, 7, 0, 255, 0, 0, 0, 7, 0, 255, 0, 0, 0, 7, 0, 255})
	f.Add([]byte{1, 2, 1, 0, 1, 3, 1, 3, 1, 0, 1, 3, 0, 2, 1, 0, 1, 3, 0, 3, 1, 0, 2, 3})
	f.Add([]byte{1, 0, 0, 7, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 2, 1, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0})
	srcs := [...]uint32{remoteIP, remoteIP + 1, ip4(10, 0, 0, 1), 0, 0xffffffff, ip4(198, 51, 100, 1), ip4(1, 2, 3, 4), ip4(203, 0, 113, 200)}
	protos := [...]uint8{hdr.ProtoUDP, hdr.ProtoTCP, hdr.ProtoICMP, 50}
	type key struct {
		src   uint32
		id    uint16
		proto uint8
	}
	type entry struct {
		val uint32
		at  int64
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		var tab fragTable
		model := map[key]entry{}
		var last key
		lastValid := false
		ip := make(hdr.IPv4, hdr.IPv4MinLen)
		ip[0] = 0x45
		now := int64(1e9)
		for n := uint32(0); len(ops) >= 6; ops, n = ops[6:], n+1 {
			k := key{srcs[ops[1]&7] ^ uint32(ops[1]>>3)<<8, binary.BigEndian.Uint16(ops[2:]), protos[ops[4]&3]}
			if ops[4]>>2 != 0 {
				k.proto = ops[4]
			}
			if ops[0]&2 != 0 && lastValid {
				// Another key in the slot of the last put, differing in
				// one field: the direct-mapped table's hard case.
				k = last
				slot := fragSlot(k.src, k.id, k.proto)
				limit := uint32(1 << 13) // a 10-bit slot: found in about 1024 tries
				if ops[1]%3 == 2 {
					limit = 256
				}
				for i := uint32(1); i < limit; i++ {
					c := last
					switch ops[1] % 3 {
					case 0:
						c.src += i * (uint32(ops[2])<<8 | 1)
					case 1:
						c.id += uint16(i)
					case 2:
						c.proto += uint8(i)
					}
					if c != last && fragSlot(c.src, c.id, c.proto) == slot {
						k = c
						break
					}
				}
			}
			// Steps of 0..255 tenths of fragTimeout: inside and past it.
			now += int64(ops[5]) * fragTimeout / 10
			binary.BigEndian.PutUint32(ip[12:], k.src)
			binary.BigEndian.PutUint16(ip[4:], k.id)
			ip[9] = k.proto
			if ops[0]&1 == 1 {
				val := n*0x9e3779b1 | 1
				tab.put(ip, val, now)
				model[k] = entry{val, now}
				last, lastValid = k, true
				continue
			}
			v, ok := tab.get(ip, now)
			m, put := model[k]
			fresh := put && now-m.at <= fragTimeout
			if ok && !put {
				t.Fatalf("get %+v at %d: %#x, never put", k, now, v)
			}
			if ok && v != m.val {
				t.Fatalf("get %+v at %d: %#x, last put %#x", k, now, v, m.val)
			}
			if ok && !fresh {
				t.Fatalf("get %+v at %d: %#x put at %d, past fragTimeout", k, now, v, m.at)
			}
			if !ok && fresh && lastValid && last == k {
				t.Fatalf("get %+v at %d right after its put at %d: missing", k, now, m.at)
			}
		}
	})
}
