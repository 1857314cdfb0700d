//go:build freebsd

package pin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func getAffinity(which int, s *cpuSet) error {
	id := int64(selfID)
	_, _, e := unix.Syscall6(unix.SYS_CPUSET_GETAFFINITY, cpuLevelWhich, uintptr(which), uintptr(id),
		unsafe.Sizeof(*s), uintptr(unsafe.Pointer(s)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func setAffinity(s *cpuSet) error {
	id := int64(selfID)
	_, _, e := unix.Syscall6(unix.SYS_CPUSET_SETAFFINITY, cpuLevelWhich, cpuWhichTID, uintptr(id),
		unsafe.Sizeof(*s), uintptr(unsafe.Pointer(s)), 0)
	if e != 0 {
		return e
	}
	return nil
}
