// Package router assembles a running pppfwd router from a configuration
// file: ports on the chosen backend, the dataplane engine, the control
// plane and the PPPoE client. cmd/pppfwd's "run" command is a thin shell
// around it, and the namespace lab uses it as is.
//
// It may import pppoe, the control plane, the dataplane and its leaves
// (nat, ndp), shaper, hdr, internal and nic; only bench and cmd import it.
package router
