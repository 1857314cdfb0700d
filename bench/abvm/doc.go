// Package abvm runs `pppfwd bench ab` live: the A/B of pppfwd against the
// kernel's own PPPoE router path (pppd with rp-pppoe.so, ppp_generic,
// nftables masquerade, tc shaping), with the router under test in the
// lab VM (bench/vmlab: Debian's kernel under qemu TCG) and everything
// else on the host side of the VM's two tap devices:
//
//	generator (LAN hosts) --tap ablan-- [VM: router under test] --tap abwan-- AC + generator (Internet side)
//
// The access concentrator is pppfwd's own (pppoe.Server) on a raw socket
// that admits PPPoE discovery and PPP control frames only; the session's
// data is the generator's: its WAN-side port receives the uplink inside
// the session and answers each flow in the same session (iobench.Reply),
// so no userspace forwarding stands between the router and the sinks. An
// ARP responder answers for the generator's LAN hosts, so both routers
// resolve them the same way.
//
// Each run boots one VM per path (same image, vCPUs, memory, taps and
// MACs), brings the path up (kernel: the bench/ab Linux configuration;
// pppfwd: the bench/ab pppfwd.conf with the binary that runs the bench
// copied into the VM), primes every flow (each translation checked), then
// offers the same ladder of rates in both directions, unshaped and, when
// asked, shaped. During each step a probe measures the round trip through
// the router every 10 ms (an uplink frame reflected at the WAN side as
// its reply) and the guest's /proc/stat gives each vCPU's busy and
// softirq shares. The generator's and the host's other CPU shares are
// reported so that a step limited by the host, not the router, shows.
//
// After each ladder the TCP step runs iperf3 through the router: the
// client is the lab namespace's own stack on the LAN tap, the server a
// namespace beyond the AC whose TAP stands for the AC's upstream, with a
// relay moving the session's iperf3 segments between the WAN tap and
// that TAP; the probe and the CPU figures cover each transfer as they
// cover a step. pppfwd cannot switch its shaper on by reload, so it is
// restarted shaped (a new session, the flows primed again).
//
// Figures are medians over runs with min and max. Under TCG absolute
// rates mean little; the report leads with the ratios.
//
// With Options.Where "host" the router under test runs in a network
// namespace of this host instead (for a kernel with PPPoE: the same A/B
// without emulation), its ports veth ends whose peers stand where the
// taps stood, everything else unchanged. Its commands run in the
// namespace (ip netns exec; the kernel path's pppd with a private copy of
// /etc/ppp bound over it, so that its secrets stay out of this host's),
// its files are in a private directory with pppfwd's control socket and
// pppd's log beside them, and its per-core figures are this host's
// /proc/stat of the CPUs it runs on (Options.HostCPUs: its commands are
// pinned there, RPS steers its ports' receive work there, and the
// generator takes a CPU left over). Each run makes a new namespace per
// path, as it boots a new VM. The kernel path needs PPPoE in this
// host's kernel (HostAvailable says what is missing); the pppfwd path
// needs none, and Options.Paths may run it alone.
//
// It may import the router, pppoe, hdr, internal, nic and other bench
// packages (vmlab, iobench, ab); only cmd imports it.
package abvm
