package reassembly

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder is a Handler that records every call.
type recorder struct {
	events []string
	conns  []*Conn
	// streams holds each direction's bytes, gaps written as "<gap N>".
	streams map[int]*[2]strings.Builder
	closed  map[int]CloseReason
	closeTS map[int]time.Time
	// bytes counts each direction's Data and Gap bytes.
	bytes map[int]*[2]int64
}

func newRecorder() *recorder {
	return &recorder{streams: map[int]*[2]strings.Builder{}, closed: map[int]CloseReason{}, closeTS: map[int]time.Time{}, bytes: map[int]*[2]int64{}}
}

func (r *recorder) Open(c *Conn) {
	if _, ok := r.streams[c.ID]; ok {
		panic(fmt.Sprintf("conn %d opened twice", c.ID))
	}
	r.conns = append(r.conns, c)
	r.streams[c.ID] = &[2]strings.Builder{}
	r.bytes[c.ID] = &[2]int64{}
	r.events = append(r.events, fmt.Sprintf("open %d %s>%s hs=%v tls=%v", c.ID, c.Client, c.Server, c.HandshakeSeen, c.TLS))
}

func (r *recorder) check(c *Conn, what string) {
	if _, ok := r.streams[c.ID]; !ok {
		panic(fmt.Sprintf("%s on conn %d before Open", what, c.ID))
	}
	if _, ok := r.closed[c.ID]; ok {
		panic(fmt.Sprintf("%s on conn %d after Close", what, c.ID))
	}
}

func (r *recorder) Data(c *Conn, d Dir, data []byte, ts time.Time) {
	r.check(c, "data")
	r.streams[c.ID][d].Write(data)
	r.bytes[c.ID][d] += int64(len(data))
	r.events = append(r.events, fmt.Sprintf("data %d %s %q", c.ID, d, data))
}

func (r *recorder) Gap(c *Conn, d Dir, n int64, ts time.Time) {
	r.check(c, "gap")
	fmt.Fprintf(&r.streams[c.ID][d], "<gap %d>", n)
	r.bytes[c.ID][d] += n
	r.events = append(r.events, fmt.Sprintf("gap %d %s %d", c.ID, d, n))
}

func (r *recorder) Close(c *Conn, reason CloseReason, ts time.Time) {
	r.check(c, "close")
	r.closed[c.ID] = reason
	r.closeTS[c.ID] = ts
	r.events = append(r.events, fmt.Sprintf("close %d %s", c.ID, reason))
}

func (r *recorder) stream(id int, d Dir) string {
	s, ok := r.streams[id]
	if !ok {
		return "<no conn>"
	}
	return s[d].String()
}

// ep is one TCP endpoint.
type ep struct {
	ip   string
	port uint16
}

var (
	cli  = ep{"127.0.0.1", 40000}
	srv  = ep{"127.0.0.2", 6650}
	cli2 = ep{"127.0.0.1", 40001}
)

// pkt is a segment to feed: from → to, at time offset at.
type pkt struct {
	from, to ep
	seq      uint32
	// ack is the acknowledgement number (with "A" in flags); 0 claims
	// nothing in the tests' sequence spaces.
	ack   uint32
	flags string // any of "S", "A", "F", "R"
	data  string
	at    time.Duration
}

func feed(a *Assembler, pkts []pkt) {
	for _, p := range pkts {
		tcp, flow := mkTCP(p)
		a.Assemble(flow, tcp, t0.Add(p.at))
	}
}

func mkTCP(p pkt) (*layers.TCP, gopacket.Flow) {
	src, dst := net.ParseIP(p.from.ip), net.ParseIP(p.to.ip)
	var flow gopacket.Flow
	if s4 := src.To4(); s4 != nil {
		flow = gopacket.NewFlow(layers.EndpointIPv4, s4, dst.To4())
	} else {
		flow = gopacket.NewFlow(layers.EndpointIPv6, src, dst)
	}
	tcp := &layers.TCP{
		SrcPort: layers.TCPPort(p.from.port), DstPort: layers.TCPPort(p.to.port),
		Seq: p.seq, Ack: p.ack,
		SYN: strings.Contains(p.flags, "S"), ACK: strings.Contains(p.flags, "A"),
		FIN: strings.Contains(p.flags, "F"), RST: strings.Contains(p.flags, "R"),
	}
	// Serialise and decode: gopacket's TransportFlow needs a decoded layer.
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, tcp, gopacket.Payload(p.data)); err != nil {
		panic(err)
	}
	var dec layers.TCP
	if err := dec.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
		panic(err)
	}
	return &dec, flow
}

// handshake returns SYN, SYN-ACK with ISNs cisn and sisn (data then starts
// at cisn+1 and sisn+1).
func handshake(c, s ep, cisn, sisn uint32) []pkt {
	return []pkt{
		{from: c, to: s, seq: cisn, flags: "S"},
		{from: s, to: c, seq: sisn, ack: cisn + 1, flags: "SA"},
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func expectEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

type time_ = time.Time

var sprintf = fmt.Sprintf
