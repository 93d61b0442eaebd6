package capture

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

func tcpSeg(payload string) seg {
	return seg{src: "127.0.0.1", dst: "127.0.0.2", sport: 40000, dport: 6650, seq: 1000, ack: true, payload: []byte(payload)}
}

func tcpSeg6(payload string) seg {
	s := tcpSeg(payload)
	s.src, s.dst, s.ipv6 = "::1", "fe80::2", true
	return s
}

// readAll reads every TCP packet of src, copying what it needs.
type got struct {
	n        int
	ts       time.Time
	src, dst string
	sport    uint16
	dport    uint16
	payload  string
	missing  int
	ipv6     bool
	lt       layers.LinkType
	iface    int
}

func readAll(t *testing.T, src *Source) ([]got, error) {
	t.Helper()
	var out []got
	for {
		p, err := src.Next(context.Background())
		if err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		out = append(out, got{
			n: p.N, ts: p.Time, src: p.NetFlow.Src().String(), dst: p.NetFlow.Dst().String(),
			sport: uint16(p.TCP.SrcPort), dport: uint16(p.TCP.DstPort), payload: string(p.TCP.Payload), missing: p.Missing,
			ipv6: p.IPv6, lt: p.LinkType, iface: p.InterfaceIndex,
		})
	}
}

func TestLinkTypes(t *testing.T) {
	vlan1 := tcpSeg("vlan")
	vlan1.vlans = 1
	qinq := tcpSeg("qinq")
	qinq.vlans = 2
	qinq6 := tcpSeg6("qinq6")
	qinq6.vlans = 2
	tests := []struct {
		name string
		lt   layers.LinkType
		s    seg
	}{
		{"ethernet/v4", LinkTypeEthernet, tcpSeg("hello")},
		{"ethernet/v6", LinkTypeEthernet, tcpSeg6("hello6")},
		{"ethernet/802.1Q", LinkTypeEthernet, vlan1},
		{"ethernet/QinQ", LinkTypeEthernet, qinq},
		{"ethernet/QinQ/v6", LinkTypeEthernet, qinq6},
		{"sll/v4", LinkTypeSLL, tcpSeg("sll")},
		{"sll/v6", LinkTypeSLL, tcpSeg6("sll6")},
		{"sll2/v4", LinkTypeSLL2, tcpSeg("sll2")},
		{"sll2/v6", LinkTypeSLL2, tcpSeg6("sll2-6")},
		{"raw101/v4", LinkTypeRaw, tcpSeg("raw")},
		{"raw101/v6", LinkTypeRaw, tcpSeg6("raw6")},
		{"ipv4-228", LinkTypeIPv4, tcpSeg("ipv4")},
		{"ipv6-229", LinkTypeIPv6, tcpSeg6("ipv6")},
		{"null/v4", LinkTypeNull, tcpSeg("null")},
		{"null/v6", LinkTypeNull, tcpSeg6("null6")},
		{"loop/v4", LinkTypeLoop, tcpSeg("loop")},
		{"loop/v6", LinkTypeLoop, tcpSeg6("loop6")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := pcapFile(binary.LittleEndian, false, tc.lt, []rec{{ts: t0, data: frameBytes(t, tc.lt, tc.s)}})
			src, err := OpenReader(tc.name, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			pkts, err := readAll(t, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(pkts) != 1 {
				t.Fatalf("got %d packets, want 1 (stats %+v)", len(pkts), src.Stats())
			}
			p := pkts[0]
			if p.payload != string(tc.s.payload) || p.sport != tc.s.sport || p.dport != tc.s.dport || p.ipv6 != tc.s.ipv6 {
				t.Errorf("got %+v", p)
			}
			if p.src != mustIP(tc.s.src).String() || p.dst != mustIP(tc.s.dst).String() {
				t.Errorf("flow %s -> %s", p.src, p.dst)
			}
			if p.lt != tc.lt {
				t.Errorf("link type %v", p.lt)
			}
		})
	}
}

func TestByteOrderAndResolution(t *testing.T) {
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			name := order.String()
			if nano {
				name += "/ns"
			} else {
				name += "/us"
			}
			t.Run(name, func(t *testing.T) {
				recs := []rec{
					{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("one"))},
					{ts: t0.Add(time.Second + 7), data: frameBytes(t, LinkTypeEthernet, tcpSeg("two"))},
				}
				src, err := OpenReader(name, bytes.NewReader(pcapFile(order, nano, LinkTypeEthernet, recs)))
				if err != nil {
					t.Fatal(err)
				}
				pkts, err := readAll(t, src)
				if err != nil || len(pkts) != 2 {
					t.Fatalf("%d packets, err %v", len(pkts), err)
				}
				for i, p := range pkts {
					want := recs[i].ts
					if !nano {
						want = want.Truncate(time.Microsecond)
					}
					if !p.ts.Equal(want) {
						t.Errorf("packet %d time %v, want %v", i, p.ts, want)
					}
					if p.n != i+1 {
						t.Errorf("N = %d", p.n)
					}
				}
				if pkts[1].payload != "two" {
					t.Errorf("payload %q", pkts[1].payload)
				}
			})
		}
	}
}

func TestPcapngTwoInterfaces(t *testing.T) {
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&b, pcapgo.NgInterface{Name: "eth0", LinkType: LinkTypeEthernet, SnapLength: 65535}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	id, err := w.AddInterface(pcapgo.NgInterface{Name: "any", LinkType: LinkTypeSLL2, SnapLength: 65535})
	if err != nil {
		t.Fatal(err)
	}
	write := func(iface int, lt layers.LinkType, s seg) {
		d := frameBytes(t, lt, s)
		ci := ciFor(t0, d, iface)
		if err := w.WritePacket(ci, d); err != nil {
			t.Fatal(err)
		}
	}
	write(0, LinkTypeEthernet, tcpSeg("eth"))
	write(id, LinkTypeSLL2, tcpSeg6("sll2"))
	write(0, LinkTypeEthernet, tcpSeg("eth again"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	src, err := OpenReader("two.pcapng", &b)
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := readAll(t, src)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		payload string
		lt      layers.LinkType
		iface   int
	}{{"eth", LinkTypeEthernet, 0}, {"sll2", LinkTypeSLL2, 1}, {"eth again", LinkTypeEthernet, 0}}
	if len(pkts) != len(want) {
		t.Fatalf("%d packets", len(pkts))
	}
	for i, w := range want {
		if pkts[i].payload != w.payload || pkts[i].lt != w.lt || pkts[i].iface != w.iface {
			t.Errorf("packet %d: %+v, want %+v", i, pkts[i], w)
		}
	}
}

func gz(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGzipAndFiles(t *testing.T) {
	dir := t.TempDir()
	plain := pcapFile(binary.LittleEndian, true, LinkTypeEthernet, []rec{
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("a"))},
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("b"))},
	})
	for name, data := range map[string][]byte{"plain.pcap": plain, "comp.pcap.gz": gz(t, plain), "noext": gz(t, plain)} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o644)
		src, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pkts, err := readAll(t, src)
		src.Close()
		if err != nil || len(pkts) != 2 || pkts[1].payload != "b" {
			t.Errorf("%s: %d packets, err %v", name, len(pkts), err)
		}
	}
}

func TestStdin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.pcap")
	os.WriteFile(path, gz(t, pcapFile(binary.BigEndian, false, LinkTypeRaw, []rec{{ts: t0, data: frameBytes(t, LinkTypeRaw, tcpSeg("stdin"))}})), 0o644)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	src, err := Open("-")
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := readAll(t, src)
	if err != nil || len(pkts) != 1 || pkts[0].payload != "stdin" {
		t.Fatalf("%v %v", pkts, err)
	}
}

func TestTruncatedLastRecord(t *testing.T) {
	recs := []rec{
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("first"))},
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("second"))},
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("third"))},
	}
	full := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, recs)
	var b bytes.Buffer
	ng, _ := pcapgo.NewNgWriter(&b, LinkTypeEthernet)
	for _, r := range recs {
		ng.WritePacket(ciFor(r.ts, r.data, 0), r.data)
	}
	ng.Flush()
	fullNg := b.Bytes()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"pcap/mid-data", full[:len(full)-5]},
		{"pcap/mid-header", full[:len(full)-len(recs[2].data)-6]},
		{"pcapng/mid-block", fullNg[:len(fullNg)-10]},
		{"gzip/pcap/mid-data", gz(t, full[:len(full)-5])},
		{"gzip-stream-cut", gz(t, full)[:len(gz(t, full))-12]},
	} {
		// A reader of unknown size (no Len, like stdin) is read ahead
		// (readAhead); a bytes.Reader this small is not.
		for _, sized := range []bool{true, false} {
			name := tc.name
			var r io.Reader = bytes.NewReader(tc.data)
			if !sized {
				name += "/read-ahead"
				r = struct{ io.Reader }{r}
			}
			truncatedCase(t, name, r)
		}
	}
}

// truncatedCase reads a capture cut short from r: the packets before the
// cut come, then ErrTruncated naming the input, again on every Next.
func truncatedCase(t *testing.T, name string, r io.Reader) {
	t.Run(name, func(t *testing.T) {
		src, err := OpenReader(name, r)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		pkts, err := readAll(t, src)
		if len(pkts) < 2 || pkts[0].payload != "first" || pkts[1].payload != "second" {
			t.Errorf("packets before the cut: %+v", pkts)
		}
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("err = %v, want ErrTruncated", err)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.File != name {
			t.Errorf("error does not name the file: %v", err)
		}
		if !src.Stats().TruncatedFile {
			t.Error("stats: TruncatedFile not set")
		}
		if _, err2 := src.Next(context.Background()); err2 != err {
			t.Errorf("second Next: %v", err2)
		}
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknownLT := pcapFile(binary.LittleEndian, false, layers.LinkType(147), nil)
	tests := []struct {
		name string
		path string
		want error
	}{
		{"directory", dir, ErrIsDirectory},
		{"missing", filepath.Join(dir, "nope.pcap"), fs.ErrNotExist},
		{"empty", write("empty.pcap", nil), ErrEmpty},
		{"empty gzip", write("empty.gz", gz(t, nil)), ErrEmpty},
		{"garbage", write("garbage.pcap", []byte("this is not a capture file at all")), ErrNotCapture},
		{"short", write("short.pcap", []byte{1, 2}), ErrNotCapture},
		{"truncated pcap header", write("hdr.pcap", pcapFile(binary.LittleEndian, false, 1, nil)[:10]), ErrTruncated},
		{"bad pcap version", write("ver.pcap", append([]byte{0xd4, 0xc3, 0xb2, 0xa1, 9, 9}, make([]byte, 18)...)), ErrNotCapture},
		{"bad gzip", write("bad.gz", []byte{0x1f, 0x8b, 0, 0, 0}), ErrNotCapture},
		{"unknown link type", write("lt.pcap", unknownLT), ErrUnknownLinkType},
		{"truncated pcapng", write("ng.pcapng", []byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0}), ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.path)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != tc.path {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	p := filepath.Join(t.TempDir(), "secret.pcap")
	os.WriteFile(p, []byte("x"), 0)
	_, err := Open(p)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v", err)
	}
}

func TestCountersAndSkips(t *testing.T) {
	udp := tcpSeg("udp")
	udp.udp = true
	frag := tcpSeg("fragment")
	frag.fragment = true
	arp := frameBytes(t, LinkTypeEthernet, tcpSeg("x"))
	arp[12], arp[13] = 0x08, 0x06
	full := frameBytes(t, LinkTypeEthernet, tcpSeg("truncated payload"))
	recs := []rec{
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("tcp1"))},
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, udp)},
		{ts: t0, data: arp},
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, frag)},
		{ts: t0, data: []byte{1, 2, 3}},                                   // malformed Ethernet
		{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("x"))[:30]}, // IPv4 header cut
		{ts: t0, data: full[:len(full)-5], wireLen: len(full)},            // snaplen-truncated TCP
	}
	src, err := OpenReader("counters", bytes.NewReader(pcapFile(binary.LittleEndian, false, LinkTypeEthernet, recs)))
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := readAll(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 2 || pkts[0].payload != "tcp1" || pkts[1].payload != "truncated pa" || pkts[1].n != 7 || pkts[1].missing != 5 || pkts[0].missing != 0 {
		t.Fatalf("packets %+v", pkts)
	}
	st := src.Stats()
	want := Stats{Packets: 7, TCP: 2, NonTCP: 2, Fragments: 1, FragmentsLost: 1, DecodeErrors: 2, Truncated: 1} // the lone fragment: never completed
	st.Bytes = 0
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

func TestContextCancel(t *testing.T) {
	recs := make([]rec, 1000)
	for i := range recs {
		recs[i] = rec{ts: t0, data: frameBytes(t, LinkTypeEthernet, tcpSeg("x"))}
	}
	src, _ := OpenReader("ctx", bytes.NewReader(pcapFile(binary.LittleEndian, false, LinkTypeEthernet, recs)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	var err error
	for ; err == nil; n++ {
		_, err = src.Next(ctx)
	}
	if !errors.Is(err, context.Canceled) || n > 300 {
		t.Fatalf("after %d: %v", n, err)
	}
}

// Real captures made with tcpdump/dumpcap on loopback: a client on an
// ephemeral port sends 23225 bytes to 127.0.0.1:6650, which answers 209.
func TestRealCaptures(t *testing.T) {
	tests := []struct {
		file    string
		lt      layers.LinkType
		packets int
		dup     int64
	}{
		{"loopback.pcap", LinkTypeEthernet, 21, 1},
		{"loopback-nano.pcap", LinkTypeEthernet, 21, 1},
		{"any.pcap", LinkTypeSLL2, 21, 1},
		{"two-ifaces.pcapng", 0, 42, 2}, // lo (Ethernet) and any (SLL) both
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			src, err := Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			pkts, err := readAll(t, src)
			if err != nil {
				t.Fatal(err)
			}
			var c2s, s2c int64
			lts := map[layers.LinkType]bool{}
			for _, p := range pkts {
				lts[p.lt] = true
				if p.dport == 6650 {
					c2s += int64(len(p.payload))
				} else if p.sport == 6650 {
					s2c += int64(len(p.payload))
				}
			}
			if len(pkts) != tc.packets || c2s != 23225*tc.dup || s2c != 209*tc.dup {
				t.Errorf("%d packets, c2s %d, s2c %d", len(pkts), c2s, s2c)
			}
			if tc.lt != 0 && (len(lts) != 1 || !lts[tc.lt]) {
				t.Errorf("link types %v", lts)
			}
			if tc.lt == 0 && (!lts[LinkTypeEthernet] || !lts[LinkTypeSLL]) {
				t.Errorf("link types %v", lts)
			}
			if st := src.Stats(); st.Packets != int64(tc.packets) || st.TCP != int64(tc.packets) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestMissingIPv6AndSLL2(t *testing.T) {
	full := frameBytes(t, LinkTypeSLL2, tcpSeg6("0123456789"))
	src, err := OpenReader("v6trunc", bytes.NewReader(pcapFile(binary.BigEndian, true, LinkTypeSLL2,
		[]rec{{ts: t0, data: full[:len(full)-7], wireLen: len(full)}})))
	if err != nil {
		t.Fatal(err)
	}
	pkts, err := readAll(t, src)
	if err != nil || len(pkts) != 1 || pkts[0].payload != "012" || pkts[0].missing != 7 {
		t.Fatalf("%+v %v", pkts, err)
	}
}
