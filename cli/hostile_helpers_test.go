package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	gproto "google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Hostile-capture helpers: build captures with pcapgo from the real frames
// of testdata/pcaps, and measure memory while pulsarscope reads them.

// hrec is one capture record.
type hrec struct {
	ts      time.Time
	data    []byte
	origLen int // 0: len(data)
}

// hconv builds one TCP conversation as Ethernet/IPv4 records.
type hconv struct {
	c, s       netip.AddrPort
	cseq, sseq uint32
	ts         time.Time
	step       time.Duration
	recs       []hrec
	mss        int
}

func newConv(cport uint16, isn uint32) *hconv {
	return &hconv{
		c: netip.AddrPortFrom(netip.MustParseAddr("10.1.0.1"), cport), s: netip.MustParseAddrPort("10.1.0.2:6650"),
		cseq: isn, sseq: 0x10000000, ts: time.Unix(1764400000, 0), step: time.Millisecond, mss: 1448,
	}
}

func tcpPacket(src, dst netip.AddrPort, seq, ack uint32, flags string, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack, Window: 65535,
		SYN: strings.Contains(flags, "S"), ACK: strings.Contains(flags, "A"), FIN: strings.Contains(flags, "F"), RST: strings.Contains(flags, "R"), PSH: len(payload) > 0}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func (v *hconv) add(data []byte) {
	v.recs = append(v.recs, hrec{ts: v.ts, data: data})
	v.ts = v.ts.Add(v.step)
}

func (v *hconv) handshake() {
	v.add(tcpPacket(v.c, v.s, v.cseq, 0, "S", nil))
	v.add(tcpPacket(v.s, v.c, v.sseq, v.cseq+1, "SA", nil))
	v.cseq++
	v.sseq++
	v.add(tcpPacket(v.c, v.s, v.cseq, v.sseq, "A", nil))
}

// send sends b from the client (dir 0) or the server, in MSS segments.
func (v *hconv) send(dir int, b []byte) {
	for len(b) > 0 {
		n := min(len(b), v.mss)
		if dir == 0 {
			v.add(tcpPacket(v.c, v.s, v.cseq, v.sseq, "A", b[:n]))
			v.cseq += uint32(n)
		} else {
			v.add(tcpPacket(v.s, v.c, v.sseq, v.cseq, "A", b[:n]))
			v.sseq += uint32(n)
		}
		b = b[n:]
	}
}

func (v *hconv) fin() {
	v.add(tcpPacket(v.c, v.s, v.cseq, v.sseq, "FA", nil))
	v.add(tcpPacket(v.s, v.c, v.sseq, v.cseq+1, "FA", nil))
	v.add(tcpPacket(v.c, v.s, v.cseq+1, v.sseq+1, "A", nil))
}

// writePcap writes recs as a pcap file with the given snap length.
func writePcap(tb testing.TB, recs []hrec, snaplen uint32) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(snaplen, layers.LinkTypeEthernet); err != nil {
		tb.Fatal(err)
	}
	for _, r := range recs {
		orig := r.origLen
		if orig == 0 {
			orig = len(r.data)
		}
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: len(r.data), Length: orig}, r.data); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

func writeTemp(tb testing.TB, name string, data []byte) string {
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// realFrames returns the frames of a lab capture's first connection, by
// direction, in order, as they are on the wire.
type collectRaw struct{ frames [2][][]byte }

func (c *collectRaw) Frame(f *decode.Frame) {
	if f.Conn.ID == 1 {
		c.frames[f.Dir] = append(c.frames[f.Dir], f.Raw)
	}
}
func (c *collectRaw) Event(*decode.Event) {}

func realFrames(tb testing.TB, name string) [2][][]byte {
	src, err := capture.Open(filepath.Join("../testdata/pcaps", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	c := &collectRaw{}
	sd := decode.NewStreamDecoder(c, decode.Options{Retain: true, KeepRaw: true})
	if err := reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src); err != nil {
		tb.Fatal(err)
	}
	if len(c.frames[0]) < 2 || len(c.frames[1]) < 2 {
		tb.Fatalf("%s: too few frames", name)
	}
	return c.frames
}

// frameOf builds a simple command frame.
func frameOf(tb testing.TB, cmd *pulsarapi.BaseCommand) []byte {
	c, err := gproto.MarshalOptions{AllowPartial: true}.Marshal(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(c)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	return append(b, c...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// payloadFrame builds a SEND frame with a checksum, metadata md and payload.
func payloadFrame(tb testing.TB, md *pulsarapi.MessageMetadata, payload []byte) []byte {
	cmd := &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(), Send: &pulsarapi.CommandSend{ProducerId: gproto.Uint64(0), SequenceId: gproto.Uint64(1)}}
	c, err := gproto.Marshal(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := gproto.Marshal(md)
	if err != nil {
		tb.Fatal(err)
	}
	rest := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	rest = append(append(rest, m...), payload...)
	body := binary.BigEndian.AppendUint32(nil, uint32(len(c)))
	body = append(body, c...)
	body = append(body, 0x0e, 0x01)
	body = binary.BigEndian.AppendUint32(body, crc32.Checksum(rest, castagnoli))
	body = append(body, rest...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// memUse is what measure saw: the peak of HeapAlloc above the level before
// the run, and the bytes allocated during it.
type memUse struct {
	PeakHeap, Allocated uint64
}

func (m memUse) String() string {
	return strings.TrimSpace(byteSize(m.PeakHeap) + " peak heap, " + byteSize(m.Allocated) + " allocated")
}

func byteSize(n uint64) string {
	switch {
	case n >= 1<<20:
		return strings.TrimRight(strings.TrimRight(ftoa(float64(n)/(1<<20)), "0"), ".") + " MiB"
	case n >= 1<<10:
		return strings.TrimRight(strings.TrimRight(ftoa(float64(n)/(1<<10)), "0"), ".") + " KiB"
	}
	return ftoa(float64(n)) + " B"
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// measure runs fn while sampling runtime.ReadMemStats every 2 ms.
func measure(fn func()) memUse {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				runtime.ReadMemStats(&ms)
				mu.Lock()
				peak = max(peak, ms.HeapAlloc)
				mu.Unlock()
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	peak = max(peak, after.HeapAlloc)
	return memUse{PeakHeap: peak - before.HeapAlloc, Allocated: after.TotalAlloc - before.TotalAlloc}
}

// grepWriter records which of its needles appear in what is written to it,
// without keeping the output.
type grepWriter struct {
	needles []string
	found   map[string]int
	tail    []byte
	n       int64
}

func newGrep(needles ...string) *grepWriter {
	return &grepWriter{needles: needles, found: map[string]int{}}
}

func (g *grepWriter) Write(p []byte) (int, error) {
	g.n += int64(len(p))
	buf := append(g.tail, p...)
	keep := 0
	for _, s := range g.needles {
		keep = max(keep, len(s)-1)
	}
	for _, s := range g.needles {
		// count occurrences that end in the new bytes
		from := 0
		for {
			i := bytes.Index(buf[from:], []byte(s))
			if i < 0 {
				break
			}
			if from+i+len(s) > len(g.tail) {
				g.found[s]++
			}
			from += i + 1
		}
	}
	if len(buf) > keep {
		buf = buf[len(buf)-keep:]
	}
	g.tail = append(g.tail[:0], buf...)
	return len(p), nil
}

// runMain runs the CLI on args and returns the exit code, what stdout
// matched, stderr and the memory used.
func runMain(tb testing.TB, args []string, needles ...string) (int, *grepWriter, string, memUse) {
	out := newGrep(needles...)
	var errb bytes.Buffer
	var code int
	mem := measure(func() { code = Main(args, strings.NewReader(""), out, &errb) })
	tb.Logf("pulsarscope %s: exit %d, %d bytes out, %s", strings.Join(args, " "), code, out.n, mem)
	return code, out, errb.String(), mem
}

// writePcapng writes recs as a pcapng file (one Ethernet interface).
func writePcapng(tb testing.TB, recs []hrec) []byte {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range recs {
		orig := r.origLen
		if orig == 0 {
			orig = len(r.data)
		}
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: len(r.data), Length: orig}, r.data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
