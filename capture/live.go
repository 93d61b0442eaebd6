package capture

import (
	"errors"
	"time"
)

// Live capture (docs/capture.md). OpenLive returns a *Live: a RawSource
// reading an interface, to be given to NewSource like a file's RawSource.
//
// The default backend (Linux, no cgo) is an AF_PACKET socket with a
// TPACKET_V3 memory-mapped ring and a kernel BPF program compiled by
// capture/bpf from the Pulsar ports and the -f filter (a subset of the
// libpcap syntax). Built with -tags pcap, the backend is libpcap (cgo,
// gopacket/pcap): full filter syntax, and systems other than Linux.

// LiveOptions configure OpenLive.
type LiveOptions struct {
	// Interface is the interface name, or "any" for all interfaces.
	Interface string
	// Ports are the TCP ports whose packets are captured (the kernel
	// filter); empty means every TCP packet (--detect).
	Ports []uint16
	// Filter is the user's capture filter (-f), ANDed with Ports; empty
	// means none.
	Filter string
	// Snaplen is the number of bytes kept of each packet (0: 262144).
	Snaplen int
	// BufferSize is the kernel ring size in bytes (0: 16 MiB).
	BufferSize int
	// NoPromiscuous leaves the interface out of promiscuous mode.
	NoPromiscuous bool
	// PollTimeout bounds how long ReadRaw waits before calling Idle and
	// checking for Stop (0: 100 ms).
	PollTimeout time.Duration
	// Idle, if set, is called by ReadRaw (in its goroutine) whenever no
	// packet arrived for PollTimeout.
	Idle func()
}

func (o *LiveOptions) defaults() {
	if o.Snaplen <= 0 {
		o.Snaplen = 262144
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 16 << 20
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 100 * time.Millisecond
	}
}

// LiveStats are the kernel's counters of a live capture.
type LiveStats struct {
	// Received counts the packets that passed the kernel filter (including
	// those dropped); Dropped those dropped because the ring was full.
	Received, Dropped uint64
	// Backend names the capture backend ("afpacket" or "libpcap").
	Backend string
	// Start is when the capture was opened, End when the counters were
	// last read (the time of Close once the capture is closed): the span
	// the counters cover.
	Start, End time.Time
}

// Interface describes a capture interface (-D).
type Interface struct {
	Name        string
	Index       int
	Description string   // e.g. "Loopback", "Pseudo-device that captures on all interfaces"
	Addresses   []string // CIDRs
	Flags       []string // Up, Running, Loopback
}

var (
	// ErrPermission means the process may not open a capture socket.
	ErrPermission = errors.New("permission denied: live capture needs root or the CAP_NET_RAW capability")
	// ErrNoInterface means the interface does not exist.
	ErrNoInterface = errors.New("no such interface")
	// ErrLiveUnsupported means this build cannot capture on this system.
	ErrLiveUnsupported = errors.New("live capture is not supported by this build on this system (the pure-Go backend needs Linux; build with -tags pcap for libpcap)")
)
