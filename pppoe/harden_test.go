package pppoe

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
)

// scriptedClient starts a client alone on a sim wire (the test plays the
// AC) and returns it with its node and the Host-Uniq of its PADI.
func scriptedClient(t testing.TB, mod func(*ClientConfig)) (*simNet, *simNode, *Client, []byte) {
	n := newSimNet(t)
	cn := n.conn(1)
	cc := testClientConfig(n)
	if mod != nil {
		mod(&cc)
	}
	c := NewClient(cc, cn, nil)
	cn.c = (*clientCore)(c)
	n.start()
	padi, err := ParseDiscovery(n.framesFrom(cn)[len(n.framesFrom(cn))-1].PPPoE)
	if err != nil || padi.Code != CodePADI {
		t.Fatalf("first frame: %v", err)
	}
	hu, _ := padi.Tag(TagHostUniq)
	return n, cn, c, hu
}

func pado(dst, src [6]byte, name string, hu []byte, cookie []byte) []byte {
	d := Discovery{Code: CodePADO, Tags: []Tag{{TagACName, []byte(name)}, {TagServiceName, nil}, {TagHostUniq, hu}}}
	if cookie != nil {
		d.Tags = append(d.Tags, Tag{TagACCookie, cookie})
	}
	return d.Append(appendEthernet(nil, dst, src, 0, 0, hdr.EtherTypePPPoEDisc))
}

// TestPADOFloodCapped: a flood of PADOs during the PADO wait keeps only
// maxOffers of them; the rest are counted, and the first is still chosen.
func TestPADOFloodCapped(t *testing.T) {
	n, cn, c, hu := scriptedClient(t, nil)
	big := make([]byte, 1000)
	for i := range 200 {
		n.inject(pado(cn.mac, [6]byte{2, 0xac, 0, 0, byte(i >> 8), byte(i)}, "flood", hu, big))
	}
	n.run(time.Millisecond, nil)
	if len(c.offers) != maxOffers || c.st.Counters.OffersDropped != 200-maxOffers || c.st.Counters.PADOReceived != 200 {
		t.Fatalf("%d offers kept, %d dropped", len(c.offers), c.st.Counters.OffersDropped)
	}
	n.run(time.Second, func() bool { return c.st.State == StateRequest })
	if c.chosen.mac != [6]byte{2, 0xac, 0, 0, 0, 0} {
		t.Fatalf("chose %x", c.chosen.mac)
	}
}
