package tap

import "errors"

// ErrClosed is returned by a Port's methods after Close.
var ErrClosed = errors.New("tap: port closed")

// Config tunes a Port. The zero value is usable.
type Config struct {
	// Queues is the number of queues (default 1; > 1 uses IFF_MULTI_QUEUE).
	Queues int
	// Up brings the interface up after creating it.
	Up bool
	// MTU, if not zero, is set on the interface.
	MTU int
}

// Stats are a tap port's counters beyond nic.Stats.
type Stats struct {
	RxTruncated uint64 // frames longer than nic.MaxData, dropped
	TxErrors    uint64 // frames the kernel refused (write error other than EAGAIN)
}
