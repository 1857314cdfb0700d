package ifmtu

import "net"

// Get returns interface name's MTU.
func Get(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if oe, ok := err.(*net.OpError); ok {
		return 0, oe.Err // "no such network interface", without "route ip+net"
	}
	if err != nil {
		return 0, err
	}
	return ifi.MTU, nil
}
