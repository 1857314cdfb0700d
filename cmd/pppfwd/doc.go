// Command pppfwd is a userspace PPPoE WAN fast path: it terminates the
// PPPoE session, NATs and shapes both directions on every core. This
// package holds its flags and wiring only.
//
// It may import every room below it (bench, the router, pppoe, the
// control plane, the dataplane and the leaves); nothing imports it.
package main
