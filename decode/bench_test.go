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

// smallBatchFrame is like the lab's bulk traffic (Go client): an LZ4 batch
// of 100 entries of 200 bytes, each with partition_key, payload_size and
// sequence_id.
func smallBatchFrame(b testing.TB) []byte {
	var body []byte
	p := bytes.Repeat([]byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 8)[:200]
	for i := 0; i < 100; i++ {
		smm := mustMarshal(b, &pulsarapi.SingleMessageMetadata{
			PartitionKey: proto.String("0"),
			PayloadSize:  proto.Int32(int32(len(p))),
			SequenceId:   proto.Uint64(uint64(i)),
		})
		body = append(body, u32(uint32(len(smm)))...)
		body = append(body, smm...)
		body = append(body, p...)
	}
	md := baseMeta()
	md.PartitionKey = proto.String("0")
	md.Compression = pulsarapi.CompressionType_LZ4.Enum()
	md.UncompressedSize = proto.Uint32(uint32(len(body)))
	md.NumMessagesInBatch = proto.Int32(100)
	return buildFrame(frameSpec{cmd: sendCmd(b), metadata: mustMarshal(b, md), payload: compress(b, pulsarapi.CompressionType_LZ4, body)})
}

// BenchmarkStreamBatchSmallLZ4: batches of many small entries, every
// entry's metadata decoded.
func BenchmarkStreamBatchSmallLZ4(b *testing.B) {
	benchStream(b, bytes.Repeat(smallBatchFrame(b), 50), 64*1024, Options{})
}

// BenchmarkStreamBatchSmallLZ4Lazy: the same, entry metadata only checked
// on the wire (read -q).
func BenchmarkStreamBatchSmallLZ4Lazy(b *testing.B) {
	benchStream(b, bytes.Repeat(smallBatchFrame(b), 50), 64*1024, Options{LazyEntryMetadata: true})
}

// BenchmarkSplitBatch: splitting a batch of 100 small entries (lazy
// metadata), without decompression.
func BenchmarkSplitBatch(b *testing.B) {
	f := NewDecoder(Options{LazyEntryMetadata: true}).Decode(smallBatchFrame(b))
	body := append([]byte(nil), f.Uncompressed...)
	d := NewDecoder(Options{LazyEntryMetadata: true})
	var fr Frame
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fr.reset()
		d.splitBatch(&fr, body, 100)
		if len(fr.Problems) != 0 || len(fr.Entries) != 100 {
			b.Fatal(fr.Problems)
		}
	}
}
