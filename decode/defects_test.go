package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// setSizes rewrites totalSize and commandSize of a frame.
func setSizes(b []byte, total, cmd uint32) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint32(b, total)
	binary.BigEndian.PutUint32(b[4:], cmd)
	return b
}

// withCommand replaces the command of a frame, keeping the rest.
func withCommand(frame, cmd []byte) []byte {
	cs := int(be32(frame[4:]))
	rest := frame[8+cs:]
	out := u32(uint32(4 + len(cmd) + len(rest)))
	out = append(out, u32(uint32(len(cmd)))...)
	out = append(out, cmd...)
	return append(out, rest...)
}

func metaFrame(tb testing.TB, md *pulsarapi.MessageMetadata, payload []byte) []byte {
	return buildFrame(frameSpec{cmd: sendCmd(tb), metadata: mustMarshal(tb, md), payload: payload})
}

// TestFrameDefects provokes each frame-level problem code from real frames
// or frames built with the real libraries.
func TestFrameDefects(t *testing.T) {
	send := firstFrame(t, "SEND.frame")
	ack := firstFrame(t, "ACK.frame")
	lz4Body := batchBody(t, 3)
	tests := []struct {
		name string
		raw  func() []byte
		opts Options
		want string
	}{
		{"flipped payload byte", func() []byte { b := bytes.Clone(send); b[len(b)-1] ^= 1; return b }, Options{}, CodeChecksumMismatch},
		{"flipped stored checksum", func() []byte {
			b := bytes.Clone(send)
			b[8+int(be32(b[4:]))+2] ^= 0x80
			return b
		}, Options{}, CodeChecksumMismatch},
		{"magic 0x0e03", func() []byte { b := bytes.Clone(send); b[8+int(be32(b[4:]))+1] = 0x03; return b }, Options{}, CodeBadMagic},
		{"0x0e02 without 0x0e01", func() []byte {
			bem := mustMarshal(t, &pulsarapi.BrokerEntryMetadata{Index: proto.Uint64(1)})
			return buildFrame(frameSpec{cmd: sendCmd(t), bem: bem, noMagic: true, metadata: mustMarshal(t, baseMeta()), payload: []byte("x")})
		}, Options{}, CodeBadMagic},
		{"frame too large", func() []byte { return setSizes(send, 6<<20, 8) }, Options{}, CodeFrameTooLarge},
		{"frame over a small limit", func() []byte { return send }, Options{MaxFrameSize: 20}, CodeFrameTooLarge},
		{"commandSize 0", func() []byte { return setSizes(ack, be32(ack), 0) }, Options{}, CodeBadCommandSize},
		{"commandSize past frame", func() []byte { return setSizes(ack, be32(ack), be32(ack)) }, Options{}, CodeBadCommandSize},
		{"metadataSize past frame", func() []byte {
			b := bytes.Clone(send)
			binary.BigEndian.PutUint32(b[8+int(be32(b[4:]))+6:], 1000)
			return b
		}, Options{}, CodeBadMetadataSize},
		{"garbage command", func() []byte { return withCommand(ack, []byte{0x08, 0x0a, 0xff, 0xff, 0xff}) }, Options{}, CodeProtobufInvalid},
		{"garbage metadata", func() []byte {
			return buildFrame(frameSpec{cmd: sendCmd(t), metadata: []byte{0x0a, 0x7f}, payload: []byte("x")})
		}, Options{}, CodeProtobufInvalid},
		{"unknown type 99", func() []byte {
			c := protowire.AppendTag(nil, 1, protowire.VarintType)
			c = protowire.AppendVarint(c, 99)
			c = protowire.AppendTag(c, 99, protowire.BytesType)
			c = protowire.AppendBytes(c, []byte{0x08, 0x01})
			return withCommand(ack, c)
		}, Options{}, CodeUnknownCommandType},
		{"type ACK with flow", func() []byte {
			return withCommand(ack, mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK.Enum(),
				Flow: &pulsarapi.CommandFlow{ConsumerId: proto.Uint64(0), MessagePermits: proto.Uint32(1)}}))
		}, Options{}, CodeTypeMismatch},
		{"two sub-commands", func() []byte {
			return withCommand(ack, mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_FLOW.Enum(),
				Flow: &pulsarapi.CommandFlow{ConsumerId: proto.Uint64(0), MessagePermits: proto.Uint32(1)},
				Ping: &pulsarapi.CommandPing{}}))
		}, Options{}, CodeTypeMismatch},
		{"send without sequence_id", func() []byte {
			return withCommand(send, mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(),
				Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(0)}}))
		}, Options{}, CodeMissingRequiredField},
		{"unknown field in nested message", func() []byte {
			cs := int(be32(ack[4:]))
			cmd := bytes.Clone(ack[8 : 8+cs])
			var m pulsarapi.BaseCommand
			if err := proto.Unmarshal(cmd, &m); err != nil {
				t.Fatal(err)
			}
			u := protowire.AppendTag(nil, 900, protowire.VarintType)
			m.Ack.MessageId[0].ProtoReflect().SetUnknown(protowire.AppendVarint(u, 5))
			return withCommand(ack, mustMarshal(t, &m))
		}, Options{}, CodeUnknownFields},
		{"send without payload", func() []byte { return buildFrame(frameSpec{cmd: sendCmd(t)}) }, Options{}, CodeMissingPayload},
		{"ack with trailing bytes", func() []byte {
			b := append(bytes.Clone(ack), 1, 2, 3)
			binary.BigEndian.PutUint32(b, be32(b)+3)
			return b
		}, Options{}, CodeTrailingBytes},
		{"batch count 2 for 3", func() []byte { return batchFrame(t, pulsarapi.CompressionType_NONE, 3, 2) }, Options{}, CodeBatchCountMismatch},
		{"batch entry past end", func() []byte {
			md := baseMeta()
			md.NumMessagesInBatch = proto.Int32(3)
			body := batchBody(t, 3)
			return metaFrame(t, md, body[:len(body)-5])
		}, Options{}, CodeBatchMalformed},
		{"compression 9", func() []byte {
			md := mustMarshal(t, baseMeta())
			md = protowire.AppendTag(md, 8, protowire.VarintType)
			md = protowire.AppendVarint(md, 9)
			return buildFrame(frameSpec{cmd: sendCmd(t), metadata: md, payload: []byte("x")})
		}, Options{}, CodeUnknownCompression},
		{"declared size wrong", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_ZLIB.Enum()
			md.UncompressedSize = proto.Uint32(uint32(len(lz4Body) + 1))
			return metaFrame(t, md, compress(t, pulsarapi.CompressionType_ZLIB, lz4Body))
		}, Options{}, CodeUncompressedSizeMismatch},
		{"declared size wrong, uncompressed", func() []byte {
			md := baseMeta()
			md.UncompressedSize = proto.Uint32(2)
			return metaFrame(t, md, []byte("x"))
		}, Options{}, CodeUncompressedSizeMismatch},
		{"garbage lz4", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_LZ4.Enum()
			md.UncompressedSize = proto.Uint32(100)
			return metaFrame(t, md, []byte{0xff, 1, 2, 3})
		}, Options{}, CodeDecompressionFailed},
		{"garbage zstd", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_ZSTD.Enum()
			md.UncompressedSize = proto.Uint32(100)
			return metaFrame(t, md, []byte("not zstd at all"))
		}, Options{}, CodeDecompressionFailed},
		{"snappy claiming too much", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_SNAPPY.Enum()
			md.UncompressedSize = proto.Uint32(100)
			return metaFrame(t, md, []byte{0xff, 0xff, 0x7f, 0})
		}, Options{}, CodeDecompressionFailed},
		{"declared over limit", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_LZ4.Enum()
			md.UncompressedSize = proto.Uint32(1 << 30)
			return metaFrame(t, md, []byte{0})
		}, Options{}, CodeDecompressionLimit},
		{"zstd bomb under a lying size", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_ZSTD.Enum()
			md.UncompressedSize = proto.Uint32(10)
			return metaFrame(t, md, compress(t, pulsarapi.CompressionType_ZSTD, make([]byte, 1<<20)))
		}, Options{MaxDecompressed: 64 << 10}, CodeDecompressionLimit},
		{"zlib bomb under a lying size", func() []byte {
			md := baseMeta()
			md.Compression = pulsarapi.CompressionType_ZLIB.Enum()
			md.UncompressedSize = proto.Uint32(10)
			return metaFrame(t, md, compress(t, pulsarapi.CompressionType_ZLIB, make([]byte, 1<<20)))
		}, Options{MaxDecompressed: 64 << 10}, CodeDecompressionLimit},
		{"half a frame", func() []byte { return send[:len(send)/2] }, Options{}, CodeTruncatedFrame},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw()
			f := Decode(raw, tc.opts)
			if !HasProblem(f.Problems, tc.want) {
				t.Errorf("want %s, got %v", tc.want, f.Problems)
			}
			if HasProblem(f.Problems, CodeDecoderPanic) {
				t.Errorf("panic: %v", f.Problems)
			}
			// Without payload contents, exactly their problems go.
			so := tc.opts
			so.SkipPayloadContents = true
			sf := Decode(raw, so)
			if got, want := HasProblem(sf.Problems, tc.want), !payloadContentCode(tc.want); got != want {
				t.Errorf("SkipPayloadContents: has %s = %v, want %v (%v)", tc.want, got, want, sf.Problems)
			}
			if sf.Entries != nil || sf.Uncompressed != nil {
				t.Errorf("SkipPayloadContents: %d entries, %d uncompressed bytes", len(sf.Entries), len(sf.Uncompressed))
			}
			// The same frame fed to a stream decoder never panics and stays balanced.
			r := &recorder{}
			sd := NewStreamDecoder(r, Options{Retain: true, MaxFrameSize: tc.opts.MaxFrameSize, MaxDecompressed: tc.opts.MaxDecompressed})
			feedChunks(sd, testConn(true), [2][]byte{append(bytes.Clone(raw), send...), nil}, func() int { return 5 })
			checkBalanced(t, r)
		})
	}
}

// TestResyncAfterHugeSize: a hostile totalSize is reported, the bytes up
// to the next real frame skipped, and every real frame after it decoded.
func TestResyncAfterHugeSize(t *testing.T) {
	s := vectorStreams(t)
	bad := setSizes(firstFrame(t, "SEND.frame"), 0x7fffffff, 8)
	for _, chunk := range []int{1, 3, 64, 1 << 20} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			r := &recorder{}
			sd := NewStreamDecoder(r, Options{Retain: true})
			in := append(bytes.Clone(s[0][:41]), bad...) // after the first CONNECT (41 bytes)
			in = append(in, s[0][41:]...)
			feedChunks(sd, testConn(true), [2][]byte{in, nil}, func() int { return chunk })
			sk := r.eventsOf(EventSkipped)
			if len(sk) != 1 || sk[0].Bytes != int64(len(bad)) || sk[0].Offset != 41 {
				t.Fatalf("skipped events %+v", sk)
			}
			if c := codes(sk[0].Problems); fmt.Sprint(c) != "[frame-too-large bytes-skipped]" {
				t.Errorf("problems %v", sk[0].Problems)
			}
			if n := countFrames(s[0]); len(r.frames) != n {
				t.Errorf("%d frames, want %d", len(r.frames), n)
			}
			for _, f := range r.frames {
				if len(f.Problems) > 0 {
					t.Errorf("frame %d: %v", f.N, f.Problems)
				}
			}
			st := r.eventsOf(EventClose)[0].Stats[0]
			if st.Skipped != int64(len(bad)) || !st.Balanced() {
				t.Errorf("stats %s", st)
			}
		})
	}
}

func countFrames(b []byte) int {
	n := 0
	for len(b) >= 4 {
		b = b[be32(b)+4:]
		n++
	}
	return n
}

func TestResyncAfterBadCommandSize(t *testing.T) {
	s := vectorStreams(t)
	ack := firstFrame(t, "ACK.frame")
	bad := setSizes(ack, be32(ack), 1000)
	in := append(bytes.Clone(bad), s[0]...)
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	feedChunks(sd, testConn(true), [2][]byte{in, nil}, func() int { return 10 })
	sk := r.eventsOf(EventSkipped)
	if len(sk) != 1 || sk[0].Bytes != int64(len(bad)) || sk[0].Problems[0].Code != CodeBadCommandSize {
		for _, e := range sk {
			t.Errorf("skipped %+v", *e)
		}
		t.FailNow()
	}
	if len(r.frames) != countFrames(s[0]) {
		t.Errorf("%d frames", len(r.frames))
	}
}

// TestGapInsideFrame: the rest of a frame cut by a gap is skipped by its
// known size, and framing resumes right after it.
func TestGapInsideFrame(t *testing.T) {
	s := vectorStreams(t)[0]
	first := int(be32(s)) + 4
	second := int(be32(s[first:])) + 4
	c := testConn(true)
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	sd.Open(c)
	cut := first + 10
	sd.Data(c, reassembly.ClientToServer, s[:cut], c.FirstSeen)
	sd.Gap(c, reassembly.ClientToServer, 5, c.FirstSeen)
	sd.Data(c, reassembly.ClientToServer, s[cut+5:], c.FirstSeen)
	sd.Close(c, reassembly.CloseFIN, c.FirstSeen)
	if want := countFrames(s) - 1; len(r.frames) != want {
		t.Errorf("%d frames, want %d", len(r.frames), want)
	}
	gaps := r.eventsOf(EventGap)
	if len(gaps) != 1 || gaps[0].Bytes != 5 || gaps[0].Problems[0].Code != CodeBytesLost || gaps[0].Offset != int64(cut) {
		t.Errorf("gap events %+v", gaps)
	}
	sk := r.eventsOf(EventSkipped)
	if len(sk) != 2 || sk[0].Bytes != 10 || sk[1].Bytes != int64(second-15) || sk[1].Offset != int64(cut+5) {
		t.Errorf("skipped %+v", sk)
	}
	st := r.eventsOf(EventClose)[0].Stats[0]
	if !st.Balanced() || st.Lost != 5 || st.Skipped != int64(second-5) {
		t.Errorf("stats %s", st)
	}
	if r.frames[1].Offset != int64(first+second) {
		t.Errorf("first frame after gap at %d", r.frames[1].Offset)
	}
}

func TestTruncatedAtClose(t *testing.T) {
	s := vectorStreams(t)[1]
	c := testConn(true)
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	sd.Open(c)
	sd.Data(c, reassembly.ServerToClient, s[:len(s)-3], c.FirstSeen)
	sd.Close(c, reassembly.CloseEndOfCapture, c.FirstSeen)
	tr := r.eventsOf(EventTruncated)
	last := countFrames(s)
	if len(tr) != 1 || tr[0].Problems[0].Code != CodeTruncatedFrame || len(r.frames) != last-1 {
		t.Fatalf("truncated %+v, %d frames", tr, len(r.frames))
	}
	st := r.eventsOf(EventClose)[0].Stats[1]
	if st.Truncated != tr[0].Bytes || !st.Balanced() {
		t.Errorf("stats %s", st)
	}
	if r.seq[len(r.seq)-1] != "E:close" || r.eventsOf(EventClose)[0].Detail != "end-of-capture" {
		t.Errorf("sequence %v", r.seq[len(r.seq)-3:])
	}
}

// TestJoinMidStream: without the handshake, leading bytes of a frame are
// skipped until a whole frame is found.
func TestJoinMidStream(t *testing.T) {
	s := vectorStreams(t)[0]
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	feedChunks(sd, testConn(false), [2][]byte{s[17:], nil}, func() int { return 100 })
	sk := r.eventsOf(EventSkipped)
	if len(sk) != 1 || sk[0].Bytes != 41-17 || sk[0].Problems[0].Code != CodeBytesSkipped {
		t.Fatalf("skipped %+v", sk)
	}
	if len(r.frames) != countFrames(s)-1 {
		t.Errorf("%d frames", len(r.frames))
	}
}

func TestPlausible(t *testing.T) {
	for _, v := range loadVectors(t) {
		for b := v.data; len(b) > 0; b = b[be32(b)+4:] {
			if !Plausible(b) {
				t.Errorf("%s: real frame not plausible", v.name)
			}
			size := int(be32(b)) + 4
			if got, need := CheckFrame(b[:size-1], 0); got != NeedMore || need != size {
				t.Errorf("%s: cut frame %v %d", v.name, got, need)
			}
		}
	}
	send := firstFrame(t, "SEND.frame")
	bad := bytes.Clone(send)
	bad[len(bad)-1] ^= 1
	for name, b := range map[string][]byte{"crc": bad, "empty": nil, "zeros": make([]byte, 64), "text": []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")} {
		if Plausible(b) {
			t.Errorf("%s: plausible", name)
		}
	}
}

// TestProblemsDocumented: every code has a section in docs/problems.md.
func TestProblemsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/problems.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range AllCodes() {
		if !strings.Contains(string(doc), "`"+c+"`") {
			t.Errorf("%s not documented", c)
		}
	}
}

// TestResyncWaitsForBigFrame: after a gap at a frame boundary, a large
// SEND arriving in segments is waited for (its command is valid), not
// skipped in favour of something inside its payload.
func TestResyncWaitsForBigFrame(t *testing.T) {
	vs := vectorStreams(t)[0]
	inner := firstFrame(t, "SEND.frame")
	payload := bytes.Repeat(inner, 3000) // real frames inside the payload
	big := buildFrame(frameSpec{cmd: sendCmd(t), metadata: mustMarshal(t, baseMeta()), payload: payload})
	c := testConn(true)
	r := &recorder{}
	sd := NewStreamDecoder(r, Options{Retain: true})
	sd.Open(c)
	sd.Gap(c, reassembly.ClientToServer, 100, c.FirstSeen)
	in := append(bytes.Clone(big), vs...)
	for p := 0; p < len(in); p += 1448 {
		sd.Data(c, reassembly.ClientToServer, in[p:min(p+1448, len(in))], c.FirstSeen)
	}
	sd.Close(c, reassembly.CloseFIN, c.FirstSeen)
	if sk := r.eventsOf(EventSkipped); len(sk) != 0 {
		t.Errorf("skipped %+v", *sk[0])
	}
	if len(r.frames) != 1+countFrames(vs) || len(r.frames[0].Payload) != len(payload) || len(r.frames[0].Problems) != 0 {
		t.Errorf("%d frames; first %s with %d payload bytes, problems %v", len(r.frames), r.frames[0].Type, len(r.frames[0].Payload), r.frames[0].Problems)
	}
	checkBalanced(t, r)
}

// payloadContentCode tells the codes that only decompressing a payload or
// splitting its batch finds (Options.SkipPayloadContents).
func payloadContentCode(code string) bool {
	switch code {
	case CodeBatchCountMismatch, CodeBatchMalformed, CodeUncompressedSizeMismatch, CodeDecompressionFailed, CodeDecompressionLimit:
		return true
	}
	return false
}

// TestTooManyElements: a message with more repeated elements than
// MaxRepeated is not decoded (too-many-elements, in place of what would
// take ~100 bytes of memory an element), the frame keeps its type and the
// rest of its checks; below the limit, or with a higher one, it decodes.
func TestTooManyElements(t *testing.T) {
	const n = 150_000
	ids := make([]*pulsarapi.MessageIdData, n)
	for i := range ids {
		ids[i] = &pulsarapi.MessageIdData{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(uint64(i))}
	}
	ack := buildFrame(frameSpec{cmd: mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK.Enum(),
		Ack: &pulsarapi.CommandAck{ConsumerId: proto.Uint64(1), AckType: pulsarapi.CommandAck_Individual.Enum(), MessageId: ids}})})
	ackSet := make([]int64, n) // packed: a byte each
	message := buildFrame(frameSpec{cmd: mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_MESSAGE.Enum(),
		Message: &pulsarapi.CommandMessage{ConsumerId: proto.Uint64(1), MessageId: &pulsarapi.MessageIdData{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(2)}, AckSet: ackSet}}),
		metadata: mustMarshal(t, baseMeta()), payload: []byte("x")})
	md := baseMeta()
	for i := 0; i < n; i++ {
		md.Properties = append(md.Properties, &pulsarapi.KeyValue{Key: proto.String("k"), Value: proto.String("v")})
	}
	props := buildFrame(frameSpec{cmd: sendCmd(t), metadata: mustMarshal(t, md), payload: []byte("x")})
	for _, tc := range []struct {
		name  string
		raw   []byte
		limit int
		want  bool // too-many-elements
		what  string
	}{
		{"ack ids", ack, 100_000, true, "command"},
		{"ack ids, limit raised", ack, n, false, ""},
		{"packed ack_set", message, 100_000, true, "command"},
		{"metadata properties", props, 100_000, true, "message metadata"},
		{"metadata properties, limit raised", props, 2 * n, false, ""},
		// The default limit is what a legal frame can hold: all decode.
		{"ack ids, default", ack, 0, false, ""},
		{"packed ack_set, default", message, 0, false, ""},
		{"metadata properties, default", props, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, retain := range []bool{false, true} {
				f := Decode(tc.raw, Options{MaxRepeated: tc.limit, Retain: retain})
				got := HasProblem(f.Problems, CodeTooManyElements)
				if got != tc.want || HasProblem(f.Problems, CodeProtobufInvalid) || HasProblem(f.Problems, CodeDecoderPanic) {
					t.Fatalf("retain %v: problems %v", retain, f.Problems)
				}
				if got && !strings.HasPrefix(f.Problems[0].Detail, tc.what+":") {
					t.Errorf("detail %q does not name the %s", f.Problems[0].Detail, tc.what)
				}
				if !got && (f.Command == nil || f.Metadata == nil && f.Type != pulsarapi.BaseCommand_ACK) {
					t.Errorf("not decoded under the limit")
				}
				if (f.Type != pulsarapi.BaseCommand_ACK && f.Type != pulsarapi.BaseCommand_MESSAGE && f.Type != pulsarapi.BaseCommand_SEND) || f.Size != len(tc.raw) {
					t.Errorf("type %v, size %d: the frame lost its framing", f.Type, f.Size)
				}
			}
		})
	}
}
