// Package share is `pppfwd bench share`: does a busy router share the
// CPU? In the namespace lab, bulk TCP runs from the LAN host through the
// router to the Internet host while CPU-bound processes (one per CPU,
// plain busy loops) run on the same cores; it reports the TCP goodput
// and the share of the CPUs the busy loops got, each against its run
// alone, for each workers.poll policy asked for.
//
// The lab's process holds the router, the lab's access concentrator and
// upstream relay, and the TCP endpoints: they compete with the busy
// loops together. This machine's kernel has no PPPoE, so there is no
// kernel path to run the same test against here (`bench ab` runs that
// in the VM).
//
// It may import the router, pppoe, the control plane, the dataplane,
// shaper, hdr, internal and nic, and other bench packages (the lab); only
// cmd imports it.
package share
