//go:build linux && !pcap

package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	xbpf "golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/pulsarscope/pulsarscope/capture/bpf"
)

// LiveBackend names the backend of this build.
const LiveBackend = "afpacket"

// Live is a live capture on an AF_PACKET socket with a TPACKET_V3 ring.
// ReadRaw must be called from one goroutine; Stop and Stats may be called
// from any.
type Live struct {
	name     string
	fd       int
	efd      int // eventfd written by Stop, to wake poll at once
	ring     []byte
	blockSz  int
	nBlocks  int
	cooked   bool // SOCK_DGRAM: an SLL2 header is built in front of each packet
	lt       layers.LinkType
	timeout  int // poll timeout, ms
	idle     func()
	stopped  atomic.Bool
	drainEnd time.Time // set at the first ReadRaw after Stop
	closed   bool
	block    int    // current block
	blk      []byte // current block while it is ours, else nil
	left     int    // packets left in blk
	off      int    // offset of the next packet in blk
	statsMu  sync.Mutex
	stats    LiveStats
	statsErr error
}

// Layout of TPACKET_V3 (linux/if_packet.h).
const (
	tpBlockStatusOff  = 8  // tpacket_block_desc.hdr.bh1.block_status
	tpBlockNumPktsOff = 12 // .num_pkts
	tpBlockFirstOff   = 16 // .offset_to_first_pkt
	tp3HdrLen         = 48 // sizeof(struct tpacket3_hdr), TPACKET_ALIGNed
	sllLen            = 20 // sizeof(struct sockaddr_ll)
	sll2HdrLen        = 20 // LINKTYPE_LINUX_SLL2 header
	vlanTagLen        = 4
	blockSize         = 1 << 20
)

// OpenLive opens a live capture (see LiveOptions). Errors are *Error
// naming the interface, wrapping ErrPermission, ErrNoInterface, a filter
// error (bpf.ErrUnsupported) or the system's error.
func OpenLive(opts LiveOptions) (*Live, error) {
	opts.defaults()
	name := opts.Interface
	fail := func(err error) (*Live, error) { return nil, &Error{File: name, Err: err} }
	ifindex := 0
	cooked := true
	if name != "any" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return fail(fmt.Errorf("%w %q (pulsarscope capture -D lists them)", ErrNoInterface, name))
		}
		ifindex = ifi.Index
		switch arphrd(name) {
		case unix.ARPHRD_ETHER, unix.ARPHRD_LOOPBACK:
			cooked = false
		}
	}
	// The user filter first: a syntax error needs no privileges.
	var user bpf.Expr
	if opts.Filter != "" {
		e, err := bpf.Parse(opts.Filter)
		if err != nil {
			return fail(err)
		}
		user = e
	}
	var expr bpf.Expr = bpf.TCPPorts(opts.Ports...)
	if user != nil {
		expr = bpf.And{L: expr, R: user}
	}
	link := bpf.Ethernet
	if cooked {
		link = bpf.Network
	}
	prog, err := bpf.Compile(expr, link, bpf.Options{Snaplen: uint32(opts.Snaplen), DropOutgoingOn: loopbackIndexes()})
	if err != nil {
		return fail(err)
	}

	typ := unix.SOCK_RAW
	if cooked {
		typ = unix.SOCK_DGRAM
	}
	// Protocol 0: no packet is queued before bind, so none escapes the filter.
	fd, err := unix.Socket(unix.AF_PACKET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return fail(ErrPermission)
		}
		return fail(fmt.Errorf("packet socket: %w", err))
	}
	l := &Live{name: name, fd: fd, efd: -1, cooked: cooked, lt: LinkTypeEthernet,
		timeout: int(opts.PollTimeout / time.Millisecond), idle: opts.Idle}
	l.stats.Backend = LiveBackend
	l.stats.Start = time.Now()
	if cooked {
		l.lt = LinkTypeSLL2
	}
	if l.timeout < 1 {
		l.timeout = 1
	}
	if err := l.setup(opts, ifindex, prog); err != nil {
		l.Close()
		return fail(err)
	}
	return l, nil
}

func (l *Live) setup(opts LiveOptions, ifindex int, prog []bpfRaw) error {
	if err := unix.SetsockoptInt(l.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("TPACKET_V3 not available: %w", err)
	}
	// Room in front of each packet for the header ReadRaw builds (SLL2) or
	// the VLAN tag it puts back.
	reserve := vlanTagLen
	if l.cooked {
		reserve = sll2HdrLen
	}
	if err := unix.SetsockoptInt(l.fd, unix.SOL_PACKET, unix.PACKET_RESERVE, reserve); err != nil {
		return fmt.Errorf("PACKET_RESERVE: %w", err)
	}
	l.blockSz = blockSize
	l.nBlocks = max(opts.BufferSize/blockSize, 2)
	req := unix.TpacketReq3{
		Block_size:     uint32(l.blockSz),
		Block_nr:       uint32(l.nBlocks),
		Frame_size:     2048,
		Frame_nr:       uint32(l.blockSz / 2048 * l.nBlocks),
		Retire_blk_tov: uint32(l.timeout),
	}
	if err := unix.SetsockoptTpacketReq3(l.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", l.nBlocks, l.blockSz, err)
	}
	ring, err := unix.Mmap(l.fd, 0, l.blockSz*l.nBlocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap of the packet ring: %w", err)
	}
	l.ring = ring
	if err := attachFilter(l.fd, prog); err != nil {
		return fmt.Errorf("attaching the BPF filter: %w", err)
	}
	if err := unix.Bind(l.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		if errors.Is(err, unix.ENETDOWN) {
			return fmt.Errorf("interface is down: %w", err)
		}
		return fmt.Errorf("bind: %w", err)
	}
	if !opts.NoPromiscuous && ifindex != 0 && l.lt == LinkTypeEthernet && !isLoopback(ifindex) {
		mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(l.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fmt.Errorf("promiscuous mode (-p disables it): %w", err)
		}
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	l.efd = efd
	return nil
}

// LinkType returns the link type of the frames ReadRaw returns: Ethernet
// on Ethernet and loopback interfaces, Linux SLL2 on "any" and others.
func (l *Live) LinkType() layers.LinkType { return l.lt }

// Name returns the interface name.
func (l *Live) Name() string { return l.name }

// Stop makes ReadRaw return io.EOF once it has returned the packets the
// kernel already holds (at most about two poll timeouts later). Safe for
// concurrent use, and more than once.
func (l *Live) Stop() {
	if l.stopped.CompareAndSwap(false, true) {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(l.efd, one[:])
	}
}

func (l *Live) status(b int) *uint32 {
	return (*uint32)(unsafe.Pointer(&l.ring[b*l.blockSz+tpBlockStatusOff]))
}

// ReadRaw returns the next packet; see RawSource. It returns io.EOF after
// Stop. The data is in the kernel ring and valid until the next call.
func (l *Live) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	for {
		if l.stopped.Load() {
			// Drain what the kernel holds: the block being filled is handed
			// over at the latest one retire timeout after the last packet.
			now := time.Now()
			if l.drainEnd.IsZero() {
				l.drainEnd = now.Add(2*time.Duration(l.timeout)*time.Millisecond + 20*time.Millisecond)
			}
			if now.After(l.drainEnd) {
				l.release()
				return nil, gopacket.CaptureInfo{}, l.lt, io.EOF
			}
		}
		if l.blk != nil && l.left == 0 {
			l.release()
		}
		if l.blk == nil {
			if atomic.LoadUint32(l.status(l.block))&unix.TP_STATUS_USER == 0 {
				if err := l.wait(); err != nil {
					return nil, gopacket.CaptureInfo{}, l.lt, err
				}
				continue
			}
			l.blk = l.ring[l.block*l.blockSz : (l.block+1)*l.blockSz]
			l.left = int(binary.NativeEndian.Uint32(l.blk[tpBlockNumPktsOff:]))
			l.off = int(binary.NativeEndian.Uint32(l.blk[tpBlockFirstOff:]))
			continue
		}
		data, ci, ok := l.packet()
		if ok {
			return data, ci, l.lt, nil
		}
	}
}

// packet decodes the packet at l.off and advances; ok is false for a
// packet that makes no sense (skipped: the rest of the block is dropped).
func (l *Live) packet() ([]byte, gopacket.CaptureInfo, bool) {
	var ci gopacket.CaptureInfo
	b, off := l.blk, l.off
	if off < 0 || off+tp3HdrLen+sllLen > len(b) {
		l.left = 0
		return nil, ci, false
	}
	h := b[off:]
	next := int(binary.NativeEndian.Uint32(h[0:]))
	sec := binary.NativeEndian.Uint32(h[4:])
	nsec := binary.NativeEndian.Uint32(h[8:])
	snap := int(binary.NativeEndian.Uint32(h[12:]))
	wire := int(binary.NativeEndian.Uint32(h[16:]))
	st := binary.NativeEndian.Uint32(h[20:])
	mac := int(binary.NativeEndian.Uint16(h[24:]))
	l.left--
	if next == 0 {
		l.left = 0
	} else {
		l.off += next
	}
	reserve := vlanTagLen
	if l.cooked {
		reserve = sll2HdrLen
	}
	if mac < tp3HdrLen+sllLen+reserve || off+mac+snap > len(b) {
		return nil, ci, false
	}
	data := h[mac : mac+snap]
	ci.Timestamp = time.Unix(int64(sec), int64(nsec))
	if l.cooked {
		// Build the LINKTYPE_LINUX_SLL2 header from the sockaddr_ll.
		sll := h[tp3HdrLen:]
		hdr := h[mac-sll2HdrLen : mac]
		copy(hdr[0:2], sll[2:4]) // protocol, network byte order already
		hdr[2], hdr[3] = 0, 0
		binary.BigEndian.PutUint32(hdr[4:], binary.NativeEndian.Uint32(sll[4:8]))
		binary.BigEndian.PutUint16(hdr[8:], binary.NativeEndian.Uint16(sll[8:10]))
		hdr[10] = sll[10] // packet type
		hdr[11] = sll[11] // address length
		copy(hdr[12:20], sll[12:20])
		data = h[mac-sll2HdrLen : mac+snap]
		wire += sll2HdrLen
	} else if st&unix.TP_STATUS_VLAN_VALID != 0 && snap >= 12 {
		// The NIC stripped the 802.1Q tag: put it back after the MACs.
		tci := binary.NativeEndian.Uint32(h[32:])
		tpid := uint16(0x8100)
		if st&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = binary.NativeEndian.Uint16(h[36:])
		}
		start := mac - vlanTagLen
		copy(h[start:start+12], h[mac:mac+12])
		binary.BigEndian.PutUint16(h[start+12:], tpid)
		binary.BigEndian.PutUint16(h[start+14:], uint16(tci))
		data = h[start : mac+snap]
		wire += vlanTagLen
	}
	ci.CaptureLength = len(data)
	ci.Length = max(wire, len(data))
	return data, ci, true
}

// release hands the current block back to the kernel.
func (l *Live) release() {
	if l.blk == nil {
		return
	}
	atomic.StoreUint32(l.status(l.block), unix.TP_STATUS_KERNEL)
	l.blk = nil
	l.left = 0
	l.block = (l.block + 1) % l.nBlocks
}

// wait polls for a block; on timeout it calls Idle. After Stop it waits
// no longer than the end of the drain.
func (l *Live) wait() error {
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}, {Fd: int32(l.efd), Events: unix.POLLIN}}
	timeout := l.timeout
	stopped := l.stopped.Load()
	if stopped {
		fds = fds[:1] // the eventfd stays readable
		if !l.drainEnd.IsZero() {
			timeout = max(int(time.Until(l.drainEnd)/time.Millisecond), 1)
		}
	}
	n, err := unix.Poll(fds, timeout)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return nil
		}
		return &Error{File: l.name, Err: fmt.Errorf("poll: %w", err)}
	}
	if n == 0 && !stopped {
		if l.idle != nil {
			l.idle()
		}
		return nil
	}
	if fds[0].Revents&unix.POLLERR != 0 {
		// Pending socket error, e.g. ENETDOWN when the interface goes down.
		if e, err := unix.GetsockoptInt(l.fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && e != 0 {
			return &Error{File: l.name, Err: unix.Errno(e)}
		}
	}
	return nil
}

type bpfRaw = xbpf.RawInstruction

func attachFilter(fd int, prog []bpfRaw) error {
	if len(prog) == 0 {
		return nil
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp)
}

// Stats returns the kernel's counters since the capture was opened
// (PACKET_STATISTICS). Safe for concurrent use; after Close it returns the
// last counters.
func (l *Live) Stats() (LiveStats, error) {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	if !l.closed {
		l.updateStats()
	}
	return l.stats, l.statsErr
}

func (l *Live) updateStats() {
	// Reading the counters resets them: accumulate.
	s, err := unix.GetsockoptTpacketStatsV3(l.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		l.statsErr = err
		return
	}
	l.stats.Received += uint64(s.Packets)
	l.stats.Dropped += uint64(s.Drops)
	l.stats.End = time.Now()
}

// Close releases the socket and ring. The counters stay readable.
func (l *Live) Close() error {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	if l.closed {
		return nil
	}
	if l.ring != nil {
		l.updateStats()
	}
	l.closed = true
	if l.ring != nil {
		unix.Munmap(l.ring)
		l.ring = nil
	}
	if l.efd >= 0 {
		unix.Close(l.efd)
	}
	return unix.Close(l.fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// arphrd returns the ARPHRD_* type of an interface (-1 if unknown).
func arphrd(name string) int {
	b, err := os.ReadFile("/sys/class/net/" + name + "/type")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

func isLoopback(ifindex int) bool {
	for _, i := range loopbackIndexes() {
		if i == ifindex {
			return true
		}
	}
	return false
}

// loopbackIndexes lists the loopback devices, whose outgoing packets the
// filter drops (each is seen again as incoming).
func loopbackIndexes() []int {
	ifs, _ := net.Interfaces()
	var out []int
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			out = append(out, i.Index)
		}
	}
	return out
}

// LiveInterfaces lists the interfaces live capture can open, "any" last.
func LiveInterfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []Interface
	for _, i := range ifs {
		it := Interface{Name: i.Name, Index: i.Index}
		if i.Flags&net.FlagUp != 0 {
			it.Flags = append(it.Flags, "Up")
		}
		if i.Flags&net.FlagRunning != 0 {
			it.Flags = append(it.Flags, "Running")
		}
		if i.Flags&net.FlagLoopback != 0 {
			it.Flags = append(it.Flags, "Loopback")
			it.Description = "Loopback"
		}
		if addrs, err := i.Addrs(); err == nil {
			for _, a := range addrs {
				it.Addresses = append(it.Addresses, a.String())
			}
		}
		out = append(out, it)
	}
	out = append(out, Interface{Name: "any", Description: "Pseudo-device that captures on all interfaces", Flags: []string{"Up", "Running"}})
	return out, nil
}
