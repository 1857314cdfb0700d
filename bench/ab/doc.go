// Package ab writes the configurations of `pppfwd bench ab`, the A/B of
// pppfwd against the in-kernel PPPoE router path on the same box, ports,
// PPPoE account, MTU and shaping: for FreeBSD mpd5 (ng_pppoe), pf NAT and
// a dummynet FQ-CoDel shaper with the netisr tunables, for Linux pppd
// with rp-pppoe.so, an nftables NAT and firewall and a tc shaper (cake,
// or htb with fq_codel), and for either the pppfwd.conf of the pppfwd
// side, with a run-ab.sh that starts one side or the other.
//
// Params holds what both sides share; FreeBSDKernel, LinuxKernel and
// PppfwdConfig turn it into Files. A File of mode 0600 holds the PPPoE
// password, and no other File does. Generation only: nothing here runs
// a command or touches the system.
//
// It may import the router (its defaults: DefaultWorkers), shaper (the
// overhead keywords and FQ-CoDel defaults both sides use) and the
// standard library (its tests also internal/nettest, for a namespace to
// load the ruleset and the tc scripts in); only cmd imports it.
package ab
