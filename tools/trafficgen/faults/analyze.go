package faults

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/gopacket/gopacket/layers"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Dir is a direction of a connection.
type Dir int

// The two directions, named as in pulsarscope's outputs.
const (
	C2S Dir = iota
	S2C
)

// String returns "c2s" or "s2c".
func (d Dir) String() string {
	if d == C2S {
		return "c2s"
	}
	return "s2c"
}

// ParseDir parses "c2s" or "s2c".
func ParseDir(s string) (Dir, error) {
	switch s {
	case "c2s":
		return C2S, nil
	case "s2c":
		return S2C, nil
	}
	return 0, fmt.Errorf("direction %q: want c2s or s2c", s)
}

// maxWalkFrame is the largest totalSize the frame walker accepts as a
// frame; larger values end the walk of a stream.
const maxWalkFrame = 64 << 20

// seg is a TCP packet of a known connection.
type seg struct {
	idx  int // index in Capture.Packets
	v    view
	conn *conn
	dir  Dir
	off  int64 // stream offset of the first payload byte
}

// conn is a TCP connection as the writer sees it.
type conn struct {
	id             int
	client, server netip.AddrPort
	streams        [2]*stream
}

// stream is one direction of a connection.
type stream struct {
	synSeen bool
	base    uint32 // sequence number of stream offset 0
	baseSet bool
	segs    []*seg // segments with payload, capture order
	// data is the stream's bytes from offset 0 up to the first gap.
	data   []byte
	frames []*frame
	// gapAfter is true when bytes beyond len(data) were captured.
	gapAfter bool
}

// frame is one Pulsar frame found by the walker.
type frame struct {
	index       int   // 1-based, per stream
	off         int64 // stream offset of the totalSize field
	totalSize   uint32
	commandSize uint32
	typ         pulsarapi.BaseCommand_Type
	// payload is true when bytes follow the command; hasBEM when they
	// start with BrokerEntryMetadata (0x0e02).
	payload, hasBEM bool
	// Payload commands with the 0x0e01 magic only:
	hasChecksum bool
	checksumOff int64 // offset of the 4-byte CRC32-C
	metaOff     int64 // offset of the MessageMetadata
	metaSize    uint32
	payloadOff  int64
	// batch is the metadata's num_messages_in_batch (0 when unset); chunk
	// is true when num_chunks_from_msg > 1.
	batch int
	chunk bool
	// producerName is the [start, end) stream range of the metadata's
	// producer_name string (zero when not found).
	producerName [2]int64
}

// end is the stream offset just after the frame.
func (f *frame) end() int64 { return f.off + 4 + int64(f.totalSize) }

// typeName is the command type as pulsarscope prints it (e.g. "SEND").
func (f *frame) typeName() string { return f.typ.String() }

// analysis is the connection-level view of a capture.
type analysis struct {
	conns []*conn
	segs  []*seg // per packet index, nil when not TCP
}

// analyze finds the connections, streams and Pulsar frames of c. ports
// are the Pulsar server ports that decide which side is the server.
func analyze(c *Capture, ports []uint16) *analysis {
	a := &analysis{segs: make([]*seg, len(c.Packets))}
	type key struct{ a, b netip.AddrPort }
	byKey := map[key]*conn{}
	for i, p := range c.Packets {
		v := parse(c.LinkType, p.Data)
		if !v.ok {
			continue
		}
		k := key{v.src, v.dst}
		if v.dst.Compare(v.src) < 0 {
			k = key{v.dst, v.src}
		}
		cn := byKey[k]
		if cn != nil && v.flags&(tcpSYN|tcpACK) == tcpSYN {
			// A SYN with a new initial sequence number on the 4-tuple is
			// another connection (port reuse), as pulsarscope sees it.
			if st := cn.streams[C2S]; v.src != cn.client || !st.synSeen || st.base != v.seq+1 {
				cn = nil
			}
		}
		if cn == nil {
			cn = &conn{id: len(a.conns) + 1, client: v.src, server: v.dst}
			switch {
			case slices.Contains(ports, v.dst.Port()):
			case slices.Contains(ports, v.src.Port()):
				cn.client, cn.server = v.dst, v.src
			case v.flags&(tcpSYN|tcpACK) == tcpSYN|tcpACK:
				cn.client, cn.server = v.dst, v.src
			}
			cn.streams = [2]*stream{{}, {}}
			byKey[k] = cn
			a.conns = append(a.conns, cn)
		}
		d := C2S
		if v.src != cn.client {
			d = S2C
		}
		st := cn.streams[d]
		if v.flags&tcpSYN != 0 {
			st.synSeen = true
			st.base = v.seq + 1
			st.baseSet = true
		} else if !st.baseSet && v.payLen > 0 {
			st.base = v.seq
			st.baseSet = true
		}
		s := &seg{idx: i, v: v, conn: cn, dir: d}
		if st.baseSet {
			s.off = int64(int32(v.seq - st.base))
		}
		a.segs[i] = s
		if v.payLen > 0 && v.flags&tcpSYN == 0 {
			st.segs = append(st.segs, s)
		}
	}
	for _, cn := range a.conns {
		for _, st := range cn.streams {
			st.build(c)
			st.walk()
		}
	}
	return a
}

// build assembles the stream's contiguous bytes from offset 0.
func (st *stream) build(c *Capture) {
	var end int64
	for _, s := range st.segs {
		end = max(end, s.off+int64(s.v.capLen))
	}
	if end <= 0 || end > 1<<30 {
		return
	}
	buf := make([]byte, end)
	have := make([]bool, end)
	for _, s := range st.segs {
		data := c.Packets[s.idx].Data[s.v.pay : s.v.pay+s.v.capLen]
		for j, b := range data {
			o := s.off + int64(j)
			if o >= 0 && !have[o] {
				buf[o], have[o] = b, true
			}
		}
	}
	n := slices.Index(have, false)
	if n < 0 {
		n = len(have)
	} else {
		st.gapAfter = true
	}
	st.data = buf[:n]
}

// walk finds the Pulsar frames in st.data from offset 0.
func (st *stream) walk() {
	d := st.data
	var off int64
	for off+8 <= int64(len(d)) {
		total := binary.BigEndian.Uint32(d[off:])
		cmd := binary.BigEndian.Uint32(d[off+4:])
		if total < 4 || total > maxWalkFrame || cmd > total-4 {
			return
		}
		f := &frame{index: len(st.frames) + 1, off: off, totalSize: total, commandSize: cmd}
		if f.end() > int64(len(d)) {
			return
		}
		if t, ok := commandType(d[off+8 : off+8+int64(cmd)]); ok {
			f.typ = t
		}
		p := off + 8 + int64(cmd)
		f.payload = p < f.end()
		if p+6 <= f.end() && d[p] == 0x0e && d[p+1] == 0x02 {
			f.hasBEM = true
			p += 6 + int64(binary.BigEndian.Uint32(d[p+2:]))
		}
		if p+10 <= f.end() && d[p] == 0x0e && d[p+1] == 0x01 {
			f.hasChecksum = true
			f.checksumOff = p + 2
			f.metaSize = binary.BigEndian.Uint32(d[p+6:])
			f.metaOff = p + 10
			f.payloadOff = f.metaOff + int64(f.metaSize)
			if f.payloadOff > f.end() {
				f.hasChecksum = false
			} else {
				md := d[f.metaOff:f.payloadOff]
				if s, e, ok := protoField(md, 1); ok {
					f.producerName = [2]int64{f.metaOff + int64(s), f.metaOff + int64(e)}
				}
				if v, ok := protoVarint(md, 11); ok {
					f.batch = int(v)
				}
				if v, ok := protoVarint(md, 27); ok {
					f.chunk = v > 1
				}
			}
		}
		st.frames = append(st.frames, f)
		off = f.end()
	}
}

// commandType reads field 1 (type) of a BaseCommand.
func commandType(b []byte) (pulsarapi.BaseCommand_Type, bool) {
	for len(b) > 0 {
		tag, n := uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		if tag == 1<<3 {
			v, n := uvarint(b)
			if n <= 0 {
				return 0, false
			}
			return pulsarapi.BaseCommand_Type(v), true
		}
		var ok bool
		if b, ok = skipField(b, tag&7); !ok {
			return 0, false
		}
	}
	return 0, false
}

// protoField finds the first length-delimited field num in a protobuf
// message and returns the [start, end) range of its bytes.
func protoField(b []byte, num uint64) (int, int, bool) {
	pos := 0
	for pos < len(b) {
		tag, n := uvarint(b[pos:])
		if n <= 0 {
			return 0, 0, false
		}
		pos += n
		if tag == num<<3|2 {
			l, n := uvarint(b[pos:])
			if n <= 0 || uint64(len(b)-pos-n) < l {
				return 0, 0, false
			}
			return pos + n, pos + n + int(l), true
		}
		rest, ok := skipField(b[pos:], tag&7)
		if !ok {
			return 0, 0, false
		}
		pos = len(b) - len(rest)
	}
	return 0, 0, false
}

// protoVarint returns the last value of the varint field num of a
// protobuf message.
func protoVarint(b []byte, num uint64) (uint64, bool) {
	var val uint64
	found := false
	for len(b) > 0 {
		tag, n := uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		if tag == num<<3 {
			v, n := uvarint(b)
			if n <= 0 {
				return 0, false
			}
			val, found = v, true
			b = b[n:]
			continue
		}
		var ok bool
		if b, ok = skipField(b, tag&7); !ok {
			return 0, false
		}
	}
	return val, found
}

// skipField skips one field value of the wire type wt.
func skipField(b []byte, wt uint64) ([]byte, bool) {
	switch wt {
	case 0:
		_, n := uvarint(b)
		if n <= 0 {
			return nil, false
		}
		return b[n:], true
	case 1:
		if len(b) < 8 {
			return nil, false
		}
		return b[8:], true
	case 2:
		l, n := uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return nil, false
		}
		return b[n+int(l):], true
	case 5:
		if len(b) < 4 {
			return nil, false
		}
		return b[4:], true
	}
	return nil, false
}

// uvarint decodes a protobuf varint.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// conn returns the connection with the given 1-based ID.
func (a *analysis) conn(id int) (*conn, error) {
	if id < 1 || id > len(a.conns) {
		return nil, fmt.Errorf("connection %d does not exist (capture has %d)", id, len(a.conns))
	}
	return a.conns[id-1], nil
}

// carriers returns the indices of all packets whose captured payload holds
// stream byte off of st.
func (st *stream) carriers(off int64) []int {
	var out []int
	for _, s := range st.segs {
		if off >= s.off && off < s.off+int64(s.v.capLen) {
			out = append(out, s.idx)
		}
	}
	return out
}

// frameAt returns the frame holding stream byte off, or nil.
func (st *stream) frameAt(off int64) *frame {
	for _, f := range st.frames {
		if off >= f.off && off < f.end() {
			return f
		}
	}
	return nil
}

// linkName names a link type for logs.
func linkName(lt layers.LinkType) string { return lt.String() }
