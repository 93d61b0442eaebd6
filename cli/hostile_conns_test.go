package cli

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// connCounter counts what reaches the end of the pipeline.
type connCounter struct {
	frames, opens, evicted, closes int
	findings                       map[string]int
}

func (c *connCounter) Frame(*decode.Frame, *track.Info) { c.frames++ }
func (c *connCounter) Event(e *decode.Event) {
	switch e.Kind {
	case decode.EventOpen:
		c.opens++
	case decode.EventClose:
		c.closes++
		if e.Detail == reassembly.CloseEvicted.String() {
			c.evicted++
		}
	}
}
func (c *connCounter) Finding(fd *track.Finding) { c.findings[fd.Problem.Code]++ }

// segment builds a decoded TCP layer (the Assembler needs one).
func segment(tb testing.TB, sport uint16, seq uint32, syn bool, payload []byte) *layers.TCP {
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: 6650, Seq: seq, SYN: syn, ACK: !syn, Window: 65535, DataOffset: 5}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{}, tcp, gopacket.Payload(payload)); err != nil {
		tb.Fatal(err)
	}
	var out layers.TCP
	if err := out.DecodeFromBytes(buf.Bytes(), gopacket.NilDecodeFeedback); err != nil {
		tb.Fatal(err)
	}
	return &out
}

// runManyConns opens n short connections (SYN, then a real CONNECT) that
// never close, through reassembly → decode → track with a table of
// maxConns; it checks the table never exceeds the bound and every
// eviction is reported as a close event "evicted".
func runManyConns(t *testing.T, n, maxConns int) (memUse, *connCounter, reassembly.Stats) {
	connect := realFrames(t, "basic.pcap")[0][0]
	sink := &connCounter{findings: map[string]int{}}
	tr := track.New(sink, track.Options{})
	sd := decode.NewStreamDecoder(tr, decode.Options{})
	asm := reassembly.New(sd, reassembly.Options{MaxConns: maxConns})
	// Templates, with the ports patched per connection (the layer keeps
	// the raw port bytes gopacket's TransportFlow uses).
	syn := segment(t, 1, 1000, true, nil)
	data := segment(t, 1, 1001, false, connect)
	server := net.IP{10, 255, 0, 1}
	ts := time.Unix(1764400000, 0)
	maxActive := int64(0)
	mem := measure(func() {
		for i := 0; i < n; i++ {
			client := net.IP{10, byte(i >> 24), byte(i >> 16), byte(i >> 8)}
			port := uint16(1024 + i&0xff)
			flow := gopacket.NewFlow(layers.EndpointIPv4, client, server)
			for _, seg := range []*layers.TCP{syn, data} {
				s := *seg
				s.SrcPort = layers.TCPPort(port)
				raw := append([]byte(nil), seg.Contents...)
				raw[0], raw[1] = byte(port>>8), byte(port)
				if err := s.DecodeFromBytes(append(raw, seg.Payload...), gopacket.NilDecodeFeedback); err != nil {
					t.Fatal(err)
				}
				ts = ts.Add(time.Microsecond)
				asm.Assemble(flow, &s, ts)
			}
			if a := asm.Stats().ActiveConns; a > maxActive {
				maxActive = a
			}
		}
		asm.FlushAll()
	})
	st := asm.Stats()
	t.Logf("%d connections, table of %d: %s; max active %d, evictions %d, frames %d", n, maxConns, mem, maxActive, st.Evictions, sink.frames)
	if maxActive > int64(maxConns) {
		t.Errorf("connection table reached %d, bound %d", maxActive, maxConns)
	}
	if st.Conns != int64(n) || sink.opens != n || sink.closes != n || sink.frames != n {
		t.Errorf("conns %d, opens %d, closes %d, frames %d; want %d", st.Conns, sink.opens, sink.closes, sink.frames, n)
	}
	if st.Evictions == 0 || int64(sink.evicted) != st.Evictions || st.Evictions < int64(n-maxConns) {
		t.Errorf("evictions %d, reported %d, want ≥ %d", st.Evictions, sink.evicted, n-maxConns)
	}
	return mem, sink, st
}

// TestHostileManyConnections: 200,000 short connections against a table of
// 5,000: the table stays bounded, evictions are close events "evicted",
// and peak memory does not grow with the number of connections (compared
// with 25,000). PULSARSCOPE_HOSTILE_CONNS=1000000 runs a million against
// the default table of 100,000 (by hand: ~1 min).
func TestHostileManyConnections(t *testing.T) {
	if s := os.Getenv("PULSARSCOPE_HOSTILE_CONNS"); s != "" {
		n, _ := strconv.Atoi(s)
		runManyConns(t, n, reassembly.DefaultMaxConns)
		return
	}
	small, _, _ := runManyConns(t, 25_000, 5_000)
	big, _, _ := runManyConns(t, 200_000, 5_000)
	if big.PeakHeap > 2*small.PeakHeap+16<<20 {
		t.Errorf("peak heap grows with connections: %s for 25k, %s for 200k", byteSize(small.PeakHeap), byteSize(big.PeakHeap))
	}
}
