package decode

import (
	"bytes"
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"google.golang.org/protobuf/proto"
)

type nopSink struct{ frames int }

func (s *nopSink) Frame(*Frame) { s.frames++ }
func (s *nopSink) Event(*Event) {}

// benchStream feeds stream in chunks of chunk bytes through one connection
// per iteration and reports MB/s and allocations per frame.
func benchStream(b *testing.B, stream []byte, chunk int, opts Options) {
	sink := &nopSink{}
	sd := NewStreamDecoder(sink, opts)
	c := testConn(true)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sd.Open(c)
		for p := 0; p < len(stream); p += chunk {
			sd.Data(c, reassembly.ClientToServer, stream[p:min(p+chunk, len(stream))], c.FirstSeen)
		}
		sd.Close(c, reassembly.CloseFIN, c.FirstSeen)
	}
	b.StopTimer()
	if sink.frames > 0 {
		b.ReportMetric(float64(sink.frames)/float64(b.N), "frames/op")
	}
}

func sendStream(b *testing.B, payload, frames int) []byte {
	p := bytes.Repeat([]byte("0123456789abcdef"), payload/16)
	md := baseMeta()
	md.UncompressedSize = proto.Uint32(uint32(len(p)))
	fr := metaFrame(b, md, p)
	return bytes.Repeat(fr, frames)
}

// BenchmarkStreamVectors: the real Java client/broker bytes (small frames),
// one Data call per socket read.
func BenchmarkStreamVectors(b *testing.B) {
	vs := loadVectors(b)
	var stream []byte
	for _, v := range vs {
		stream = append(stream, v.data...)
	}
	benchStream(b, stream, 64, Options{})
}

func BenchmarkStreamSend1KiB(b *testing.B) {
	benchStream(b, sendStream(b, 1024, 1000), 64*1024, Options{})
}

func BenchmarkStreamSend16KiB(b *testing.B) {
	benchStream(b, sendStream(b, 16*1024, 200), 64*1024, Options{})
}

// BenchmarkStreamSend16KiBMSS: the same in 1448-byte segments (partial
// frames buffered).
func BenchmarkStreamSend16KiBMSS(b *testing.B) {
	benchStream(b, sendStream(b, 16*1024, 200), 1448, Options{})
}

func BenchmarkStreamSend16KiBRetain(b *testing.B) {
	benchStream(b, sendStream(b, 16*1024, 200), 64*1024, Options{Retain: true, KeepRaw: true})
}

func batchStream(b *testing.B, codec pulsarapi.CompressionType) []byte {
	return bytes.Repeat(batchFrame(b, codec, 100, 0), 50)
}

func BenchmarkStreamBatchNone(b *testing.B) {
	benchStream(b, batchStream(b, pulsarapi.CompressionType_NONE), 64*1024, Options{})
}

func BenchmarkStreamBatchLZ4(b *testing.B) {
	benchStream(b, batchStream(b, pulsarapi.CompressionType_LZ4), 64*1024, Options{})
}

func BenchmarkStreamBatchZSTD(b *testing.B) {
	benchStream(b, batchStream(b, pulsarapi.CompressionType_ZSTD), 64*1024, Options{})
}

// BenchmarkResyncGarbage: scanning bytes that hold no frame.
func BenchmarkResyncGarbage(b *testing.B) {
	g := make([]byte, 1<<20)
	for i := range g {
		g[i] = byte(i*7 + i>>8)
	}
	sink := &nopSink{}
	sd := NewStreamDecoder(sink, Options{})
	c := testConn(false)
	b.SetBytes(int64(len(g)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sd.Open(c)
		for p := 0; p < len(g); p += 1448 {
			sd.Data(c, reassembly.ClientToServer, g[p:min(p+1448, len(g))], c.FirstSeen)
		}
		sd.Close(c, reassembly.CloseFIN, c.FirstSeen)
	}
}

func BenchmarkPlausible(b *testing.B) {
	fr := firstFrame(b, "SEND.frame")
	b.SetBytes(int64(len(fr)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !Plausible(fr) {
			b.Fatal("not plausible")
		}
	}
}
