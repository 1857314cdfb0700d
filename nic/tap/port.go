package tap

import "github.com/pppfwd/pppfwd/nic"

var _ nic.Port = (*Port)(nil)
