package decode

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// ACKs as clients write them. An ACK lists the message ids it
// acknowledges, a hundred and more on a busy consumer; decoded by
// protobuf-go each id is three allocations (the MessageIdData and its two
// required values), which on a bulk capture were a third of everything
// the decoder allocated, and the fresh memory they took cost as much
// again in page faults. decodeAck decodes the common ACK (a consumer, an
// ack type, ids of ledger, entry and maybe partition, batch index and
// batch size, maybe transaction bits and a request id) into ids it
// reuses: those of the frame's slot, given back once the frame is
// delivered (ParallelStreamDecoder.recycle), or the decoder's own.
// Anything else it leaves to protobuf: its result is then exactly what
// proto.Unmarshal gives, and it is clean (TestDecodeAckMatchesProtobuf,
// FuzzDecodeAck).

// ackIDs are the message ids decodeAck decoded into, kept for the next
// ACK.
type ackIDs struct {
	ids []*pulsarapi.MessageIdData
}

// id returns the i-th id to decode into (i <= len(l.ids)).
func (l *ackIDs) id(i int) *pulsarapi.MessageIdData {
	if i == len(l.ids) {
		l.ids = append(l.ids, &pulsarapi.MessageIdData{LedgerId: new(uint64), EntryId: new(uint64)})
	}
	return l.ids[i]
}

// decodeAck decodes b, a BaseCommand, into cmd with the ids of l when it
// is an ACK as clients write it: a type of ACK and an ack, each once; in
// the ack a consumer id and a valid ack type, no more than maxRepeated
// ids, each of a ledger and an entry and maybe a partition, batch index
// and batch size, maybe transaction bits and a request id, every field at
// most once. It reports false for anything else (cmd and l are then
// left in any state: the caller decodes b into another message).
func decodeAck(b []byte, cmd *pulsarapi.BaseCommand, l *ackIDs, maxRepeated int) bool {
	var ack []byte
	var seen uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType && seen&1 == 0:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || v != uint64(pulsarapi.BaseCommand_ACK) {
				return false
			}
			b, seen = b[n:], seen|1
		case num == 10 && typ == protowire.BytesType && seen&2 == 0:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			ack, b, seen = v, b[n:], seen|2
		default:
			return false
		}
	}
	if seen != 3 {
		return false
	}
	var vals [9]uint64 // by field number: 1 consumer, 2 ack type, 6, 7, 8
	var has uint16
	count := 0
	for len(ack) > 0 {
		num, typ, n := protowire.ConsumeTag(ack)
		if n < 0 {
			return false
		}
		ack = ack[n:]
		switch {
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(ack)
			if n < 0 || count == maxRepeated || !decodeID(v, l.id(count)) {
				return false
			}
			ack = ack[n:]
			count++
		case (num == 1 || num == 2 || num == 6 || num == 7 || num == 8) && typ == protowire.VarintType && has&(1<<num) == 0:
			v, n := protowire.ConsumeVarint(ack)
			if n < 0 || num == 2 && v > uint64(pulsarapi.CommandAck_Cumulative) {
				return false
			}
			ack, vals[num], has = ack[n:], v, has|1<<num
		default:
			return false
		}
	}
	if has&(1<<1|1<<2) != 1<<1|1<<2 {
		return false // a required field is missing: protobuf's path says so
	}
	a := cmd.GetAck()
	cmd.Reset()
	if a == nil {
		a = new(pulsarapi.CommandAck)
	}
	a.Reset()
	cmd.Type, cmd.Ack = pulsarapi.BaseCommand_ACK.Enum(), a
	a.ConsumerId = &vals[1]
	a.AckType = pulsarapi.CommandAck_AckType(vals[2]).Enum()
	if has&(1<<6) != 0 {
		a.TxnidLeastBits = &vals[6]
	}
	if has&(1<<7) != 0 {
		a.TxnidMostBits = &vals[7]
	}
	if has&(1<<8) != 0 {
		a.RequestId = &vals[8]
	}
	if count > 0 {
		a.MessageId = l.ids[:count]
	}
	return true
}

// decodeID decodes a MessageIdData of a ledger, an entry and maybe a
// partition, batch index and batch size, each once, into id.
func decodeID(b []byte, id *pulsarapi.MessageIdData) bool {
	var vals [7]uint64
	var has uint8
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.VarintType || num < 1 || num > 6 || num == 5 || has&(1<<num) != 0 {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return false
		}
		b, vals[num], has = b[n:], v, has|1<<num
	}
	if has&(1<<1|1<<2) != 1<<1|1<<2 {
		return false
	}
	*id.LedgerId, *id.EntryId = vals[1], vals[2]
	id.Partition = optInt32(id.Partition, has&(1<<3) != 0, vals[3])
	id.BatchIndex = optInt32(id.BatchIndex, has&(1<<4) != 0, vals[4])
	id.BatchSize = optInt32(id.BatchSize, has&(1<<6) != 0, vals[6])
	id.AckSet, id.FirstChunkMessageId = nil, nil
	return true
}

// optInt32 is an optional int32 field set to int32(v) (as protobuf
// truncates a varint) when present, reusing p; nil when absent.
func optInt32(p *int32, present bool, v uint64) *int32 {
	if !present {
		return nil
	}
	if p == nil {
		p = new(int32)
	}
	*p = int32(v)
	return p
}
