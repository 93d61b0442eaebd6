package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/cputime"
)

// benchCapture returns a pcap of n Ethernet/IPv4/TCP frames of 1448-byte
// payloads.
func benchCapture(b *testing.B, n int) []byte {
	payload := string(bytes.Repeat([]byte{'p'}, 1448))
	recs := make([]rec, n)
	for i := range recs {
		s := tcpSeg(payload)
		s.seq = uint32(1000 + 1448*i)
		recs[i] = rec{ts: t0, data: frameBytes(b, LinkTypeEthernet, s)}
	}
	return pcapFile(binary.LittleEndian, false, LinkTypeEthernet, recs)
}

// BenchmarkSourceNext measures reading and decoding: MB/s of capture file,
// allocations per packet.
func BenchmarkSourceNext(b *testing.B) {
	const n = 10000
	data := benchCapture(b, n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := cputime.Process()
	for i := 0; i < b.N; i++ {
		src, err := OpenReader("bench", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		drain(b, src)
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "packets/s")
	if cpu1, ok := cputime.Process(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkDecode measures link→TCP decoding of one frame.
func BenchmarkDecode(b *testing.B) {
	frame := frameBytes(b, LinkTypeEthernet, tcpSeg(string(bytes.Repeat([]byte{'p'}, 1448))))
	d := NewDecoder()
	var p Packet
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if d.Decode(frame, LinkTypeEthernet, &p) != ResultTCP {
			b.Fatal("not TCP")
		}
	}
}

// BenchmarkSourceNextFile reads every packet of a capture file through Open
// and Source.Next: the path of `pulsarscope read`. The file is
// $PULSARSCOPE_BENCH_PCAP (a large real capture, e.g. /tmp/bulk200.pcap)
// when set, else a committed lab capture.
func BenchmarkSourceNextFile(b *testing.B) {
	path := os.Getenv("PULSARSCOPE_BENCH_PCAP")
	if path == "" {
		path = filepath.Join("..", "testdata", "pcaps", "many.pcap")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	var n int64
	cpu0, cpuOK := cputime.Process()
	for b.Loop() {
		src, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		drain(b, src)
		n += src.Stats().Packets
		src.Close()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "packets/s")
	// CPU time of the whole process (the garbage collector's included):
	// steadier than wall time when other processes share the cores.
	if cpu1, ok := cputime.Process(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// drain reads src to its end.
func drain(b *testing.B, src *Source) {
	for {
		if _, err := src.Next(context.Background()); err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			return
		}
	}
}
