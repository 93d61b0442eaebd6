package tui

import (
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// frameAt decodes frame i again from the spill file with dec, restoring
// what the stream decoder had set (number, time, connection, direction,
// offset) and the problems found on it (decode and conformance). buf is
// reused for the bytes; the Frame may alias it and dec's buffers.
func (x *Index) frameAt(dec *decode.Decoder, buf []byte, i int) (*decode.Frame, row, []byte, error) {
	r := x.at(i)
	raw, err := x.raw(buf, i)
	if err != nil {
		return nil, r, buf, err
	}
	return x.frameFrom(dec, raw, i, r), r, raw, nil
}

// frameFrom decodes frame i (row r) from its bytes raw.
func (x *Index) frameFrom(dec *decode.Decoder, raw []byte, i int, r row) *decode.Frame {
	f := dec.Decode(raw)
	f.N = i + 1
	f.Time = time.Unix(0, r.time)
	f.Dir = r.dir()
	f.Offset = r.offset
	if ci, ok := x.connAt(r.conn); ok {
		f.Conn = ci.conn
	} else {
		f.Conn = &reassembly.Conn{ID: int(r.conn)}
	}
	if r.flags&flagNoRaw != 0 {
		f.Size = int(r.size)
		f.Type = r.cmdType()
	}
	f.Problems = x.problemsOf(i)
	return f
}

// maxBlock bounds the spill bytes read at once by scans.
const maxBlock = 8 << 20

// rawBlock reads the bytes of rows (frames first, first+1, ...) with one
// read when they are contiguous in the spill file and not too large; it
// returns the block and its spill offset, or nil.
func (x *Index) rawBlock(dst []byte, rows []row) ([]byte, int64) {
	if len(rows) == 0 {
		return nil, 0
	}
	lo := rows[0].spill
	last := rows[len(rows)-1]
	hi := last.spill + int64(last.size)
	if hi-lo <= 0 || hi-lo > maxBlock {
		return nil, 0
	}
	b, err := x.store.read(dst, lo, int(hi-lo))
	if err != nil {
		return nil, 0
	}
	return b, lo
}

// infoAt rebuilds what the tracker said about frame i from the index: the
// pair, the entity, the number of entries and the error of a response.
// Problems are on the Frame (frameAt), not repeated here.
func (x *Index) infoAt(i int, r row, f *decode.Frame, info *track.Info) {
	*info = track.Info{}
	if r.pair > 0 {
		p := x.at(int(r.pair - 1))
		link := &track.Link{N: int(r.pair), Type: p.cmdType(), Latency: time.Duration(r.latency)}
		if r.flags&flagResponse != 0 {
			info.Request = link
		} else {
			info.Response = link
		}
	}
	if e, ok := x.entityAt(r.entity); ok {
		switch e.kind {
		case entityProducer:
			info.Producer = &track.Producer{Conn: f.Conn, ID: e.id, Topic: e.topic, Name: e.name}
		case entityConsumer:
			info.Consumer = &track.Consumer{Conn: f.Conn, ID: e.id, Topic: e.topic, Name: e.name, Subscription: e.subscription, SubType: e.subType}
		}
	}
	if decode.IsPayloadCommand(f.Type) {
		info.Entries = max(1, len(f.Entries))
	}
	info.Error = track.ServerError(f.Command)
}
