package vmlab

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/rawsock"
)

// routerRuleset is the kernel router's nftables configuration in small:
// stateful forwarding, TCP MSS clamping to the route's MTU and masquerade
// on the WAN interface (eth1 here; ppp0 on a PPPoE uplink).
const routerRuleset = `flush ruleset
table inet vmlab {
	chain forward {
		type filter hook forward priority filter; policy accept;
		tcp flags syn tcp option maxseg size set rt mtu
		ct state established,related counter accept
		counter
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth1" counter masquerade
	}
}
`

// buildStaticPppfwd builds cmd/pppfwd without cgo and checks that the
// result has no program interpreter (a static binary runs in the guest
// whatever its libraries).
func buildStaticPppfwd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pppfwd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pppfwd")
	cmd.Dir = filepath.Join("..", "..") // the module root, from bench/vmlab
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/pppfwd: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".interp") != nil {
		t.Fatalf("%s is dynamically linked", bin)
	}
	return bin
}

// TestIntegrationRouterVM boots the VM the way a router under test runs in
// it (two vCPUs, a LAN and a WAN NIC, a static pppfwd binary added at boot)
// and checks what the kernel router needs: per-CPU figures, nftables with
// NAT, the cake, fq_codel and htb qdiscs, and forwarding with masquerade
// between the two taps, both ways.
func TestIntegrationRouterVM(t *testing.T) {
	requireLab(t, false)
	bin := buildStaticPppfwd(t)
	hostVersion, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	const options = "# vmlab test: replaced at boot\n"
	ns, vm := newLabWith(t, Options{
		VCPUs: 2,
		NICs:  []NIC{{Tap: "vmtap0"}, {Tap: "vmtap1"}},
		Extra: []ExtraFile{
			{Path: "/usr/local/sbin/pppfwd", Src: bin, Mode: 0o755},
			{Path: "/etc/ppp/options", Body: []byte(options)}, // replaces the image's
			{Path: "/etc/vmlab/secret", Body: []byte("s3cret\n"), Mode: 0o600},
		},
	})
	run := func(t *testing.T, cmd string) string {
		t.Helper()
		out, err := vm.Run(cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out
	}

	t.Run("cpus", func(t *testing.T) {
		if out := run(t, "nproc"); strings.TrimSpace(out) != "2" {
			t.Errorf("nproc = %q, want 2", out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		before, err := vm.ProcStat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(before) != 2 || before[0].CPU != 0 || before[1].CPU != 1 {
			t.Fatalf("ProcStat = %+v, want cpu0 and cpu1", before)
		}
		// Two busy shells for two seconds: each CPU's user time grows
		// (the scheduler spreads two runnable tasks over two idle CPUs).
		run(t, "for i in 1 2; do (end=$((SECONDS+2)); while [ $SECONDS -lt $end ]; do :; done) & done; wait")
		after, err := vm.ProcStat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range after {
			d := after[i].Sub(before[i])
			t.Logf("cpu%d over the busy loops: %+v", i, d)
			if d.User == 0 || d.Total() == 0 {
				t.Errorf("cpu%d: no user time while two shells spun: %+v", i, d)
			}
		}
	})

	t.Run("extra files", func(t *testing.T) {
		// /usr/local/sbin is first on the guest's PATH; the real ip and tc
		// shadow busybox's applets.
		if got := run(t, "command -v pppfwd ip tc nft"); got != "/usr/local/sbin/pppfwd\n/sbin/ip\n/sbin/tc\n/usr/sbin/nft\n" {
			t.Errorf("command -v pppfwd ip tc nft:\n%s", got)
		}
		got := run(t, "pppfwd version")
		if want := string(hostVersion); got != want {
			t.Errorf("guest pppfwd version = %q, want %q (the host's run of the same binary)", got, want)
		}
		if got := run(t, "stat -c '%a %n' /usr/local/sbin/pppfwd /etc/vmlab/secret /etc/vmlab /usr/local /etc"); got !=
			"755 /usr/local/sbin/pppfwd\n600 /etc/vmlab/secret\n755 /etc/vmlab\n755 /usr/local\n755 /etc\n" {
			t.Errorf("modes:\n%s", got)
		}
		if got := run(t, "cat /etc/vmlab/secret /etc/ppp/options"); got != "s3cret\n"+options {
			t.Errorf("contents = %q", got)
		}
		// The image's files around the extra ones are still there.
		run(t, "test -x /usr/sbin/pppd && test -x /usr/sbin/nft && test -e /etc/passwd")
	})

	t.Run("modules", func(t *testing.T) {
		out := run(t, "cat /vmlab/modules.log; lsmod")
		if strings.Contains(out, "FAILED") {
			t.Errorf("module load failed:\n%s\ndmesg:\n%s", out, run(t, "dmesg | tail -n 40"))
		}
		for _, m := range []string{"nf_tables", "nf_conntrack", "nf_nat", "nft_ct", "nft_chain_nat",
			"nft_nat", "nft_masq", "sch_cake", "sch_htb"} {
			if !strings.Contains(out, "\n"+m+" ") {
				t.Errorf("module %s not loaded; lsmod:\n%s", m, out)
			}
		}
	})

	t.Run("nftables", func(t *testing.T) {
		if err := vm.WriteFile("/etc/vmlab/router.nft", []byte(routerRuleset), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, "nft -f /etc/vmlab/router.nft")
		out := run(t, "nft list ruleset")
		for _, want := range []string{"table inet vmlab", "type nat hook postrouting priority srcnat",
			`oifname "eth1" counter packets 0 bytes 0 masquerade`, "maxseg size set rt mtu",
			"ct state established,related counter"} {
			if !strings.Contains(out, want) {
				t.Errorf("nft list ruleset lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("tc", func(t *testing.T) {
		run(t, "tc qdisc add dev eth0 root cake bandwidth 10000000bit")
		if out := run(t, "tc qdisc show dev eth0"); !strings.Contains(out, "qdisc cake") ||
			!strings.Contains(out, "bandwidth 10Mbit") {
			t.Errorf("after adding cake:\n%s", out)
		}
		run(t, "tc qdisc replace dev eth0 root fq_codel")
		if out := run(t, "tc qdisc show dev eth0"); !strings.Contains(out, "qdisc fq_codel") ||
			strings.Contains(out, "cake") {
			t.Errorf("after replacing with fq_codel:\n%s", out)
		}
		run(t, "tc qdisc replace dev eth0 root handle 1: htb default 10 && "+
			"tc class add dev eth0 parent 1: classid 1:10 htb rate 10mbit && "+
			"tc qdisc add dev eth0 parent 1:10 fq_codel")
		if out := run(t, "tc class show dev eth0"); !strings.Contains(out, "class htb 1:10 root") {
			t.Errorf("htb class:\n%s", out)
		}
		run(t, "tc qdisc del dev eth0 root")
	})

	t.Run("forward and masquerade", func(t *testing.T) {
		lan := openRaw(t, ns, "vmtap0", 0x0800)
		wan := openRaw(t, ns, "vmtap1", 0x0800)
		lanMAC, wanMAC := lan.HardwareAddr(), wan.HardwareAddr()
		vmLAN, vmWAN := DefaultMAC(0), DefaultMAC(1)
		var (
			host     = ip4(10, 1, 0, 2)
			vmWANIP  = ip4(10, 2, 0, 1)
			upstream = ip4(10, 2, 0, 2)
		)
		if err := vm.WriteFile("/etc/vmlab/router.nft", []byte(routerRuleset), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, fmt.Sprintf("ip addr add 10.1.0.1/24 dev eth0 && ip addr add 10.2.0.1/24 dev eth1 && "+
			"echo 1 >/proc/sys/net/ipv4/ip_forward && "+
			"ip neigh replace 10.1.0.2 lladdr %s dev eth0 nud permanent && "+
			"ip neigh replace 10.2.0.2 lladdr %s dev eth1 nud permanent && "+
			"nft -f /etc/vmlab/router.nft && tc qdisc replace dev eth1 root cake bandwidth 100mbit",
			net.HardwareAddr(lanMAC[:]), net.HardwareAddr(wanMAC[:])))
		if out := run(t, "cat /proc/sys/net/ipv4/ip_forward"); out != "1\n" {
			t.Fatalf("ip_forward = %q", out)
		}

		frame := func(dst, src [6]byte, ip []byte) []byte {
			f := append(append(append([]byte{}, dst[:]...), src[:]...), 0x08, 0x00)
			return append(f, ip...)
		}
		// await reads c until an ICMP echo of type typ carrying payload
		// arrives from the VM's NIC vmMAC addressed to dst.
		await := func(c *rawsock.Conn, vmMAC, dst [6]byte, typ uint8, payload string, d time.Duration) (echoMsg, []byte, bool) {
			buf := make([]byte, 2048)
			until := time.Now().Add(d)
			for time.Now().Before(until) {
				n, err := c.ReadFrame(buf, time.Until(until))
				if errors.Is(err, rawsock.ErrTimeout) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				f := buf[:n]
				if n < 34 || !bytes.Equal(f[0:6], dst[:]) || !bytes.Equal(f[6:12], vmMAC[:]) ||
					binary.BigEndian.Uint16(f[12:]) != 0x0800 {
					continue
				}
				if e, ok := parseEcho(f[14:]); ok && e.typ == typ && e.payload == payload {
					return e, append([]byte(nil), f[14:]...), true
				}
			}
			return echoMsg{}, nil, false
		}

		const payload = "vmlab-forward"
		req := icmpEcho(host, upstream, 8, 0x4242, 1, []byte(payload))
		var out echoMsg
		var outIP []byte
		ok := false
		for try := 0; try < 10 && !ok; try++ {
			if err := lan.WriteFrame(frame(vmLAN, lanMAC, req)); err != nil {
				t.Fatal(err)
			}
			out, outIP, ok = await(wan, vmWAN, wanMAC, 8, payload, 2*time.Second)
		}
		if !ok {
			t.Fatalf("the echo request from %s to %s did not leave eth1; guest:\n%s", ipString(host), ipString(upstream),
				run(t, "ip addr; ip route; nft list ruleset; grep -E '^Ip:' /proc/net/snmp"))
		}
		if out.src != vmWANIP || out.dst != upstream {
			t.Errorf("forwarded %s -> %s, want masqueraded to %s -> %s",
				ipString(out.src), ipString(out.dst), ipString(vmWANIP), ipString(upstream))
		}
		if ttl := outIP[8]; ttl != 63 {
			t.Errorf("forwarded TTL %d, want 63", ttl)
		}

		// The reply to the masqueraded address goes back to the LAN host.
		rep := icmpEcho(upstream, vmWANIP, 0, out.id, out.seq, []byte(payload))
		if err := wan.WriteFrame(frame(vmWAN, wanMAC, rep)); err != nil {
			t.Fatal(err)
		}
		back, _, ok := await(lan, vmLAN, lanMAC, 0, payload, 10*time.Second)
		if !ok {
			t.Fatalf("the echo reply was not forwarded back to the LAN; guest:\n%s",
				run(t, "nft list ruleset; grep -E '^Ip:' /proc/net/snmp"))
		}
		if back.src != upstream || back.dst != host || back.id != 0x4242 || back.seq != 1 {
			t.Errorf("reply on the LAN %s -> %s id %#x seq %d, want %s -> %s id 0x4242 seq 1",
				ipString(back.src), ipString(back.dst), back.id, back.seq, ipString(upstream), ipString(host))
		}

		rules := run(t, "nft list ruleset")
		m := regexp.MustCompile(`oifname "eth1" counter packets (\d+) bytes \d+ masquerade`).FindStringSubmatch(rules)
		if m == nil || m[1] == "0" {
			t.Errorf("masquerade rule counted no packet:\n%s", rules)
		}
		qd := run(t, "tc -s qdisc show dev eth1")
		sm := regexp.MustCompile(`qdisc cake [^\n]*\n Sent \d+ bytes (\d+) pkt`).FindStringSubmatch(qd)
		if sm == nil {
			t.Fatalf("no cake statistics on eth1:\n%s", qd)
		}
		if n, _ := strconv.Atoi(sm[1]); n < 1 {
			t.Errorf("cake on eth1 sent %d packets, want the forwarded request:\n%s", n, qd)
		}
	})
}
