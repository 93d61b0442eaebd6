package decode

import (
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

// TestTemplateReplay decodes runs of frames of one shape whose values
// change (varints of every kind and length, strings and bytes of the same
// length, enums, bools), as a reusing Decoder does with one set of
// messages and as a parallel worker does, switching between the messages
// of several batch slots from frame to frame; every frame must decode as
// a fresh Decoder decodes it, and most must be replayed by a template.
func TestTemplateReplay(t *testing.T) {
	send := func(p, seq uint64, n int32, chunk bool) []byte {
		s := &pulsarapi.CommandSend{ProducerId: proto.Uint64(p), SequenceId: proto.Uint64(seq), NumMessages: proto.Int32(n), IsChunk: proto.Bool(chunk)}
		if seq%11 == 0 {
			s.NumMessages = nil // another shape, in some slots
		}
		c := &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(), Send: s}
		if seq%13 < 3 {
			c.Ping = &pulsarapi.CommandPing{} // two sub-commands: type-mismatch
		}
		return mustMarshal(t, c)
	}
	meta := func(name string, seq uint64, c pulsarapi.CompressionType, schema string, size uint32) []byte {
		return mustMarshal(t, &pulsarapi.MessageMetadata{ProducerName: proto.String(name), SequenceId: proto.Uint64(seq),
			PublishTime: proto.Uint64(1764400000000 + seq), Compression: c.Enum(), SchemaVersion: []byte(schema), UncompressedSize: proto.Uint32(size)})
	}
	message := func(ledger, entry uint64, redeliveries uint32) []byte {
		return mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_MESSAGE.Enum(),
			Message: &pulsarapi.CommandMessage{ConsumerId: proto.Uint64(3), RedeliveryCount: proto.Uint32(redeliveries),
				MessageId: &pulsarapi.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}}})
	}
	lz4, zstd := pulsarapi.CompressionType_LZ4, pulsarapi.CompressionType_ZSTD
	var frames []frameSpec
	for i := uint64(0); i < 400; i++ {
		name := []string{"lab-1-1", "lab-2-1", "lab-1-2"}[i%3] // same length, other contents
		schema := []string{"\x00\x01", "\x00\x02"}[i/7%2]
		c := lz4
		if i%50 == 49 {
			c = zstd // an enum that changes: the same shape, another template
		}
		frames = append(frames,
			frameSpec{cmd: send(1+i%2, 100+i, int32(1+i%3), i%5 == 0), metadata: meta(name, 100+i, c, schema, uint32(90+i)), payload: []byte("p")},
			frameSpec{cmd: message(7, i*i, uint32(i%2)), metadata: meta(name, i, lz4, schema, 3000), payload: []byte("q")},
		)
	}
	for _, slots := range []int{1, 3} {
		d := NewDecoder(Options{SkipPayloadContents: true})
		bufs := make([]frameBufs, slots)
		for i, fs := range frames {
			d.fb = &bufs[i%slots]
			raw := buildFrame(fs)
			want := frameDigest(Decode(raw, Options{Retain: true, SkipPayloadContents: true}))
			f := d.Decode(raw)
			if got := frameDigest(f); got != want {
				t.Fatalf("%d slots, frame %d:\nreused %s\nfresh  %s", slots, i, got, want)
			}
			if mismatch := HasProblem(f.Problems, CodeTypeMismatch); len(f.Problems) > 0 && !mismatch || mismatch != (i%2 == 0 && (100+i/2)%13 < 3) {
				t.Fatalf("frame %d: %v", i, f.Problems)
			}
		}
		// 1600 messages; the first of each shape in each slot, the
		// varint lengths that change and the enum that changes are not
		// replayed.
		if d.replayed < 1200 {
			t.Errorf("%d slots: %d of 1600 messages replayed by a template, want at least 1200", slots, d.replayed)
		}
	}
}

// TestTemplateBackoff: messages too varied for templates (every one of
// another length) stop templates being made.
func TestTemplateBackoff(t *testing.T) {
	d := NewDecoder(Options{})
	for i := 0; i < 200; i++ {
		name := string(make([]byte, 1+i%100))
		md := mustMarshal(t, &pulsarapi.MessageMetadata{ProducerName: proto.String(name), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(2)})
		f := d.Decode(buildFrame(frameSpec{cmd: sendCmd(t), metadata: md, payload: []byte("x")}))
		if len(f.Problems) > 0 {
			t.Fatal(f.Problems)
		}
	}
	// One in templateBackoff+1, and the command's few.
	if d.tmplBuilds > 30 {
		t.Errorf("%d templates made for 200 metadata of different lengths", d.tmplBuilds)
	}
}
