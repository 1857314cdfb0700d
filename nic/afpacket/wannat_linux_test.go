package afpacket_test

import "github.com/pppfwd/pppfwd/nic/afpacket"

func init() { wanProgram = afpacket.WANProgramForTest }
