package track

import (
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// entries is the number of messages a payload frame carries.
func entries(f *decode.Frame) int {
	if md := f.Metadata; md != nil && md.NumMessagesInBatch != nil {
		return int(md.GetNumMessagesInBatch())
	}
	if f.Type == pulsarapi.BaseCommand_SEND {
		// GetSend is nil on a SEND whose sub-command is missing
		// (type-mismatch): read the field through its getter.
		if s := f.Command.GetSend(); s != nil && s.NumMessages != nil {
			return int(s.GetNumMessages())
		}
	}
	return 1
}

// onSend checks the producer and registers the SEND for its receipt.
func (t *Tracker) onSend(c *conn, f *decode.Frame, info *Info) {
	s := f.Command.GetSend()
	info.Entries = entries(f)
	pr := c.producers[s.GetProducerId()]
	info.Producer = pr
	switch {
	case c.s.Partial:
	case pr == nil:
		t.problem(info, CodeUnknownProducer, "producer_id "+utoa(s.GetProducerId())+" was never created on this connection")
	case pr.Closed:
		t.problem(info, CodeUnknownProducer, "producer_id "+utoa(s.GetProducerId())+" was closed")
	case !pr.Ready:
		t.problem(info, CodeProducerNotReady, "producer_id "+utoa(s.GetProducerId())+" has no PRODUCER_SUCCESS yet (PRODUCER #"+itoa(int64(pr.Created))+")")
	}
	if pr != nil {
		t.checkChunk(pr, f, info)
		seq := s.GetSequenceId()
		if pr.hasSeq && seq < pr.lastSeq {
			t.problem(info, CodeSequenceBackwards, "producer_id "+utoa(pr.ID)+" sends sequence_id "+utoa(seq)+" after "+utoa(pr.lastSeq))
		}
		pr.lastSeq, pr.hasSeq = seq, true
	}
	if len(c.earlySends) > 0 {
		if e := t.takeEarly(c, info, f, sendKey{s.GetProducerId(), s.GetSequenceId()}, true); e != nil {
			t.release(e)
			return
		}
	}
	p := t.newPending(f, s.GetSequenceId())
	p.producer = pr
	t.addSend(c, p, s.GetProducerId())
}

// onReceipt pairs SEND_RECEIPT or SEND_ERROR with its SEND (the oldest in
// flight with that producer and sequence id: chunks share a sequence id and
// are answered in order), and checks that message ids do not go backwards.
func (t *Tracker) onReceipt(c *conn, f *decode.Frame, info *Info) {
	var prod, seq uint64
	if r := f.Command.GetSendReceipt(); r != nil {
		prod, seq = r.GetProducerId(), r.GetSequenceId()
	} else {
		e := f.Command.GetSendError()
		prod, seq = e.GetProducerId(), e.GetSequenceId()
		info.Error = e.GetError().String()
		t.problem(info, CodeErrorResponse, "SEND_ERROR: "+info.Error)
	}
	info.Producer = c.producers[prod]
	if req := c.popSend(sendKey{prod, seq}, info.Producer); req != nil {
		t.link(info, req, f)
		if req.producer != nil {
			info.Producer = req.producer
		}
		t.release(req)
	} else {
		t.addEarly(c, f, sendKey{prod, seq}, true)
	}
	pr := info.Producer
	r := f.Command.GetSendReceipt()
	if pr == nil || r == nil || r.MessageId == nil {
		return
	}
	l, e := r.MessageId.GetLedgerId(), r.MessageId.GetEntryId()
	if pr.hasLast && (l < pr.lastLedger || (l == pr.lastLedger && e < pr.lastEntry)) {
		t.problem(info, CodeMessageIDBackwards, "message id "+utoa(l)+":"+utoa(e)+" after "+utoa(pr.lastLedger)+":"+utoa(pr.lastEntry))
	}
	pr.lastLedger, pr.lastEntry, pr.hasLast = l, e, true
}

// maxChunked bounds the chunked messages a producer tracks at once.
const maxChunked = 1024

// checkChunk follows a producer's chunked messages: chunk ids in order
// from 0, no batch in a chunk; incomplete ones are reported at the end
// of the connection (chunksLeft).
func (t *Tracker) checkChunk(pr *Producer, f *decode.Frame, info *Info) {
	md := f.Metadata
	if md == nil || md.GetNumChunksFromMsg() <= 1 {
		return
	}
	uuid, id, total := md.GetUuid(), md.GetChunkId(), md.GetNumChunksFromMsg()
	if md.NumMessagesInBatch != nil && md.GetNumMessagesInBatch() > 1 {
		t.problem(info, CodeChunkedBatch, "chunk "+itoa(int64(id))+" of message "+uuid+" is a batch of "+itoa(int64(md.GetNumMessagesInBatch()))+" messages")
	}
	st := pr.chunks[uuid]
	if st == nil {
		if id != 0 {
			t.problem(info, CodeChunkOrder, "message "+uuid+" starts with chunk "+itoa(int64(id))+" of "+itoa(int64(total)))
		}
		if pr.chunks == nil {
			pr.chunks = map[string]*chunkState{}
		}
		if len(pr.chunks) >= maxChunked {
			return
		}
		st = &chunkState{next: id, total: total, first: f.N}
		pr.chunks[uuid] = st
	}
	if id != st.next {
		t.problem(info, CodeChunkOrder, "chunk "+itoa(int64(id))+" of message "+uuid+" where chunk "+itoa(int64(st.next))+" was due")
	}
	st.next = id + 1
	if st.next >= st.total {
		delete(pr.chunks, uuid)
	}
}
