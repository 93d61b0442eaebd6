package decode

import (
	"math/rand"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// ackChecker decodes commands with decodeAck into one message and one
// list of ids, reused from one command to the next (as a slot or a
// decoder's own buffers are), and checks each it accepts against
// protobuf: what proto.Unmarshal gives into a fresh message, complete,
// with nothing for validate to find.
type ackChecker struct {
	cmd      pulsarapi.BaseCommand
	ids      ackIDs
	d        *Decoder
	accepted int
}

func newAckChecker() *ackChecker {
	return &ackChecker{d: NewDecoder(Options{MaxRepeated: 50})}
}

func (c *ackChecker) check(t *testing.T, b []byte) bool {
	t.Helper()
	if !decodeAck(b, &c.cmd, &c.ids, c.d.opts.MaxRepeated) {
		return false
	}
	c.accepted++
	want := new(pulsarapi.BaseCommand)
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatalf("decodeAck accepted % x, which protobuf refuses: %v", b, err)
	}
	if !proto.Equal(&c.cmd, want) {
		t.Fatalf("decodeAck of % x:\n got %v\nwant %v", b, &c.cmd, want)
	}
	if c.d.schema(want).hasUnknown(b, 0) {
		t.Fatalf("decodeAck accepted % x, which has unknown fields", b)
	}
	if err := c.d.checkRepeated(b, want); err != nil {
		t.Fatalf("decodeAck accepted % x: %v", b, err)
	}
	return true
}

// randomAck encodes an ACK of r's choosing: mostly as clients write them,
// sometimes with what decodeAck leaves to protobuf (ack sets, chunk ids,
// properties, validation errors, ack types out of range).
func randomAck(r *rand.Rand) *pulsarapi.BaseCommand {
	a := &pulsarapi.CommandAck{
		ConsumerId: proto.Uint64(uint64(r.Int63n(1 << uint(r.Intn(63))))),
		AckType:    pulsarapi.CommandAck_AckType(r.Intn(2)).Enum(),
	}
	for n := r.Intn(60); n > 0; n-- {
		id := &pulsarapi.MessageIdData{LedgerId: proto.Uint64(uint64(r.Int63())), EntryId: proto.Uint64(uint64(r.Intn(1 << 20)))}
		if r.Intn(4) == 0 {
			id.Partition = proto.Int32(int32(r.Intn(100)) - 1)
		}
		if r.Intn(4) == 0 {
			id.BatchIndex = proto.Int32(int32(r.Intn(1000)) - 1)
		}
		if r.Intn(6) == 0 {
			id.BatchSize = proto.Int32(int32(r.Intn(1000)))
		}
		if r.Intn(40) == 0 {
			id.AckSet = []int64{r.Int63(), -1}
		}
		if r.Intn(60) == 0 {
			id.FirstChunkMessageId = &pulsarapi.MessageIdData{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(2)}
		}
		a.MessageId = append(a.MessageId, id)
	}
	if r.Intn(5) == 0 {
		a.TxnidLeastBits, a.TxnidMostBits = proto.Uint64(r.Uint64()), proto.Uint64(r.Uint64())
	}
	if r.Intn(3) == 0 {
		a.RequestId = proto.Uint64(r.Uint64())
	}
	if r.Intn(30) == 0 {
		a.ValidationError = pulsarapi.CommandAck_ChecksumMismatch.Enum()
	}
	if r.Intn(30) == 0 {
		a.Properties = []*pulsarapi.KeyLongValue{{Key: proto.String("k"), Value: proto.Uint64(1)}}
	}
	return &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK.Enum(), Ack: a}
}

// mutate changes b the ways a hostile or unusual writer would: a field
// twice, an unknown field, a field of another wire type, the ack before
// the type, an over-long varint, a cut.
func mutate(r *rand.Rand, b []byte) []byte {
	switch r.Intn(8) {
	case 0: // the type again
		return protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(pulsarapi.BaseCommand_ACK))
	case 1: // an unknown field
		return protowire.AppendVarint(protowire.AppendTag(b, 999, protowire.VarintType), 7)
	case 2: // the ack first
		cmd := new(pulsarapi.BaseCommand)
		if proto.Unmarshal(b, cmd) != nil || cmd.Ack == nil {
			return b
		}
		ack, _ := proto.Marshal(cmd.Ack)
		out := protowire.AppendBytes(protowire.AppendTag(nil, 10, protowire.BytesType), ack)
		return protowire.AppendVarint(protowire.AppendTag(out, 1, protowire.VarintType), uint64(pulsarapi.BaseCommand_ACK))
	case 3: // a cut
		return b[:r.Intn(len(b)+1)]
	case 4: // a byte changed
		c := append([]byte{}, b...)
		c[r.Intn(len(c))] ^= byte(1 << uint(r.Intn(8)))
		return c
	case 5: // the type as a 10-byte varint
		return append([]byte{0x08, 0x8a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, b[2:]...)
	case 6: // a field of the ack twice: a second ack merged into the first
		ack := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5)
		return protowire.AppendBytes(protowire.AppendTag(b, 10, protowire.BytesType), ack)
	}
	return b
}

// TestDecodeAckMatchesProtobuf: on ACKs of every shape decodeAck handles,
// and many it must leave to protobuf, each decoded into the ids of the
// one before, what decodeAck accepts is exactly protobuf's result.
func TestDecodeAckMatchesProtobuf(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	c := newAckChecker()
	clean, cleanAccepted := 0, 0
	for i := 0; i < 20000; i++ {
		cmd := randomAck(r)
		b, err := proto.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			b = mutate(r, b)
		} else {
			a := cmd.Ack
			usual := a.ValidationError == nil && a.Properties == nil && len(a.MessageId) <= 50
			for _, id := range a.MessageId {
				usual = usual && id.AckSet == nil && id.FirstChunkMessageId == nil
			}
			if usual {
				clean++
			}
			if c.check(t, b) && usual {
				cleanAccepted++
			} else if usual {
				t.Fatalf("decodeAck refused a usual ACK: %v", cmd)
			}
			continue
		}
		c.check(t, b)
	}
	if clean == 0 || cleanAccepted != clean || c.accepted == cleanAccepted {
		t.Errorf("%d usual ACKs, %d accepted; %d accepted in all: the mutations test nothing", clean, cleanAccepted, c.accepted)
	}
}

// TestDecodeAckRefuses: what decodeAck must leave to protobuf.
func TestDecodeAckRefuses(t *testing.T) {
	ack := func(fields ...[]byte) []byte {
		var a []byte
		for _, f := range fields {
			a = append(a, f...)
		}
		b := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(pulsarapi.BaseCommand_ACK))
		return protowire.AppendBytes(protowire.AppendTag(b, 10, protowire.BytesType), a)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	id := func(fields ...[]byte) []byte {
		var m []byte
		for _, f := range fields {
			m = append(m, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), m)
	}
	consumer, individual := varint(1, 7), varint(2, 0)
	many := []byte{}
	for i := 0; i <= 50; i++ {
		many = append(many, id(varint(1, 1), varint(2, uint64(i)))...)
	}
	c := newAckChecker()
	for name, b := range map[string][]byte{
		"no consumer":         ack(individual),
		"no ack type":         ack(consumer),
		"ack type 2":          ack(consumer, varint(2, 2)),
		"id without entry":    ack(consumer, individual, id(varint(1, 1))),
		"id entry twice":      ack(consumer, individual, id(varint(1, 1), varint(2, 1), varint(2, 2))),
		"id ack set":          ack(consumer, individual, id(varint(1, 1), varint(2, 1), varint(5, 3))),
		"id unknown field":    ack(consumer, individual, id(varint(1, 1), varint(2, 1), varint(9, 3))),
		"consumer twice":      ack(consumer, individual, consumer),
		"validation error":    ack(consumer, individual, varint(4, 0)),
		"unknown ack field":   ack(consumer, individual, varint(20, 0)),
		"more than the limit": ack(consumer, individual, many),
		"another type":        append(varint(1, uint64(pulsarapi.BaseCommand_FLOW)), ack(consumer, individual)[2:]...),
		"no ack":              varint(1, uint64(pulsarapi.BaseCommand_ACK)),
	} {
		if c.check(t, b) {
			t.Errorf("%s: accepted", name)
		}
	}
	if !c.check(t, ack(consumer, individual, id(varint(1, 1), varint(2, 1)))) {
		t.Errorf("a usual ACK refused")
	}
}

// FuzzDecodeAck: whatever decodeAck accepts, decoded into the ids of the
// input before, is protobuf's result.
func FuzzDecodeAck(f *testing.F) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 20; i++ {
		b, _ := proto.Marshal(randomAck(r))
		f.Add(b)
	}
	c := newAckChecker()
	f.Fuzz(func(t *testing.T, b []byte) {
		c.check(t, b)
	})
}

// TestAckIDsBigNotKept: a decoder decodes a big ACK into its own ids and
// a small one after it into new ones, and a slot gives a big list to the
// collector, not to the pool; small lists are reused.
func TestAckIDsBigNotKept(t *testing.T) {
	ackOf := func(n int) []byte {
		a := &pulsarapi.CommandAck{ConsumerId: proto.Uint64(1), AckType: pulsarapi.CommandAck_Individual.Enum()}
		for i := 0; i < n; i++ {
			a.MessageId = append(a.MessageId, &pulsarapi.MessageIdData{LedgerId: proto.Uint64(1), EntryId: proto.Uint64(uint64(i))})
		}
		return buildFrame(frameSpec{cmd: mustMarshal(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK.Enum(), Ack: a})})
	}
	d := NewDecoder(Options{})
	decode := func(n int) *ackIDs {
		t.Helper()
		f := d.Decode(ackOf(n))
		if len(f.Problems) > 0 || len(f.Command.GetAck().GetMessageId()) != n || d.fb.acks == nil {
			t.Fatalf("ACK of %d ids: problems %v, %d ids, fast path %v", n, f.Problems, len(f.Command.GetAck().GetMessageId()), d.fb.acks != nil)
		}
		return d.fb.acks
	}
	small := decode(10)
	if decode(20) != small {
		t.Error("a small list is not reused")
	}
	big := decode(maxPooledIDs + 1)
	if decode(5) == big {
		t.Error("a big list is kept for the next ACK")
	}
	// A slot: the big list (the small one grew into it) to the
	// collector, a small one to the pool.
	var pool putRecorder
	fb := &frameBufs{acks: big, ackCmd: new(pulsarapi.BaseCommand)}
	fb.giveBackAcks(&pool)
	small = &ackIDs{ids: make([]*pulsarapi.MessageIdData, 10)}
	fb.acks = small
	fb.giveBackAcks(&pool)
	if len(pool) != 1 || pool[0] != small || fb.acks != nil {
		t.Errorf("given back to the pool: %d lists, want the small one only", len(pool))
	}
}

// putRecorder records what is given back to a pool.
type putRecorder []any

func (r *putRecorder) Put(v any) { *r = append(*r, v) }
