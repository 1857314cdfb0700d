//go:build linux

package ethtool

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ethtool commands and flow types of the classification rule API.
const (
	cmdSRXCLSRLDEL = 0x31
	cmdSRXCLSRLINS = 0x32
	flowTCP4       = 0x01
	flowUDP4       = 0x02
	flagNTuple     = 1 << 27 // ETH_FLAG_NTUPLE
)

// Steering is a set of rules installed on one interface; Remove takes
// them out again.
type Steering struct {
	ifname string
	locs   []uint32
}

// SteerPorts turns the interface's ntuple filters on and installs rules
// at locations 0..len(rules)-1, in order. It installs all or none: on an
// error (a driver without ntuple filters answers EOPNOTSUPP, one with too
// few slots ENOSPC or EINVAL) the rules already installed are removed. It
// needs CAP_NET_ADMIN.
func SteerPorts(ifname string, rules []PortRule) (*Steering, error) {
	fd, err := ifSocket(ifname)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if flags, err := ioctlValue(fd, ifname, cmdGFLAGS, 0); err == nil && flags&flagNTuple == 0 {
		ioctlValue(fd, ifname, cmdSFLAGS, flags|flagNTuple) // a driver without the flag fails the insert below
	}
	s := &Steering{ifname: ifname}
	for i, r := range rules {
		ft := uint32(flowTCP4)
		if r.Proto == 17 {
			ft = flowUDP4
		} else if r.Proto != 6 {
			s.remove(fd)
			return nil, fmt.Errorf("ethtool: steering rule %d: protocol %d, want TCP or UDP", i, r.Proto)
		}
		if r.Queue < 0 {
			s.remove(fd)
			return nil, fmt.Errorf("ethtool: steering rule %d: queue %d", i, r.Queue)
		}
		if err := ioctlRule(fd, ifname, cmdSRXCLSRLINS, ft, r, uint32(i)); err != nil {
			s.remove(fd)
			if errors.Is(err, unix.EOPNOTSUPP) {
				return nil, fmt.Errorf("ethtool: %s has no ntuple flow steering: %w", ifname, err)
			}
			return nil, fmt.Errorf("ethtool: steering rule %d of %d on %s: %w", i, len(rules), ifname, err)
		}
		s.locs = append(s.locs, uint32(i))
	}
	return s, nil
}

// Remove deletes the rules SteerPorts installed.
func (s *Steering) Remove() error {
	if s == nil || len(s.locs) == 0 {
		return nil
	}
	fd, err := ifSocket(s.ifname)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return s.remove(fd)
}

func (s *Steering) remove(fd int) error {
	var first error
	for _, loc := range s.locs {
		if err := ioctlRule(fd, s.ifname, cmdSRXCLSRLDEL, 0, PortRule{}, loc); err != nil && first == nil {
			first = fmt.Errorf("ethtool: remove steering rule %d on %s: %w", loc, s.ifname, err)
		}
	}
	s.locs = nil
	return first
}
