//go:build !linux

package router

// DefaultSocket is the control socket of a router run from a
// configuration file that does not name one: FreeBSD has no /run.
const DefaultSocket = "/var/run/pppfwd.sock"
