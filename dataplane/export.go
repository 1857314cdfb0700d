package dataplane

// What the control plane (dataplane/control) reads of an Engine beyond
// its other exported methods. The control plane imports the dataplane,
// never the other way round.

// Config returns the engine's configuration with its defaults filled in.
// It does not change after New.
func (e *Engine) Config() Config { return e.cfg }

// Neighbors returns the IPv4 neighbour table the workers use now (an
// immutable snapshot; SetNeighbor and DeleteNeighbors publish new ones).
func (e *Engine) Neighbors() *Neighbors { return e.neighbors.Load() }

// LANMask returns the LAN prefix's netmask (0 for a /0).
func (c *Config) LANMask() uint32 { return c.lanMask() }

// TokenBucket allows perSecond events a second and up to burst at once
// (times in ns on any clock that does not go back). Not safe for
// concurrent use.
type TokenBucket struct{ b tokenBucket }

// NewTokenBucket returns a full bucket.
func NewTokenBucket(perSecond, burst int) TokenBucket {
	return TokenBucket{newTokenBucket(perSecond, burst)}
}

// Allow takes a token at now if one is left.
func (t *TokenBucket) Allow(now int64) bool { return t.b.allow(now) }

// PublishDetail makes every worker publish its NAT table's and shapers'
// counters with its Counters (Worker.Detail), off the per-packet path
// (at publishDue). It must be called before Start.
func (e *Engine) PublishDetail() {
	if e.started {
		panic("dataplane: PublishDetail after Start")
	}
	for _, w := range e.workers {
		w.pub.src = &detailSource{nat: w.nat, up: w.up, down: w.down}
	}
}

// Detail returns the worker's last published NAT and shaper counters
// (zero unless Engine.PublishDetail was called before Start).
func (w *Worker) Detail() Detail { return w.pub.loadDetail() }
