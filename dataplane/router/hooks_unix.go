//go:build unix

package router

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the command in a process group of its own and makes
// its cancellation kill the whole group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
