//go:build !unix

package router

import "os/exec"

// setProcessGroup: only the command itself is killed on this GOOS.
func setProcessGroup(*exec.Cmd) {}
