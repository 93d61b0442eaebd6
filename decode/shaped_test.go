package decode

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

// frameDigest is what a frame says, for comparing a reusing Decoder with
// fresh decoding: command, metadata (deterministic encoding) and problem
// codes (not details: a reused zstd decoder words some failures
// differently).
func frameDigest(f *Frame) string {
	cmd, _ := detMarshal.Marshal(f.Command)
	md, _ := detMarshal.Marshal(f.Metadata)
	return fmt.Sprintf("%s cmd=%x md=%x problems=%q", f.Type, cmd, md, codes(f.Problems))
}

// TestShapedReuse decodes a run of frames with one reusing Decoder, each
// as a fresh Decoder (Retain) would: messages of one wire shape merged
// into the previous one's message must leave nothing of it (values,
// strings of other lengths, nested messages), and a change of shape,
// repeated fields, missing required fields and unknown fields must each
// be decoded afresh.
func TestShapedReuse(t *testing.T) {
	send := func(p, seq uint64, extra func(*pulsarapi.CommandSend)) []byte {
		s := &pulsarapi.CommandSend{ProducerId: proto.Uint64(p), SequenceId: proto.Uint64(seq)}
		if extra != nil {
			extra(s)
		}
		return mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(), Send: s})
	}
	meta := func(name string, seq uint64, extra func(*pulsarapi.MessageMetadata)) []byte {
		m := &pulsarapi.MessageMetadata{ProducerName: proto.String(name), SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(1531782771181 + seq)}
		if extra != nil {
			extra(m)
		}
		return mustMarshal(t, m)
	}
	message := func(ledger, entry uint64, extra func(*pulsarapi.CommandMessage)) []byte {
		m := &pulsarapi.CommandMessage{ConsumerId: proto.Uint64(3), MessageId: &pulsarapi.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}}
		if extra != nil {
			extra(m)
		}
		return mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_MESSAGE.Enum(), Message: m})
	}
	withKey := func(m *pulsarapi.MessageMetadata) { m.PartitionKey = proto.String("k") }
	props := func(m *pulsarapi.MessageMetadata) {
		m.Properties = []*pulsarapi.KeyValue{{Key: proto.String("a"), Value: proto.String("b")}}
	}
	unknown := func(m *pulsarapi.MessageMetadata) { m.ProtoReflect().SetUnknown([]byte{0xf8, 0x3e, 1}) } // field 999
	frames := []frameSpec{
		{cmd: send(1, 1, nil), metadata: meta("producer-a", 1, nil), payload: []byte("x")},
		{cmd: send(2, 300, nil), metadata: meta("b", 300, nil), payload: []byte("y")}, // same shapes, longer varints, shorter string
		{cmd: send(2, 3, func(s *pulsarapi.CommandSend) { s.NumMessages = proto.Int32(5) }), metadata: meta("b", 3, withKey), payload: []byte("z")},
		{cmd: send(2, 4, nil), metadata: meta("b", 4, nil), payload: []byte("z")}, // back to fewer fields
		{cmd: send(2, 5, nil), metadata: meta("b", 5, props), payload: []byte("z")},
		{cmd: send(2, 6, nil), metadata: meta("b", 6, props), payload: []byte("z")}, // repeated: never merged
		{cmd: send(2, 7, nil), metadata: meta("c", 7, nil), payload: []byte("z")},
		{cmd: send(2, 8, nil), metadata: meta("c", 8, unknown), payload: []byte("z")},
		{cmd: send(2, 9, nil), metadata: meta("c", 9, nil), payload: []byte("z")},
		{cmd: message(10, 1, nil), metadata: meta("c", 9, nil), payload: []byte("m")},
		{cmd: message(10, 2, func(m *pulsarapi.CommandMessage) { m.MessageId.Partition = proto.Int32(4) }), metadata: meta("c", 9, nil), payload: []byte("m")},
		{cmd: message(11, 3, nil), metadata: meta("c", 9, nil), payload: []byte("m")},
		{cmd: message(11, 4, func(m *pulsarapi.CommandMessage) { m.MessageId.LedgerId = nil }), metadata: meta("c", 9, nil), payload: []byte("m")}, // missing required
		{cmd: message(12, 5, nil), metadata: meta("c", 9, nil), payload: []byte("m")},
	}
	reuse := NewDecoder(Options{})
	for i, fs := range frames {
		raw := buildFrame(fs)
		want := frameDigest(Decode(raw, Options{Retain: true}))
		if got := frameDigest(reuse.Decode(raw)); got != want {
			t.Fatalf("frame %d:\nreused %s\nfresh  %s", i, got, want)
		}
	}
	// 12 of the 28 messages repeat the shape of the one before them in
	// the same reused message (the rest are new shapes, repeated fields,
	// unknown or missing fields).
	if reuse.merged < 8 {
		t.Errorf("%d messages merged into one of their shape, want at least 8", reuse.merged)
	}
}

// TestShapedBounded: what reuse by shape keeps stays small whatever the
// input: big commands and metadata, and messages of long shapes, are not
// kept by shape, so a hostile capture cannot make every slot hold a big
// message per command type (or a huge shape).
func TestShapedBounded(t *testing.T) {
	pings := func(n int) []byte { // "ping {}" n times: 3 wire bytes, 3 shape tokens each
		b := mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_PING.Enum()})
		for i := 0; i < n; i++ {
			b = append(b, 0x92, 0x01, 0x00) // field 18 (ping), length 0
		}
		return b
	}
	bigError := mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK_RESPONSE.Enum(),
		AckResponse: &pulsarapi.CommandAckResponse{ConsumerId: proto.Uint64(1), Message: proto.String(strings.Repeat("x", 1<<20))}})
	bigMeta := mustMarshal(t, &pulsarapi.MessageMetadata{ProducerName: proto.String(strings.Repeat("p", 1<<20)), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2)})
	d := NewDecoder(Options{MaxFrameSize: 8 << 20})
	for _, fs := range []frameSpec{
		{cmd: pings(100000)}, // 300 KB of one shape token run
		{cmd: pings(300)},    // under shapedMaxBytes, a shape over shapedMaxTokens
		{cmd: bigError},      // a shaped type, 1 MiB
		{cmd: sendCmd(t), metadata: bigMeta, payload: []byte("x")},
	} {
		f := d.Decode(buildFrame(fs))
		if HasProblem(f.Problems, CodeDecoderPanic) {
			t.Fatal(f.Problems)
		}
	}
	if c := cap(d.shapeBuf); c > 4*shapedMaxTokens {
		t.Errorf("shape scratch of %d tokens", c)
	}
	for i, s := range d.fb.cmds {
		if s == nil {
			continue
		}
		if n := proto.Size(s.m); n > shapedMaxBytes {
			t.Errorf("%s: a kept message of %d bytes", shapedTypes[i], n)
		}
		if len(s.shape) > shapedMaxTokens+2 {
			t.Errorf("%s: a kept shape of %d tokens", shapedTypes[i], len(s.shape))
		}
	}
	if s := d.fb.md; s.ok {
		t.Errorf("big metadata kept as a shape of %d tokens", len(s.shape))
	}
}
