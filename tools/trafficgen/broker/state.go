package broker

import (
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// entry is one stored SEND payload.
type entry struct {
	ledger, entryID uint64
	frame           *Frame // the SEND frame; its checksum and body are forwarded unchanged
	key             []byte
	msgs            int    // messages in the entry (batch size, at least 1)
	index           uint64 // broker entry index of the entry's last message
	acks            int    // subscriptions that acknowledged it
}

type topic struct {
	name          string
	ledger        uint64
	partition     int32
	entries       []*entry
	subs          map[string]*subscription
	producers     map[*producer]struct{}
	receipts      int
	sendErrorDone bool
	release       bool // drop payloads acknowledged by every subscription
}

type producer struct {
	id   uint64
	c    *conn
	t    *topic
	name string
}

type consumer struct {
	id      uint64
	c       *conn
	sub     *subscription
	name    string
	permits int
}

type subscription struct {
	name         string
	t            *topic
	typ          pulsarapi.CommandSubscribe_SubType
	consumers    []*consumer
	cursor       uint64   // next entry never dispatched
	redeliver    []uint64 // entries to dispatch again, in order
	pending      map[uint64]*consumer
	acked        map[uint64]bool
	redeliveries map[uint64]uint32
	rr           int
}

// topic returns the named topic, creating it; b.mu is held.
func (b *Broker) topic(name string) *topic {
	if t := b.topics[name]; t != nil {
		return t
	}
	t := &topic{name: name, ledger: uint64(100 + len(b.topics)), partition: -1,
		subs: map[string]*subscription{}, producers: map[*producer]struct{}{}, release: b.cfg.ReleaseAcked}
	if i := strings.LastIndex(name, "-partition-"); i >= 0 {
		if n, err := strconv.Atoi(name[i+len("-partition-"):]); err == nil {
			t.partition = int32(n)
		}
	}
	b.topics[name] = t
	return t
}

func (s *subscription) ackEntry(idx uint64) {
	if s.acked[idx] || idx >= uint64(len(s.t.entries)) {
		return
	}
	s.acked[idx] = true
	delete(s.pending, idx)
	e := s.t.entries[idx]
	e.acks++
	if s.t.release && e.acks >= len(s.t.subs) {
		e.frame = nil // release the payload once every subscription acknowledged it
	}
}

func (s *subscription) requeue(idx uint64) {
	delete(s.pending, idx)
	s.redeliveries[idx]++
	s.redeliver = append(s.redeliver, idx)
	sort.Slice(s.redeliver, func(i, j int) bool { return s.redeliver[i] < s.redeliver[j] })
}

// markDelete is the last entry below which everything is acknowledged (-1 if none).
func (s *subscription) markDelete() int64 {
	i := int64(-1)
	for s.acked[uint64(i+1)] {
		i++
	}
	return i
}

// next returns the next entry to dispatch without removing it.
func (s *subscription) next() (uint64, bool, bool) {
	for len(s.redeliver) > 0 {
		idx := s.redeliver[0]
		if s.acked[idx] || s.pending[idx] != nil {
			s.redeliver = s.redeliver[1:]
			continue
		}
		return idx, true, true
	}
	for s.cursor < uint64(len(s.t.entries)) {
		if s.acked[s.cursor] || s.t.entries[s.cursor].frame == nil {
			s.cursor++
			continue
		}
		return s.cursor, false, true
	}
	return 0, false, false
}

func (s *subscription) pick(e *entry) *consumer {
	n := len(s.consumers)
	if n == 0 {
		return nil
	}
	switch s.typ {
	case pulsarapi.CommandSubscribe_Shared:
		for i := 0; i < n; i++ {
			cs := s.consumers[(s.rr+i)%n]
			if cs.permits > 0 {
				s.rr = (s.rr + i + 1) % n
				return cs
			}
		}
		return nil
	case pulsarapi.CommandSubscribe_Key_Shared:
		h := fnv.New32a()
		_, _ = h.Write(e.key)
		cs := s.consumers[int(h.Sum32()%uint32(n))]
		if cs.permits > 0 {
			return cs
		}
		return nil
	default: // Exclusive and Failover: the first consumer is the active one
		if s.consumers[0].permits > 0 {
			return s.consumers[0]
		}
		return nil
	}
}

// dispatch sends a subscription's available entries to its consumers within
// their permits; the frames for one connection go out in one write.
func (b *Broker) dispatch(s *subscription) {
	if s == nil {
		return
	}
	var order []*conn
	batches := map[*conn][]outFrame{}
	for {
		idx, redelivered, ok := s.next()
		if !ok {
			break
		}
		e := s.t.entries[idx]
		cs := s.pick(e)
		if cs == nil {
			break
		}
		if redelivered {
			s.redeliver = s.redeliver[1:]
		} else {
			s.cursor++
		}
		s.pending[idx] = cs
		cs.permits -= e.msgs
		if _, seen := batches[cs.c]; !seen {
			order = append(order, cs.c)
		}
		batches[cs.c] = append(batches[cs.c], outFrame{f: b.messageFrame(cs, e, s.redeliveries[idx])})
	}
	for _, c := range order {
		c.send(batches[c]...)
	}
}

func (b *Broker) messageFrame(cs *consumer, e *entry, redeliveries uint32) *Frame {
	id := &pulsarapi.MessageIdData{LedgerId: proto.Uint64(e.ledger), EntryId: proto.Uint64(e.entryID)}
	if cs.sub.t.partition >= 0 {
		id.Partition = proto.Int32(cs.sub.t.partition)
	}
	f := &Frame{
		Cmd: cmd(pulsarapi.BaseCommand_MESSAGE, func(bc *pulsarapi.BaseCommand) {
			bc.Message = &pulsarapi.CommandMessage{ConsumerId: proto.Uint64(cs.id), MessageId: id, RedeliveryCount: proto.Uint32(redeliveries)}
		}),
		HasPayload:  true,
		HasChecksum: e.frame.HasChecksum,
		Checksum:    e.frame.Checksum,
		Body:        e.frame.Body,
	}
	if b.cfg.BrokerEntryMetadata {
		md, err := proto.Marshal(&pulsarapi.BrokerEntryMetadata{
			BrokerTimestamp: proto.Uint64(uint64(time.Now().UnixMilli())),
			Index:           proto.Uint64(e.index),
		})
		if err == nil {
			f.BrokerEntryMetadata = md
		}
	}
	return f
}

// removeConsumer detaches a consumer and puts its unacknowledged entries back
// for redelivery; b.mu is held.
func (b *Broker) removeConsumer(cs *consumer) {
	s := cs.sub
	for i, o := range s.consumers {
		if o == cs {
			s.consumers = append(s.consumers[:i:i], s.consumers[i+1:]...)
			break
		}
	}
	for idx, owner := range s.pending {
		if owner == cs {
			s.requeue(idx)
		}
	}
	if cs.c.consumers[cs.id] == cs {
		delete(cs.c.consumers, cs.id)
	}
}

// closeConsumer is a broker-initiated CLOSE_CONSUMER; b.mu is held.
func (b *Broker) closeConsumer(cs *consumer) {
	b.removeConsumer(cs)
	b.nextReq++
	rid := b.nextReq
	cs.c.send(outFrame{f: &Frame{Cmd: cmd(pulsarapi.BaseCommand_CLOSE_CONSUMER, func(bc *pulsarapi.BaseCommand) {
		bc.CloseConsumer = &pulsarapi.CommandCloseConsumer{ConsumerId: proto.Uint64(cs.id), RequestId: proto.Uint64(rid)}
	})}})
}

// unload closes every producer and consumer of a topic, as a broker does when
// a topic is unloaded; the clients reconnect. b.mu is held.
func (b *Broker) unload(t *topic) {
	for p := range t.producers {
		delete(t.producers, p)
		if p.c.producers[p.id] == p {
			delete(p.c.producers, p.id)
		}
		b.nextReq++
		rid := b.nextReq
		p.c.send(outFrame{f: &Frame{Cmd: cmd(pulsarapi.BaseCommand_CLOSE_PRODUCER, func(bc *pulsarapi.BaseCommand) {
			bc.CloseProducer = &pulsarapi.CommandCloseProducer{ProducerId: proto.Uint64(p.id), RequestId: proto.Uint64(rid)}
		})}})
	}
	for _, s := range t.subs {
		for _, cs := range append([]*consumer(nil), s.consumers...) {
			b.closeConsumer(cs)
		}
	}
}
