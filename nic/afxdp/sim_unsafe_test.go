package afxdp

import "unsafe"

// ptrAt returns a pointer to mem[off] (test helper for shared ring words).
func ptrAt(mem []byte, off uint64) unsafe.Pointer {
	return unsafe.Pointer(&mem[off])
}
