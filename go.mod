module github.com/pppfwd/pppfwd

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/gopacket/gopacket v1.7.7
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)
