// Package afxdp is a nic.Port over Linux AF_XDP sockets.
//
// Each queue q of the port is one AF_XDP socket bound to RX/TX queue q of
// the interface, with its own UMEM (a mmap'd area of fixed-size chunks,
// registered with XDP_UMEM_REG) and its four rings (fill, completion, RX,
// TX) mapped with the offsets from XDP_MMAP_OFFSETS. Ring producer and
// consumer indices are only read and written with atomic loads and stores;
// each side keeps a cached copy of the other side's index and reloads it
// only when the cached view says the ring is full or empty (the gVisor
// pkg/xdp discipline), so a batch costs two atomic operations per ring.
//
// The UMEM of a queue is split in two halves: RX chunks, which live in the
// fill ring and the RX ring and are recycled to the fill ring in one batch
// per Recv, and TX chunks, which live in a free list, the TX ring and the
// completion ring and are reaped from the completion ring by Send. Recv
// copies each received frame into the caller's nic.Frame (after
// nic.Headroom); Send copies each frame into a free TX chunk and kicks the
// kernel with one sendto per batch when the TX ring asks for a wakeup.
//
// An XDP program, assembled at run time with cilium/ebpf's asm package (no
// clang needed), is attached to the interface. It looks the frame's RX queue
// index up in an XSKMAP and redirects to the socket found there; frames of
// queues without a socket, and (when Options.EtherTypes is set) frames of
// other EtherTypes such as ARP, get XDP_PASS and reach the kernel stack.
//
// # Modes and veth
//
// Options.Mode picks native (driver) or generic (skb) XDP; ModeAuto tries
// native first and falls back to generic when the driver refuses it.
// Options.ZeroCopy picks the AF_XDP bind mode; ZeroCopyAuto binds with
// neither XDP_ZEROCOPY nor XDP_COPY, so the kernel uses zero-copy where the
// driver has it and copy mode elsewhere (veth); with generic XDP it binds in
// copy mode. Port.ZeroCopy reports what the kernel chose (XDP_OPTIONS).
//
// Findings on veth (Linux 6.18, the kernel this package is tested on):
//   - Native XDP on a veth needs as many RX queues on it as its peer has TX
//     queues (the kernel refuses with ENOSPC otherwise): create the pair with
//     "numrxqueues N numtxqueues N" on both ends.
//   - AF_XDP on veth only runs in copy mode; ZeroCopyOn fails there.
//   - A frame the peer's stack sent with tx checksumming on (the veth
//     default) reaches the socket with its TCP or UDP checksum unfinished,
//     in native and in generic mode alike: the checksum field holds only
//     the pseudo-header sum (CHECKSUM_PARTIAL), and XDP has no field that
//     says so. Recv marks copy-mode frames nic.RxCsumUnknown for the
//     receiver to check (Port.ChecksumsUnknown).
//   - Frames reach the socket of queue q only if the peer transmitted them on
//     its TX queue q (veth maps peer TX queue to local RX queue one to one).
//   - AF_XDP transmit in copy mode builds an skb per frame and hands it to
//     the veth directly; that needs no XDP program on the peer. (Only
//     XDP_REDIRECT/XDP_TX into a veth, which this package does not do,
//     needs a program or GRO on the peer.)
//   - Busy polling (Options.BusyPoll) is accepted in native mode: the
//     socket's receive queue has veth's NAPI context. The sender's
//     transmit schedules that context on its own CPU, so a busy poll
//     finds it taken and adds a system call per empty poll.
//   - In copy mode the kernel transmits at most a budget of frames per
//     sendto (32 by default) and answers EAGAIN when more are left. Open
//     raises the budget to RingSize with XDP_MAX_TX_SKB_BUDGET where the
//     kernel has it (6.18 here does); elsewhere Send kicks again until the
//     TX ring is drained or the kernel stops making progress.
//
// # Privileges
//
// Opening a port needs CAP_NET_RAW (AF_XDP socket), CAP_BPF plus
// CAP_NET_ADMIN, or CAP_SYS_ADMIN (XSKMAP and XDP program), and
// CAP_NET_ADMIN (attaching XDP). Errors wrap ErrPermission and name the
// capabilities the failing step needs. On other operating systems Open
// returns an error wrapping nic.ErrNotSupported.
package afxdp
