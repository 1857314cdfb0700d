package abvm

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/hdr"
)

func arpRequest(sender [6]byte, senderIP, target uint32) []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], sender[:])
	binary.BigEndian.PutUint16(f[12:], hdr.EtherTypeARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], hdr.EtherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1)
	copy(a[8:14], sender[:])
	binary.BigEndian.PutUint32(a[14:], senderIP)
	binary.BigEndian.PutUint32(a[24:], target)
	return f
}

func TestARPReply(t *testing.T) {
	router := [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	host := [6]byte{0x02, 0x60, 0, 0, 0, 7}
	hosts := map[uint32][6]byte{0xc0a80009: host}
	r, ok := arpReply(arpRequest(router, 0xc0a80001, 0xc0a80009), hosts)
	if !ok {
		t.Fatal("no reply for a known host")
	}
	if !bytes.Equal(r[0:6], router[:]) || !bytes.Equal(r[6:12], host[:]) {
		t.Fatalf("reply MACs % x -> % x", r[6:12], r[0:6])
	}
	a := r[14:]
	if op := binary.BigEndian.Uint16(a[6:]); op != 2 {
		t.Fatalf("op %d, want 2 (reply)", op)
	}
	if !bytes.Equal(a[8:14], host[:]) || binary.BigEndian.Uint32(a[14:]) != 0xc0a80009 ||
		!bytes.Equal(a[18:24], router[:]) || binary.BigEndian.Uint32(a[24:]) != 0xc0a80001 {
		t.Fatalf("reply body % x", a[:28])
	}
	if _, ok := arpReply(arpRequest(router, 0xc0a80001, 0xc0a80063), hosts); ok {
		t.Fatal("replied for an unknown host")
	}
	rep := arpRequest(router, 0xc0a80001, 0xc0a80009)
	binary.BigEndian.PutUint16(rep[14+6:], 2)
	if _, ok := arpReply(rep, hosts); ok {
		t.Fatal("answered a reply")
	}
	if _, ok := arpReply(rep[:30], hosts); ok {
		t.Fatal("answered a truncated frame")
	}
}

func FuzzARPReply(f *testing.F) {
	f.Add(arpRequest([6]byte{1, 2, 3, 4, 5, 6}, 1, 0xc0a80009))
	f.Add([]byte{})
	hosts := map[uint32][6]byte{0xc0a80009: {2, 0x60, 0, 0, 0, 7}}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := arpReply(b, hosts)
		if ok && (len(r) != 60 || binary.BigEndian.Uint32(r[14+14:]) != 0xc0a80009) {
			t.Fatalf("reply % x", r)
		}
	})
}

func TestIPIDAndSkipProbes(t *testing.T) {
	flows := iobench.Flows(4, 0, 0)
	up, err := iobench.Uplink(flows[2], 2, 64, [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := ipID(up); !ok || id != 2 {
		t.Fatalf("ipID = %d %v, want 2", id, ok)
	}
	probe, err := iobench.Uplink(flows[0], probeBase+5, 64, [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56})
	if err != nil {
		t.Fatal(err)
	}
	m := skipProbes(iobench.FastMatch(nil, hdr.EtherTypeIPv4, 4))
	if got := m(up); got != 2 {
		t.Fatalf("load frame matched %d, want 2", got)
	}
	if got := m(probe); got != iobench.Other {
		t.Fatalf("probe frame matched %d, want Other", got)
	}
	// The same in a PPPoE session frame.
	pp := make([]byte, 0, len(up)+8)
	pp = append(pp, up[:12]...)
	pp = binary.BigEndian.AppendUint16(pp, hdr.EtherTypePPPoESess)
	pp = append(pp, 0x11, 0, 0, 1, 0, byte(len(up)-14+2), 0x00, 0x21)
	pp = append(pp, up[14:]...)
	if id, ok := ipID(pp); !ok || id != 2 {
		t.Fatalf("PPPoE ipID = %d %v, want 2", id, ok)
	}
	pp[21] = 0x57 // IPv6 in the session: no IPv4 id
	if _, ok := ipID(pp); ok {
		t.Fatal("ipID read a non-IPv4 session frame")
	}
}

func FuzzIPID(f *testing.F) {
	up, _ := iobench.Uplink(iobench.Flows(1, 0, 0)[0], 0, 64, [6]byte{})
	f.Add(up)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0x64})
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ipID(b) })
}

func steps(pps ...float64) []Step {
	var s []Step
	for i, p := range pps {
		s = append(s, Step{OfferedPPS: float64(int(1000) << i), PPS: p, Mbps: p * 64 * 8 / 1e6,
			PerCoreBusy: []float64{p / 10000, 0.1}, LatencyP99Ms: float64(i + 1), LatencyP50Ms: 0.5})
	}
	return s
}

func TestSummarizeMediansAndRatios(t *testing.T) {
	k := summarize([][]Step{steps(2000, 3000, 3100), steps(2000, 2900, 3300), steps(2000, 2000, 2500)}, nil)
	if k.PPS != 3100 || k.PPSMin != 2500 || k.PPSMax != 3300 {
		t.Fatalf("kernel peak %v (%v-%v), want 3100 (2500-3300)", k.PPS, k.PPSMin, k.PPSMax)
	}
	if k.Steps[1].PPS != 2900 || k.Steps[2].PPS != 3100 {
		t.Fatalf("step medians %v %v, want 2900 3100", k.Steps[1].PPS, k.Steps[2].PPS)
	}
	if k.LatencyP99Ms != 3 || math.Abs(k.PerCoreBusy[0]-0.31) > 1e-9 {
		t.Fatalf("overload figures p99 %v busy %v", k.LatencyP99Ms, k.PerCoreBusy)
	}
	p := summarize([][]Step{steps(2000, 4000, 6200, 6000)}, [][]Step{steps(1000, 1000)})
	r := &Report{Kernel: k, PPPFWD: p}
	r.finish()
	if math.Abs(r.RatioPPS-2) > 1e-9 || math.Abs(r.RatioLatencyP99-0.75) > 1e-9 {
		t.Fatalf("ratios pps %v latency %v, want 2 and 0.75", r.RatioPPS, r.RatioLatencyP99)
	}
	if p.ShapedLatencyP99Ms != 2 {
		t.Fatalf("shaped p99 %v, want 2", p.ShapedLatencyP99Ms)
	}
	var b strings.Builder
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "2.00x packets") {
		t.Fatalf("table lacks the ratio:\n%s", b.String())
	}
}

func TestPlotFiles(t *testing.T) {
	k := summarize([][]Step{steps(2000, 3000, 3100)}, [][]Step{steps(1000, 1000, 1000)})
	p := summarize([][]Step{steps(2000, 4000, 6200)}, nil)
	r := &Report{Kernel: k, PPPFWD: p, Size: 64, VCPUs: 2, Runs: 1, Emulated: true}
	dir := t.TempDir()
	files, err := Plot(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("files %v, want 3 figures in PNG and SVG", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(f) {
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("pppfwd")) {
				t.Fatalf("%s is not an SVG with the legend", f)
			}
		}
	}
}
