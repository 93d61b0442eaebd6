//go:build pcap

package capture

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcap"
)

// LiveBackend names the backend of this build.
const LiveBackend = "libpcap"

// Live is a live capture through libpcap (built with -tags pcap): the full
// libpcap filter syntax, and systems other than Linux.
type Live struct {
	name    string
	h       *pcap.Handle
	lt      layers.LinkType
	idle    func()
	stopped atomic.Bool
	mu      sync.Mutex
	closed  bool
	stats   LiveStats
}

// OpenLive opens a live capture with libpcap. The kernel filter is
// "tcp port P1 or tcp port P2 ..." ANDed with opts.Filter (any libpcap
// syntax).
func OpenLive(opts LiveOptions) (*Live, error) {
	opts.defaults()
	name := opts.Interface
	fail := func(err error) (*Live, error) { return nil, &Error{File: name, Err: err} }
	if name != "any" {
		if _, err := net.InterfaceByName(name); err != nil {
			return fail(fmt.Errorf("%w %q (pulsarscope capture -D lists them)", ErrNoInterface, name))
		}
	}
	in, err := pcap.NewInactiveHandle(name)
	if err != nil {
		return fail(err)
	}
	defer in.CleanUp()
	in.SetSnapLen(opts.Snaplen)
	in.SetPromisc(!opts.NoPromiscuous)
	in.SetTimeout(opts.PollTimeout)
	in.SetBufferSize(opts.BufferSize)
	h, err := in.Activate()
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "permission") || strings.Contains(err.Error(), "not permitted") {
			return fail(ErrPermission)
		}
		return fail(err)
	}
	var terms []string
	for _, p := range opts.Ports {
		terms = append(terms, fmt.Sprintf("tcp port %d", p))
	}
	f := "tcp"
	if len(terms) > 0 {
		f = strings.Join(terms, " or ")
	}
	if opts.Filter != "" {
		f = "(" + f + ") and (" + opts.Filter + ")"
	}
	if err := h.SetBPFFilter(f); err != nil {
		h.Close()
		return fail(fmt.Errorf("capture filter %q: %v", opts.Filter, err))
	}
	l := &Live{name: name, h: h, lt: h.LinkType(), idle: opts.Idle}
	l.stats.Backend = LiveBackend
	l.stats.Start = time.Now()
	return l, nil
}

// LinkType returns the link type of the frames.
func (l *Live) LinkType() layers.LinkType { return l.lt }

// Name returns the interface name.
func (l *Live) Name() string { return l.name }

// Stop makes ReadRaw return io.EOF (within the poll timeout).
func (l *Live) Stop() { l.stopped.Store(true) }

// ReadRaw returns the next packet; io.EOF after Stop.
func (l *Live) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	for {
		if l.stopped.Load() {
			return nil, gopacket.CaptureInfo{}, l.lt, io.EOF
		}
		data, ci, err := l.h.ZeroCopyReadPacketData()
		if err == nil {
			ci.InterfaceIndex = 0
			return data, ci, l.lt, nil
		}
		if errors.Is(err, pcap.NextErrorTimeoutExpired) {
			if l.idle != nil {
				l.idle()
			}
			continue
		}
		if err == io.EOF {
			return nil, ci, l.lt, io.EOF
		}
		return nil, ci, l.lt, &Error{File: l.name, Err: err}
	}
}

// Stats returns libpcap's counters (pcap_stats).
func (l *Live) Stats() (LiveStats, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		s, err := l.h.Stats()
		if err != nil {
			return l.stats, err
		}
		l.stats.Received = uint64(s.PacketsReceived)
		l.stats.Dropped = uint64(s.PacketsDropped + s.PacketsIfDropped)
		l.stats.End = time.Now()
	}
	return l.stats, nil
}

// Close closes the handle; the counters stay readable.
func (l *Live) Close() error {
	l.Stats()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.h.Close()
	}
	return nil
}

// LiveInterfaces lists libpcap's devices.
func LiveInterfaces() ([]Interface, error) {
	devs, err := pcap.FindAllDevs()
	if err != nil {
		return nil, err
	}
	var out []Interface
	for i, d := range devs {
		it := Interface{Name: d.Name, Index: i + 1, Description: d.Description}
		for _, a := range d.Addresses {
			ones, _ := net.IPMask(a.Netmask).Size()
			it.Addresses = append(it.Addresses, fmt.Sprintf("%v/%d", a.IP, ones))
		}
		out = append(out, it)
	}
	return out, nil
}
