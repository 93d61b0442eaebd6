package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Packet is one captured TCP segment. The Packet returned by Source.Next,
// its TCP layer and the payload bytes it points to are reused: they are only
// valid until the next call to Next. Copy what must outlive it.
type Packet struct {
	// N is the record number in the input, 1-based (counting every record,
	// TCP or not).
	N int
	// Time is the capture timestamp.
	Time time.Time
	// CapLen is the number of bytes captured, WireLen the frame's length on
	// the wire; CapLen < WireLen means the frame was truncated (snaplen).
	CapLen, WireLen int
	// InterfaceIndex is the pcapng interface (0 for pcap).
	InterfaceIndex int
	// LinkType is the frame's link type.
	LinkType layers.LinkType
	// IPv6 is true for IPv6 segments.
	IPv6 bool
	// NetFlow is the IP source → destination flow.
	NetFlow gopacket.Flow
	// TCP is the decoded TCP header; TCP.Payload is the segment's data.
	TCP *layers.TCP
	// Missing is the number of payload bytes the IP header announces
	// beyond those captured (snaplen truncation); 0 normally.
	Missing int
}

// Truncated reports whether the frame was cut short by the snap length.
func (p *Packet) Truncated() bool { return p.CapLen < p.WireLen }

// Stats are a Source's counters, all since the Source was opened.
type Stats struct {
	// Packets is the number of records read; Bytes the captured bytes in them.
	Packets, Bytes int64
	// TCP is the number of TCP segments delivered by Next.
	TCP int64
	// NonTCP counts valid frames that are not TCP (ARP, UDP, ICMP, ...).
	NonTCP int64
	// Fragments counts IPv4 and IPv6 fragments (packets).
	Fragments int64
	// Defragmented counts the IPv4 datagrams put back together from
	// fragments (their TCP segments delivered by Next, counted in TCP).
	Defragmented int64
	// FragmentsLost counts what fragments could not be put back together:
	// IPv4 datagrams given up (incomplete at the end of the input or after
	// 30 s, fragments contradicting each other, over 16 MiB held) and IPv6
	// fragments (not reassembled). Their bytes are missing from the
	// streams (gaps), though captured.
	FragmentsLost int64
	// Truncated counts frames with caplen < wirelen (delivered if TCP).
	Truncated int64
	// DecodeErrors counts frames whose headers are cut short or invalid.
	DecodeErrors int64
	// UnknownLinkType counts frames of a link type that is not supported
	// (pcapng interfaces only: a pcap file of such a type fails to open).
	UnknownLinkType int64
	// TruncatedFile is set when the input ended in the middle of a record.
	TruncatedFile bool
	// SkippedBlocks counts pcapng packet blocks left out because their
	// captured length claims more bytes than the block holds (reading goes
	// on with the next block); FirstSkippedBlock is the file offset of the
	// first (when SkippedBlocks > 0).
	SkippedBlocks, FirstSkippedBlock int64
}

// Source reads TCP segments from a RawSource. It is not safe for
// concurrent use.
type Source struct {
	name  string
	raw   RawSource
	dec   *Decoder
	pkt   Packet
	stats Stats
	err   error
	frags *defragmenter // made at the first IPv4 fragment
}

// NewSource returns a Source decoding the frames of raw; name is used in
// errors (a file path, "-", an interface name).
func NewSource(name string, raw RawSource) *Source {
	return &Source{name: name, raw: raw, dec: NewDecoder()}
}

// Name returns the name given to the Source.
func (s *Source) Name() string { return s.name }

// Stats returns the counters so far.
func (s *Source) Stats() Stats {
	st := s.stats
	if f, ok := s.raw.(*fileRaw); ok && f.blocks != nil {
		st.SkippedBlocks = f.blocks.Skipped
		st.FirstSkippedBlock = max(0, f.blocks.FirstSkipped)
	}
	return st
}

// ReadBuffers returns the buffers the payloads of the packets Next returns
// lie in, when they may be held past the next call (classic pcap files);
// nil otherwise.
func (s *Source) ReadBuffers() *ReadBuffers {
	if f, ok := s.raw.(*fileRaw); ok {
		return f.buffers()
	}
	return nil
}

// Close closes the underlying RawSource (and file).
func (s *Source) Close() error { return s.raw.Close() }

// Next returns the next TCP segment, skipping (and counting) other frames.
// The returned Packet is reused by the next call. At the end of input it
// returns io.EOF; when the input ends in the middle of a record it returns
// an *Error wrapping ErrTruncated (all complete records were delivered
// before). Other read errors are *Error wrapping ErrCorrupt or the I/O
// error. Once it has returned an error, Next returns the same error again.
// ctx is checked every 256 records.
func (s *Source) Next(ctx context.Context) (*Packet, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		if s.stats.Packets&255 == 0 && ctx != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		data, ci, lt, err := s.raw.ReadRaw()
		if err != nil {
			if s.frags != nil {
				s.stats.FragmentsLost += int64(s.frags.end())
			}
			s.err = s.readError(err)
			return nil, s.err
		}
		s.stats.Packets++
		s.stats.Bytes += int64(len(data))
		p := &s.pkt
		p.N = int(s.stats.Packets)
		p.Time = ci.Timestamp
		p.CapLen = len(data)
		p.WireLen = ci.Length
		p.InterfaceIndex = ci.InterfaceIndex
		p.LinkType = lt
		if p.CapLen < p.WireLen {
			s.stats.Truncated++
		}
		switch s.dec.Decode(data, lt, p) {
		case ResultTCP:
			s.stats.TCP++
			return p, nil
		case ResultNotTCP:
			s.stats.NonTCP++
		case ResultFragment:
			s.stats.Fragments++
			if p, ok := s.defragment(p); ok {
				return p, nil
			}
		case ResultBadLinkType:
			s.stats.UnknownLinkType++
		default:
			s.stats.DecodeErrors++
		}
	}
}

// defragment hands the IPv4 fragment just decoded to the defragmenter;
// when it completes a datagram holding a TCP segment, it returns p filled
// with that segment (its time the last fragment's).
func (s *Source) defragment(p *Packet) (*Packet, bool) {
	frag := s.dec.Fragment()
	if frag == nil {
		s.stats.FragmentsLost++ // IPv6: not reassembled
		return nil, false
	}
	if s.frags == nil {
		s.frags = newDefragmenter()
	}
	dg, lost := s.frags.add(frag, p.Time)
	s.stats.FragmentsLost += int64(lost)
	if dg == nil {
		return nil, false
	}
	s.stats.Defragmented++
	switch s.dec.DecodeDatagram(dg, p) {
	case ResultTCP:
		s.stats.TCP++
		return p, true
	case ResultNotTCP:
		s.stats.NonTCP++
	default:
		s.stats.DecodeErrors++
	}
	return nil, false
}

func (s *Source) readError(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	e := &Error{File: s.name, Packet: int(s.stats.Packets) + 1}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.stats.TruncatedFile = true
		e.Err = ErrTruncated
	case errors.Is(err, io.ErrClosedPipe), isIOError(err):
		e.Err = err
	default:
		e.Err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return e
}

// isIOError tells errors of the operating system (read failures) from
// format errors of the readers, which are plain strings.
func isIOError(err error) bool {
	var pe interface{ Timeout() bool }
	return errors.As(err, &pe)
}
