package peercred

import (
	"errors"
	"net"
	"runtime"
)

// ErrUnsupported is UID's error on systems without peer credentials.
var ErrUnsupported = errors.New("peercred: peer credentials not supported on " + runtime.GOOS)

// UID returns the effective user id of the process that connected c (as
// the kernel recorded it at connect time; it cannot be forged by the
// peer).
func UID(c *net.UnixConn) (uint32, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uid uint32
	var serr error
	if err := rc.Control(func(fd uintptr) { uid, serr = fdUID(int(fd)) }); err != nil {
		return 0, err
	}
	return uid, serr
}
