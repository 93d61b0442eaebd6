package reassembly

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/pulsarscope/pulsarscope/capture"
)

type nopHandler struct{ bytes int64 }

func (h *nopHandler) Open(*Conn)                                 {}
func (h *nopHandler) Data(_ *Conn, _ Dir, d []byte, _ time.Time) { h.bytes += int64(len(d)) }
func (h *nopHandler) Gap(*Conn, Dir, int64, time.Time)           {}
func (h *nopHandler) Close(*Conn, CloseReason, time.Time)        {}

const benchPayload = 1448

// BenchmarkAssembleInOrder: one connection, in-order 1448-byte segments.
func BenchmarkAssembleInOrder(b *testing.B) {
	tcp, flow := mkTCP(pkt{from: cli, to: srv, seq: 1, flags: "A", data: string(bytes.Repeat([]byte{'x'}, benchPayload))})
	h := &nopHandler{}
	a := New(h, Options{})
	ts := t0
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tcp.Seq = uint32(1 + i*benchPayload)
		ts = ts.Add(time.Microsecond)
		a.Assemble(flow, tcp, ts)
	}
	b.StopTimer()
	if h.bytes != int64(b.N)*benchPayload {
		b.Fatalf("delivered %d", h.bytes)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkAssembleSwapped: one connection, every pair of segments swapped.
func BenchmarkAssembleSwapped(b *testing.B) {
	tcp, flow := mkTCP(pkt{from: cli, to: srv, seq: 1, flags: "A", data: string(bytes.Repeat([]byte{'x'}, benchPayload))})
	h := &nopHandler{}
	a := New(h, Options{})
	ts := t0
	b.SetBytes(benchPayload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tcp.Seq = uint32(1 + (i^1)*benchPayload)
		ts = ts.Add(time.Microsecond)
		a.Assemble(flow, tcp, ts)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "segments/s")
}

// BenchmarkPipeline: capture (in-memory pcap) → decode → reassembly, 64
// connections interleaved, both directions; MB/s of capture file.
func BenchmarkPipeline(b *testing.B) {
	const conns, perConn = 64, 200
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	w.WriteFileHeader(65535, layers.LinkTypeEthernet)
	payload := bytes.Repeat([]byte{'y'}, benchPayload)
	for i := 0; i < perConn; i++ {
		for c := 0; c < conns; c++ {
			client := ep{"127.0.0.1", uint16(30000 + c)}
			from, to := client, srv
			if i%4 == 3 {
				from, to = srv, client
			}
			seq := uint32(1 + (i-(i+1)/4)*benchPayload)
			if from == srv {
				seq = uint32(1 + (i/4)*benchPayload)
			}
			frame := ethFrame(b, from, to, seq, payload)
			w.WritePacket(gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i*conns+c) * time.Microsecond), CaptureLength: len(frame), Length: len(frame)}, frame)
		}
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src, err := capture.OpenReader("bench", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		h := &nopHandler{}
		a := New(h, Options{})
		if err := a.Run(context.Background(), src); err != nil {
			b.Fatal(err)
		}
		if h.bytes != int64(conns*perConn*benchPayload) || a.Stats().Gaps != 0 {
			b.Fatal(fmt.Sprintf("delivered %d, stats %+v", h.bytes, a.Stats()))
		}
	}
	b.ReportMetric(float64(conns*perConn*b.N)/b.Elapsed().Seconds(), "packets/s")
}

func ethFrame(b *testing.B, from, to ep, seq uint32, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
		SrcIP: parseIP4(from.ip), DstIP: parseIP4(to.ip)}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(from.port), DstPort: layers.TCPPort(to.port), Seq: seq, ACK: true, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	sb := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
		b.Fatal(err)
	}
	return append([]byte(nil), sb.Bytes()...)
}

func parseIP4(s string) []byte {
	var a [4]byte
	fmt.Sscanf(s, "%d.%d.%d.%d", &a[0], &a[1], &a[2], &a[3])
	return a[:]
}

var _ = binary.BigEndian
