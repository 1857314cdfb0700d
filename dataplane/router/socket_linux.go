package router

// DefaultSocket is the control socket of a router run from a
// configuration file that does not name one.
const DefaultSocket = "/run/pppfwd.sock"
