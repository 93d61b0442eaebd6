package faults

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
)

// Pulsar problem codes (pulsarscope's docs/problems.md) the faults provoke.
const (
	ProblemChecksumMismatch = "checksum-mismatch"
	ProblemBytesLost        = "bytes-lost"
	ProblemBytesSkipped     = "bytes-skipped"
	ProblemFrameTooLarge    = "frame-too-large"
	ProblemTruncatedFrame   = "truncated-frame"
	// ProblemRetransmissionConflict: a retransmission with other bytes.
	ProblemRetransmissionConflict = "retransmission-conflict"
)

// maxFrameSize is pulsarscope's default limit on 4 + totalSize
// (maxMessageSize 5 MiB + 10 KiB padding, like the broker).
const maxFrameSize = 5*1024*1024 + 10*1024

// DefaultPort is the Pulsar broker port.
const DefaultPort = 6650

// Options configure Apply.
type Options struct {
	// Ports are the Pulsar server ports that decide which side of a
	// connection is the server (default: 6650).
	Ports []uint16
}

// FrameRef names a Pulsar frame of a stream.
type FrameRef struct {
	Conn   int    `json:"conn"`
	Dir    string `json:"dir"`
	Index  int    `json:"frame_index"`
	Type   string `json:"frame_type"`
	Offset int64  `json:"stream_offset"`
	// Lost says how the frame is affected: "absent" (none of its bytes
	// remain), "partial" (some bytes are missing, its header or command
	// among them), "damaged" (bytes after its header and command are
	// missing: pulsarscope still reports it, as a frame with a bytes-lost
	// problem; not counted as destroyed) or "invalid" (all bytes present
	// but the frame cannot be decoded).
	Lost string `json:"lost"`

	// payload, checksum and bem say whether the frame has a payload, a
	// CRC32-C and BrokerEntryMetadata (to adjust the base's counts).
	payload, checksum, bem bool
	// batch and chunk are the frame's num_messages_in_batch (0: unset)
	// and whether it is a chunk of a chunked message.
	batch int
	chunk bool
}

// Entry is the log record of one applied fault. Connections, directions,
// stream offsets and frame indices refer to the capture the fault was
// applied to (the input for the first fault); out_* fields say where the
// target ended up in the output when that differs.
type Entry struct {
	Kind string `json:"kind"`
	Spec string `json:"spec"`
	// Packet is the targeted packet's number (input numbering for input
	// packets); Packets lists all changed packets when there are several.
	Packet     int   `json:"packet,omitempty"`
	Packets    []int `json:"packets,omitempty"`
	OutPacket  int   `json:"out_packet,omitempty"`
	OutPackets []int `json:"out_packets,omitempty"`
	// Conn and Dir name the stream of the target.
	Conn            int    `json:"conn,omitempty"`
	Dir             string `json:"dir,omitempty"`
	OutConn         int    `json:"out_conn,omitempty"`
	StreamOffset    *int64 `json:"stream_offset,omitempty"`
	OutStreamOffset *int64 `json:"out_stream_offset,omitempty"`
	// Bytes is the number of stream bytes concerned (segment length, bytes
	// lost, bytes cut).
	Bytes int `json:"bytes,omitempty"`
	// FrameType and FrameIndex (1-based, per stream) name the Pulsar frame hit.
	FrameType   string `json:"frame_type,omitempty"`
	FrameIndex  int    `json:"frame_index,omitempty"`
	FrameOffset *int64 `json:"frame_offset,omitempty"`
	// Region is the part of the frame that was changed.
	Region string `json:"region,omitempty"`
	// Old and New are the changed bytes, in hex.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// FramesDestroyed lists the frames the product cannot decode any more.
	FramesDestroyed []FrameRef `json:"frames_destroyed,omitempty"`
	// FramesAdded lists the frames added (by a copy of a connection, reuse)
	// and ConnectionsAdded the connections.
	FramesAdded      []FrameRef `json:"frames_added,omitempty"`
	ConnectionsAdded int        `json:"connections_added,omitempty"`
	// ExpectProblems are the problem codes the fault must provoke;
	// MayProblems ones it may provoke in addition.
	ExpectProblems []string `json:"expect_problems"`
	MayProblems    []string `json:"may_problems,omitempty"`
	// NeedsFlags are flags pulsarscope needs to decode the output.
	NeedsFlags []string `json:"needs_flags,omitempty"`
	Detail     string   `json:"detail"`

	// newPort is the port a port-rewrite moved the server to.
	newPort uint16

	// ref locates the target for the out_* fields: packet ID, index of the
	// byte in its TCP payload and the packet's Trimmed at the time.
	refID, refByte, refTrim int
	hasRef                  bool
}

// setRef records the target byte for the out_* fields.
func (e *Entry) setRef(p *Packet, payloadIndex int) {
	e.refID, e.refByte, e.refTrim, e.hasRef = p.ID, payloadIndex, p.Trimmed, true
}

// Apply applies the faults in order to c and returns one log entry per fault.
func Apply(c *Capture, specs []Spec, opts Options) ([]*Entry, error) {
	ports := slices.Clone(opts.Ports)
	if len(ports) == 0 {
		ports = []uint16{DefaultPort}
	}
	var entries []*Entry
	for _, sp := range specs {
		a := analyze(c, ports)
		var e *Entry
		var err error
		switch sp.Kind {
		case KindDrop:
			e, err = drop(c, a, sp)
		case KindReorder:
			e, err = reorder(c, a, sp)
		case KindDuplicate:
			e, err = duplicate(c, a, sp)
		case KindCutStart:
			e, err = cutStart(c, a, sp)
		case KindCorruptPayload:
			e, err = corruptPayload(c, a, sp)
		case KindBadTotalSize:
			e, err = badTotalSize(c, a, sp)
		case KindPortRewrite:
			var to uint16
			e, to, err = portRewrite(c, sp, ports[0])
			if e != nil {
				e.newPort = to
			}
			ports = append(ports, to)
		case KindIPv6:
			e, err = toIPv6(c, sp)
		case KindVLAN:
			e, err = vlan(c, sp)
		case KindFixChecksums:
			e, err = fixAllChecksums(c)
		case KindReuse:
			e, err = reuse(c, a, sp)
		case KindConflict:
			e, err = conflict(c, a, sp)
		case KindSnaplen:
			e, err = snaplen(c, a, sp)
		case KindPcapng:
			e = &Entry{Detail: fmt.Sprintf("written as pcapng (one interface, link type %s, nanosecond timestamps); packets unchanged", linkName(c.LinkType))}
			c.Format = FormatPcapng
		default:
			err = fmt.Errorf("unknown fault kind %q", sp.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("fault %q: %w", sp.Raw, err)
		}
		e.Kind, e.Spec = sp.Kind, sp.Raw
		if e.ExpectProblems == nil {
			e.ExpectProblems = []string{}
		}
		entries = append(entries, e)
	}
	finish(c, entries, ports)
	return entries, nil
}

// finish fills the out_* fields of the entries from the final capture.
func finish(c *Capture, entries []*Entry, ports []uint16) {
	pos := map[int]int{}
	for i, p := range c.Packets {
		pos[p.ID] = i + 1
	}
	a := analyze(c, ports)
	for _, e := range entries {
		if e.Packet != 0 {
			e.OutPacket = pos[e.Packet]
		}
		for _, id := range e.Packets {
			if n := pos[id]; n != 0 {
				e.OutPackets = append(e.OutPackets, n)
			}
		}
		if !e.hasRef || pos[e.refID] == 0 {
			continue
		}
		idx := pos[e.refID] - 1
		s := a.segs[idx]
		if s == nil {
			continue
		}
		if s.conn.id != e.Conn {
			e.OutConn = s.conn.id
		}
		off := s.off + int64(e.refByte-(c.Packets[idx].Trimmed-e.refTrim))
		if e.StreamOffset != nil && off != *e.StreamOffset {
			e.OutStreamOffset = &off
		}
	}
}

// After returns the options that describe the output of the faults: the
// server ports moved by port-rewrite are added.
func (o Options) After(entries []*Entry) Options {
	ports := slices.Clone(o.Ports)
	if len(ports) == 0 {
		ports = []uint16{DefaultPort}
	}
	for _, e := range entries {
		if e.newPort != 0 {
			ports = append(ports, e.newPort)
		}
	}
	return Options{Ports: ports}
}

// ConnInfo describes a connection of a capture.
type ConnInfo struct {
	ID          int    `json:"id"`
	Client      string `json:"client"`
	Server      string `json:"server"`
	Handshake   bool   `json:"handshake"`
	FirstPacket int    `json:"first_packet"`
	// Frames counts the frames the writer's walker finds per direction.
	FramesC2S int `json:"frames_c2s"`
	FramesS2C int `json:"frames_s2c"`
}

// Connections lists the TCP connections of c (ports as in Options).
func Connections(c *Capture, opts Options) []ConnInfo {
	ports := opts.Ports
	if len(ports) == 0 {
		ports = []uint16{DefaultPort}
	}
	a := analyze(c, ports)
	first := map[*conn]int{}
	for i, s := range a.segs {
		if s != nil {
			if _, ok := first[s.conn]; !ok {
				first[s.conn] = i + 1
			}
		}
	}
	var out []ConnInfo
	for _, cn := range a.conns {
		out = append(out, ConnInfo{
			ID: cn.id, Client: cn.client.String(), Server: cn.server.String(),
			Handshake:   cn.streams[C2S].synSeen,
			FirstPacket: first[cn],
			FramesC2S:   len(cn.streams[C2S].frames),
			FramesS2C:   len(cn.streams[S2C].frames),
		})
	}
	return out
}

// Problems returns the sorted union of the entries' expected problems.
func Problems(entries []*Entry) []string {
	set := map[string]bool{}
	for _, e := range entries {
		for _, p := range e.ExpectProblems {
			set[p] = true
		}
	}
	out := []string{}
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ref returns a FrameRef for f of stream (cn, d).
func ref(cn *conn, d Dir, f *frame, lost string) FrameRef {
	return FrameRef{Conn: cn.id, Dir: d.String(), Index: f.index, Type: f.typeName(), Offset: f.off, Lost: lost,
		payload: f.payload, checksum: f.hasChecksum, bem: f.hasBEM, batch: f.batch, chunk: f.chunk}
}

// ptr returns a pointer to v.
func ptr(v int64) *int64 { return &v }

// FrameInfo describes one Pulsar frame found by the writer's walker.
type FrameInfo struct {
	Conn   int    `json:"conn"`
	Dir    string `json:"dir"`
	Index  int    `json:"frame_index"`
	Type   string `json:"frame_type"`
	Offset int64  `json:"stream_offset"`
	Size   int64  `json:"size"`
	// Packets are the numbers of the packets carrying the frame's bytes.
	Packets []int `json:"packets"`
	// ChecksumOK is set for frames with a CRC32-C: whether it matches.
	ChecksumOK *bool `json:"checksum_ok,omitempty"`
	// ProducerName tells whether corrupt-payload's default target exists.
	ProducerName bool `json:"producer_name,omitempty"`
}

// Frames lists the Pulsar frames of every connection of c, as the fault
// selectors number them.
func Frames(c *Capture, opts Options) []FrameInfo {
	ports := opts.Ports
	if len(ports) == 0 {
		ports = []uint16{DefaultPort}
	}
	a := analyze(c, ports)
	var out []FrameInfo
	for _, cn := range a.conns {
		for d, st := range cn.streams {
			for _, f := range st.frames {
				fi := FrameInfo{Conn: cn.id, Dir: Dir(d).String(), Index: f.index, Type: f.typeName(),
					Offset: f.off, Size: f.end() - f.off, ProducerName: f.producerName[1] > f.producerName[0]}
				for _, s := range st.segs {
					if s.off < f.end() && s.off+int64(s.v.capLen) > f.off {
						fi.Packets = append(fi.Packets, s.idx+1)
					}
				}
				if f.hasChecksum {
					ok := crc32.Checksum(st.data[f.checksumOff+4:f.end()], crc32.MakeTable(crc32.Castagnoli)) == binary.BigEndian.Uint32(st.data[f.checksumOff:])
					fi.ChecksumOK = &ok
				}
				out = append(out, fi)
			}
		}
	}
	return out
}
