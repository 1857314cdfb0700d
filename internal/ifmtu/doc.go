// Package ifmtu reads and sets a network interface's MTU: the current one
// (every GOOS), the largest its driver accepts (Linux: IFLA_MAX_MTU over
// rtnetlink), and a new one (the SIOCSIFMTU ioctl on Linux and FreeBSD).
// The router raises the WAN port's MTU with it for RFC 4638 baby jumbo
// frames.
//
// It may import nic and x/sys/unix only.
package ifmtu
