package vmlab

import (
	"os"
	"syscall"
)

// procAttr makes qemu die with the test binary.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func sigterm() os.Signal { return syscall.SIGTERM }
