package decode

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

var allCodecs = []pulsarapi.CompressionType{
	pulsarapi.CompressionType_NONE, pulsarapi.CompressionType_LZ4, pulsarapi.CompressionType_ZLIB,
	pulsarapi.CompressionType_ZSTD, pulsarapi.CompressionType_SNAPPY,
}

// compress compresses b as the Java and Go clients do.
func compress(tb testing.TB, codec pulsarapi.CompressionType, b []byte) []byte {
	tb.Helper()
	switch codec {
	case pulsarapi.CompressionType_NONE:
		return b
	case pulsarapi.CompressionType_LZ4:
		dst := make([]byte, lz4.CompressBlockBound(len(b)))
		n, err := lz4.CompressBlock(b, dst, nil)
		if err != nil || n == 0 {
			tb.Fatalf("lz4: %v %d", err, n)
		}
		return dst[:n]
	case pulsarapi.CompressionType_ZLIB:
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	case pulsarapi.CompressionType_ZSTD:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			tb.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(b, nil)
	case pulsarapi.CompressionType_SNAPPY:
		return snappy.Encode(nil, b)
	}
	tb.Fatalf("codec %v", codec)
	return nil
}

func entryPayload(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("message %d ", i)), 10+i)
}

// batchBody builds an uncompressed batch of n entries.
func batchBody(tb testing.TB, n int) []byte {
	var body []byte
	for i := 0; i < n; i++ {
		p := entryPayload(i)
		smm := mustMarshal(tb, &pulsarapi.SingleMessageMetadata{
			PayloadSize: proto.Int32(int32(len(p))),
			SequenceId:  proto.Uint64(uint64(i)),
		})
		body = append(body, u32(uint32(len(smm)))...)
		body = append(body, smm...)
		body = append(body, p...)
	}
	return body
}

// batchFrame builds a SEND frame carrying a batch of n entries; count
// overrides num_messages_in_batch when not 0.
func batchFrame(tb testing.TB, codec pulsarapi.CompressionType, n int, count int32) []byte {
	body := batchBody(tb, n)
	md := baseMeta()
	md.Compression = codec.Enum()
	md.UncompressedSize = proto.Uint32(uint32(len(body)))
	md.NumMessagesInBatch = proto.Int32(int32(n))
	if count != 0 {
		md.NumMessagesInBatch = proto.Int32(count)
	}
	return buildFrame(frameSpec{cmd: sendCmd(tb), metadata: mustMarshal(tb, md), payload: compress(tb, codec, body)})
}

func TestBatchesAllCodecs(t *testing.T) {
	for _, codec := range allCodecs {
		for _, retain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/retain=%v", codec, retain), func(t *testing.T) {
				d := NewDecoder(Options{Retain: retain})
				for round := 0; round < 2; round++ { // twice: reused buffers
					f := d.Decode(batchFrame(t, codec, 20, 0))
					if len(f.Problems) != 0 {
						t.Fatalf("problems %v", f.Problems)
					}
					if !f.Checksum.OK() || len(f.Entries) != 20 {
						t.Fatalf("checksum %v entries %d", f.Checksum, len(f.Entries))
					}
					for i, e := range f.Entries {
						if !bytes.Equal(e.Payload, entryPayload(i)) || e.Metadata.GetSequenceId() != uint64(i) {
							t.Fatalf("entry %d: %q", i, e.Payload)
						}
					}
				}
			})
		}
	}
}

func TestSingleCompressedMessage(t *testing.T) {
	for _, codec := range allCodecs {
		body := bytes.Repeat([]byte("hello pulsar "), 100)
		md := baseMeta()
		md.Compression = codec.Enum()
		md.UncompressedSize = proto.Uint32(uint32(len(body)))
		f := Decode(buildFrame(frameSpec{cmd: sendCmd(t), metadata: mustMarshal(t, md), payload: compress(t, codec, body)}), Options{})
		if len(f.Problems) != 0 || !bytes.Equal(f.Uncompressed, body) || f.Entries != nil {
			t.Errorf("%s: problems %v, %d bytes, %d entries", codec, f.Problems, len(f.Uncompressed), len(f.Entries))
		}
	}
}

func TestOldProtocolWithoutChecksum(t *testing.T) {
	f := Decode(buildFrame(frameSpec{cmd: sendCmd(t), noMagic: true, metadata: mustMarshal(t, baseMeta()), payload: []byte("hi")}), Options{})
	if len(f.Problems) != 0 || f.Checksum != nil || string(f.Payload) != "hi" || f.Metadata.GetProducerName() != "p" {
		t.Errorf("problems %v checksum %v payload %q", f.Problems, f.Checksum, f.Payload)
	}
	if HasRegion(f, RegionMagic) || !HasRegion(f, RegionMetadataSize) {
		t.Errorf("regions %v", f.Regions)
	}
}

func TestBrokerEntryMetadata(t *testing.T) {
	bem := mustMarshal(t, &pulsarapi.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(42), Index: proto.Uint64(9)})
	raw := buildFrame(frameSpec{cmd: sendCmd(t), bem: bem, metadata: mustMarshal(t, baseMeta()), payload: []byte("hi")})
	f := Decode(raw, Options{})
	if len(f.Problems) != 0 || f.BrokerEntryMetadata.GetIndex() != 9 || !f.Checksum.OK() {
		t.Fatalf("problems %v bem %v", f.Problems, f.BrokerEntryMetadata)
	}
	want := []string{RegionTotalSize, RegionCommandSize, RegionCommand, RegionBrokerEntryMetadata, RegionMagic, RegionChecksum, RegionMetadataSize, RegionMetadata, RegionPayload}
	var got []string
	end := 0
	for _, r := range f.Regions {
		got = append(got, r.Name)
		if r.Start != end {
			t.Errorf("region %s starts at %d, previous ended at %d", r.Name, r.Start, end)
		}
		end = r.End
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || end != len(raw) {
		t.Errorf("regions %v", f.Regions)
	}
	if !Plausible(raw) {
		t.Error("frame with broker entry metadata not plausible")
	}
}

// TestChunk: a chunk is neither decompressed nor split.
func TestChunk(t *testing.T) {
	md := baseMeta()
	md.Compression = pulsarapi.CompressionType_LZ4.Enum()
	md.UncompressedSize = proto.Uint32(1 << 20)
	md.Uuid = proto.String("p-7")
	md.ChunkId = proto.Int32(1)
	md.NumChunksFromMsg = proto.Int32(3)
	md.TotalChunkMsgSize = proto.Int32(3000)
	md.NumMessagesInBatch = proto.Int32(4)
	f := Decode(buildFrame(frameSpec{cmd: sendCmd(t), metadata: mustMarshal(t, md), payload: bytes.Repeat([]byte{1}, 1000)}), Options{})
	if len(f.Problems) != 0 || f.Uncompressed != nil || f.Entries != nil || len(f.Payload) != 1000 {
		t.Errorf("problems %v", f.Problems)
	}
}

// HasRegion reports whether f has a region called name.
func HasRegion(f *Frame, name string) bool {
	for _, r := range f.Regions {
		if r.Name == name {
			return true
		}
	}
	return false
}
