package abvm

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/bench/vmlab"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

func TestDiagLoad(t *testing.T) {
	if os.Getenv("ABDIAG") == "" {
		t.Skip("ABDIAG")
	}
	rate, _ := strconv.ParseFloat(os.Getenv("ABRATE"), 64)
	ns, err := nettest.NewLab(t).NewNS("abd")
	if err != nil {
		t.Fatal(err)
	}
	ns.DisableIPv6()
	o := Options{VCPUs: 2, Binary: os.Getenv("ABBIN"), Logf: t.Logf}
	o.defaults()
	if w, _ := strconv.Atoi(os.Getenv("ABWORKERS")); w > 0 {
		o.Workers = w
	}
	b := &bench{o: o, ns: ns}
	extra, _ := b.guestFiles(guestDir, 0)
	extra = append(extra, vmlab.ExtraFile{Path: guestBinary, Mode: 0o755, Src: o.Binary})
	vm, err := vmlab.Start(context.Background(), vmlab.Options{Netns: ns, NICs: []vmlab.NIC{{Tap: lanTap}, {Tap: wanTap}}, VCPUs: 2, MemoryMB: 512, Extra: extra, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	for _, tap := range []string{lanTap, wanTap} {
		ns.DisableOffloads(tap)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	ac, _ := b.startAC(ctx, &wg)
	flows := iobench.Flows(o.Flows, 0, 0)
	b.startARP(ctx, &wg, flows)
	path := os.Getenv("ABDIAG")
	if err := b.bringUp(ctx, vm, path); err != nil {
		t.Fatal(err)
	}
	sess, err := waitSession(ctx, ac, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.openGen(flows)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	g.down, err = iobench.Prime(g.a, g.b, g.up, flows, checkUp(flows, sess), iobench.CheckDown(flows), 2*time.Second, 10)
	if err != nil {
		t.Fatal(err)
	}
	cmd := `cat /proc/net/dev | grep eth; p=$(pidof pppfwd); [ -n "$p" ] && for t in /proc/$p/task/*; do echo $(cat $t/comm) $(cut -d' ' -f14,15 $t/stat) $(grep ctxt $t/status | tr '\n' ' '); done; [ -n "$p" ] && pppfwd status -json | head -c 3000; cat /proc/interrupts | grep -i virtio; cat /proc/softirqs | grep -i net`
	out, _ := vm.Run(cmd)
	t.Log(out)
	s, err := b.step(ctx, vm, g, rate)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step %+v", *s)
	out, _ = vm.Run(cmd)
	t.Log(out)
}
