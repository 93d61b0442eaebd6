package decode

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"google.golang.org/protobuf/proto"
)

const vectorDir = "../testdata/vectors/java-client-1.22"

// vector is one raw socket read of the real Java client or broker.
type vector struct {
	name string
	data []byte
}

func loadVectors(tb testing.TB) []vector {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(vectorDir, "*.frame"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no vectors in %s: %v", vectorDir, err)
	}
	sort.Strings(names)
	vs := make([]vector, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		vs = append(vs, vector{name: filepath.Base(n), data: b})
	}
	return vs
}

// clientTypes are the commands the client sends.
var clientTypes = map[string]bool{
	"CONNECT": true, "PARTITIONED_METADATA": true, "LOOKUP": true, "SUBSCRIBE": true,
	"FLOW": true, "PRODUCER": true, "SEND": true, "CLOSE_PRODUCER": true, "ACK": true,
	"CLOSE_CONSUMER": true,
}

func vectorDir2(v vector) reassembly.Dir {
	t := strings.TrimSuffix(v.name[strings.IndexByte(v.name, '-')+1:], ".frame")
	if clientTypes[t] {
		return reassembly.ClientToServer
	}
	return reassembly.ServerToClient
}

// vectorStreams concatenates the vectors into the two directions of one
// connection.
func vectorStreams(tb testing.TB) [2][]byte {
	var s [2][]byte
	for _, v := range loadVectors(tb) {
		d := vectorDir2(v)
		s[d] = append(s[d], v.data...)
	}
	return s
}

// firstFrame returns the first frame of the first vector whose name has suffix.
func firstFrame(tb testing.TB, suffix string) []byte {
	tb.Helper()
	for _, v := range loadVectors(tb) {
		if strings.HasSuffix(v.name, suffix) {
			n := int(binary.BigEndian.Uint32(v.data)) + 4
			return append([]byte(nil), v.data[:n]...)
		}
	}
	tb.Fatalf("no vector %s", suffix)
	return nil
}

// recorder is a Sink that keeps copies of everything (use Options.Retain).
type recorder struct {
	frames []*Frame
	events []*Event
	seq    []string // "F:TYPE" or "E:kind"
}

func (r *recorder) Frame(f *Frame) {
	r.frames = append(r.frames, f)
	r.seq = append(r.seq, "F:"+f.Type.String())
}

func (r *recorder) Event(e *Event) {
	r.events = append(r.events, e)
	r.seq = append(r.seq, "E:"+string(e.Kind))
}

func (r *recorder) eventsOf(k EventKind) []*Event {
	var out []*Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) problems() []Problem {
	var ps []Problem
	for _, f := range r.frames {
		ps = append(ps, f.Problems...)
	}
	for _, e := range r.events {
		ps = append(ps, e.Problems...)
	}
	return ps
}

func testConn(handshake bool) *reassembly.Conn {
	return &reassembly.Conn{
		ID:            1,
		Client:        netip.MustParseAddrPort("10.0.0.1:40000"),
		Server:        netip.MustParseAddrPort("10.0.0.2:6650"),
		FirstSeen:     time.Unix(1531782768, 0),
		HandshakeSeen: handshake,
	}
}

// frameSpec describes a frame to build.
type frameSpec struct {
	cmd      []byte // encoded BaseCommand
	bem      []byte // encoded BrokerEntryMetadata (nil: none)
	noMagic  bool   // old protocol: no 0x0e01 + checksum
	metadata []byte // encoded MessageMetadata (nil: no payload section)
	payload  []byte
}

func mustMarshal(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func buildFrame(s frameSpec) []byte {
	var tail []byte
	if s.metadata != nil {
		if s.bem != nil {
			tail = append(tail, 0x0e, 0x02)
			tail = append(tail, u32(uint32(len(s.bem)))...)
			tail = append(tail, s.bem...)
		}
		var body []byte
		body = append(body, u32(uint32(len(s.metadata)))...)
		body = append(body, s.metadata...)
		body = append(body, s.payload...)
		if !s.noMagic {
			tail = append(tail, 0x0e, 0x01)
			tail = append(tail, u32(CRC32C(body))...)
		}
		tail = append(tail, body...)
	}
	total := 4 + len(s.cmd) + len(tail)
	out := u32(uint32(total))
	out = append(out, u32(uint32(len(s.cmd)))...)
	out = append(out, s.cmd...)
	return append(out, tail...)
}

func sendCmd(tb testing.TB) []byte {
	return mustMarshal(tb, &pulsarapi.BaseCommand{
		Type: pulsarapi.BaseCommand_SEND.Enum(),
		Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(7)},
	})
}

func baseMeta() *pulsarapi.MessageMetadata {
	return &pulsarapi.MessageMetadata{
		ProducerName: proto.String("p"),
		SequenceId:   proto.Uint64(7),
		PublishTime:  proto.Uint64(1531782771181),
	}
}

func codes(ps []Problem) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// shippedCaptures lists the captures committed in testdata/pcaps (not
// their .expect.json files).
func shippedCaptures(tb testing.TB) []string {
	tb.Helper()
	all, err := filepath.Glob("../testdata/pcaps/*.pcap*")
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, name := range all {
		if !strings.HasSuffix(name, ".json") {
			names = append(names, name)
		}
	}
	return names
}
