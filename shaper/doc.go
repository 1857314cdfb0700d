// Package shaper is pppfwd's FQ-CoDel scheduler (RFC 8290, with RFC 8289
// CoDel per flow queue) and a rate limiter whose rate is shared by every
// worker: a global token bucket from which workers lease credit in chunks
// (see Bucket), each taking a share weighted by its bulk flows (or their
// hosts), so the flows of all workers share the rate as one fq_codel's
// would (a host with flows on several workers counts in each). It depends
// on nothing of pppfwd's but a Clock, and handles packets through the Ops
// the caller provides.
//
// Behaviour follows Linux fq_codel (defaults, new/old flow lists, drop
// batches from the fattest queue on overlimit) plus, from sch_cake, link
// overhead compensation (Overhead, ParseOverhead), a DRR quantum scaled
// with the rate (RateQuantum, unless Config.Quantum is set) and per-host
// fairness (Config.HostFair: a flow's DRR quantum is divided by the number
// of active flows of its host, so a host with 100 flows gets what a host
// with one gets). Not built: diffserv tins, the ACK filter, ce_threshold.
//
// An FQCoDel is used by one goroutine; only the Bucket is shared. Nothing is
// allocated per packet: packets sit in slots preallocated for Config.Limit
// packets, linked by index.
//
// It may import hdr, internal and nic only.
package shaper
