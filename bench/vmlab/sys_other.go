//go:build !linux

package vmlab

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

func sigterm() os.Signal { return os.Kill }
