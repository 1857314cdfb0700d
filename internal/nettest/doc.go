// Package nettest creates and removes the network namespaces, veth pairs,
// tap devices, addresses, sysctls and nftables rulesets that pppfwd's
// integration tests, the netns lab (bench/lab, bench/iobench) and the VM lab
// (bench/vmlab) need. It is the one place this setup lives.
//
// A Lab records everything it creates and removes it again on Close, in
// reverse order; NewLab ties Close to t.Cleanup. Namespace names carry a
// per-process prefix so parallel test binaries do not clash, and the first
// New of a process deletes the namespaces of labs whose process died before
// its Close ran. Programs the caller runs itself in a namespace (qemu,
// tcpdump) come from NS.Command and die with the test binary.
//
// Everything here needs root (CAP_SYS_ADMIN + CAP_NET_ADMIN) and the `ip`
// command; LoadNft needs `nft`. Tests call RequireRoot / RequireCmd first,
// which skip with the reason.
//
// It may import nic and x/sys/unix only.
package nettest
