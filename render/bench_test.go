package render

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

type collectSink struct{ frames []*decode.Frame }

func (c *collectSink) Frame(f *decode.Frame) { c.frames = append(c.frames, f) }
func (c *collectSink) Event(*decode.Event)   {}

// benchFrames decodes the committed real-client captures (kept frames).
func benchFrames(b *testing.B, lazy bool) []*decode.Frame {
	b.Helper()
	var sink collectSink
	for _, name := range []string{"basic.pcap", "batching-compression.pcap", "chunking.pcap", "many.pcap", "partitioned.pcap", "subscriptions.pcap"} {
		src, err := capture.Open(filepath.Join("../testdata/pcaps", name))
		if err != nil {
			b.Fatal(err)
		}
		sd := decode.NewStreamDecoder(&sink, decode.Options{Retain: true, LazyEntryMetadata: lazy})
		if err := reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src); err != nil {
			b.Fatal(err)
		}
		src.Close()
	}
	if len(sink.frames) < 100 {
		b.Fatalf("%d frames", len(sink.frames))
	}
	return sink.frames
}

// benchWriter runs one frame per iteration: ns/op and allocs/op are per frame.
func benchWriter(b *testing.B, frames []*decode.Frame, w TrackWriter) {
	info := &track.Info{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.FrameInfo(frames[i%len(frames)], info)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
}

func BenchmarkJSON(b *testing.B) {
	benchWriter(b, benchFrames(b, false), NewJSON(io.Discard, JSONOptions{}))
}

// BenchmarkJSONLazy: entries' metadata left encoded by the decoder
// (decode.Options.LazyEntryMetadata), written from the wire.
func BenchmarkJSONLazy(b *testing.B) {
	benchWriter(b, benchFrames(b, true), NewJSON(io.Discard, JSONOptions{}))
}

func BenchmarkText(b *testing.B) {
	benchWriter(b, benchFrames(b, false), NewText(io.Discard, TextOptions{}))
}

func BenchmarkTextColor(b *testing.B) {
	benchWriter(b, benchFrames(b, false), NewText(io.Discard, TextOptions{Color: true}))
}

// BenchmarkEntryMetadata writes one batch entry's SingleMessageMetadata,
// as a bulk producer's, from the wire and by reflection.
func BenchmarkEntryMetadata(b *testing.B) {
	md := &pulsarapi.SingleMessageMetadata{PartitionKey: proto.String("12"), PayloadSize: proto.Int32(200), SequenceId: proto.Uint64(12345)}
	raw, err := proto.Marshal(md)
	if err != nil {
		b.Fatal(err)
	}
	enc := newProtoEncoder()
	plan := planFor(md.ProtoReflect().Descriptor())
	var buf []byte
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = enc.appendWire(buf[:0], raw, plan)
		}
	})
	b.Run("wire-sorted", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = enc.appendWireSorted(buf[:0], raw, plan)
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = enc.appendProtoJSON(buf[:0], md.ProtoReflect())
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		j := NewJSON(io.Discard, JSONOptions{})
		for i := 0; i < b.N; i++ {
			buf = j.appendProtojson(buf[:0], md)
		}
	})
}
