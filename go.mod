module github.com/pppfwd/pppfwd

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/gopacket/gopacket v1.7.7
	github.com/panjf2000/ants/v2 v2.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require (
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
)
