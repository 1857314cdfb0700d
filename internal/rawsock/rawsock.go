package rawsock

import "os"

// ErrTimeout matches (errors.Is) the error of a ReadFrame that timed out.
// It is os.ErrDeadlineExceeded, the same value as pppoe.ErrTimeout.
var ErrTimeout = os.ErrDeadlineExceeded
