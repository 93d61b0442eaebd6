package capture

import (
	"bytes"
	"time"

	"github.com/gopacket/gopacket/ip4defrag"
	"github.com/gopacket/gopacket/layers"
)

// IPv4 fragments are put back together with gopacket's ip4defrag (which
// checks overlaps, offsets and sizes as a receiver would), bounded here in
// time and memory.
const (
	// fragmentTimeout is how long the fragments of a datagram are kept
	// without a new one, in capture time (Linux's ipfrag_time is 30 s).
	fragmentTimeout = 30 * time.Second
	// maxFragmentBytes bounds the fragment bytes held for datagrams not
	// yet complete; beyond it every incomplete datagram is given up.
	maxFragmentBytes = 16 << 20
)

// defragmenter holds the IPv4 fragments of a Source. The zero value is
// not usable: newDefragmenter.
type defragmenter struct {
	d         *ip4defrag.IPv4Defragmenter
	pending   map[datagramKey]*pendingDatagram // what d holds, by datagram
	held      int                              // fragment bytes held
	lastSweep time.Time                        // capture time of the last timeout sweep
}

// datagramKey is what makes fragments one datagram (RFC 791): addresses,
// protocol and Id.
type datagramKey struct {
	src, dst [4]byte
	proto    layers.IPProtocol
	id       uint16
}

type pendingDatagram struct {
	bytes    int
	lastSeen time.Time
}

func newDefragmenter() *defragmenter {
	return &defragmenter{d: ip4defrag.NewIPv4Defragmenter(), pending: map[datagramKey]*pendingDatagram{}}
}

// add takes one fragment (its header and payload alias the frame, and are
// copied) seen at t. It returns the datagram when the fragment completes
// one, and how many datagrams were given up meanwhile: their fragments
// contradicting each other, timed out (30 s of capture time without a new
// fragment), or over the memory bound (16 MiB held).
func (f *defragmenter) add(frag *layers.IPv4, t time.Time) (out *layers.IPv4, lost int) {
	if t.Sub(f.lastSweep) > time.Second {
		lost += f.discard(t.Add(-fragmentTimeout))
		f.lastSweep = t
	}
	if f.held+len(frag.Payload) > maxFragmentBytes {
		lost += f.discard(t.Add(time.Hour))
	}
	var key datagramKey
	copy(key.src[:], frag.SrcIP.To4())
	copy(key.dst[:], frag.DstIP.To4())
	key.proto, key.id = frag.Protocol, frag.Id
	// The defragmenter keeps what it is given: a copy, not the frame.
	cp := *frag
	cp.Contents, cp.Options, cp.Padding = nil, nil, nil
	cp.SrcIP, cp.DstIP = bytes.Clone(frag.SrcIP), bytes.Clone(frag.DstIP)
	cp.Payload = bytes.Clone(frag.Payload)
	out, err := f.d.DefragIPv4WithTimestamp(&cp, t)
	pd := f.pending[key]
	switch {
	case err != nil || out != nil: // dropped (a receiver drops them too), or complete
		if err != nil {
			lost++
		}
		if pd != nil {
			f.held -= pd.bytes
			delete(f.pending, key)
		}
	default:
		if pd == nil {
			pd = &pendingDatagram{}
			f.pending[key] = pd
		}
		pd.bytes += len(cp.Payload)
		pd.lastSeen = t
		f.held += len(cp.Payload)
	}
	return out, lost
}

// discard gives up the datagrams without a fragment since before, and
// returns how many.
func (f *defragmenter) discard(before time.Time) int {
	n := 0
	for k, pd := range f.pending {
		if pd.lastSeen.Before(before) {
			f.held -= pd.bytes
			delete(f.pending, k)
			n++
		}
	}
	f.d.DiscardOlderThan(before)
	return n
}

// end gives up every datagram still incomplete and returns how many.
func (f *defragmenter) end() int { return f.discard(time.Unix(1<<40, 0)) }
