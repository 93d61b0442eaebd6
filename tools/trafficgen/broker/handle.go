package broker

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// ServerVersion is what the broker announces in CONNECTED.
const ServerVersion = "pulsarscope-lab-broker"

// Topic-name markers that select scripted behaviour (matched anywhere in the
// topic name).
const (
	// MarkMissing makes PARTITIONED_METADATA fail with TopicNotFound.
	MarkMissing = "missing"
	// MarkPartitioned makes a topic partitioned.
	MarkPartitioned = "partitioned"
	// MarkRedirect makes LOOKUP on the primary listener redirect to the second.
	MarkRedirect = "redirect"
	// MarkUnauthorized makes PRODUCER fail with AuthorizationError.
	MarkUnauthorized = "unauthorized"
	// MarkSendError makes the topic's first SEND fail with SEND_ERROR.
	MarkSendError = "send-error"
	// MarkUnload makes the broker close the topic's producers and consumers
	// (topic unload) right after the topic's second SEND_RECEIPT.
	MarkUnload = "unload"
)

// reply queues bc as the answer to the frame being handled (c.reading),
// of type answers ("" for a frame that answers none).
func (c *conn) reply(answers string, bc *pulsarapi.BaseCommand) {
	o := outFrame{f: &Frame{Cmd: bc}, answers: answers}
	if answers != "" {
		o.req = c.reading
	}
	if d := c.b.cfg.Delays[answers]; d > 0 {
		c.replyLater(d, o)
		return
	}
	c.send(o)
}

func (c *conn) success(answers string, requestID uint64) {
	c.reply(answers, cmd(pulsarapi.BaseCommand_SUCCESS, func(b *pulsarapi.BaseCommand) {
		b.Success = &pulsarapi.CommandSuccess{RequestId: proto.Uint64(requestID)}
	}))
}

func (c *conn) fail(answers string, requestID uint64, code pulsarapi.ServerError, msg string) {
	c.reply(answers, cmd(pulsarapi.BaseCommand_ERROR, func(b *pulsarapi.BaseCommand) {
		b.Error = &pulsarapi.CommandError{RequestId: proto.Uint64(requestID), Error: code.Enum(), Message: proto.String(msg)}
	}))
}

func (c *conn) note(format string, args ...any) {
	c.b.log(LogEvent{Event: "note", Conn: c.id, Note: fmt.Sprintf(format, args...)})
}

// handle processes one frame read from the client; b.mu is held.
func (c *conn) handle(f *Frame) {
	bc := f.Cmd
	t := bc.GetType().String()
	if c.failFirst(bc) {
		return
	}
	switch bc.GetType() {
	case pulsarapi.BaseCommand_CONNECT:
		pv := bc.GetConnect().GetProtocolVersion()
		c.reply(t, cmd(pulsarapi.BaseCommand_CONNECTED, func(b *pulsarapi.BaseCommand) {
			b.Connected = &pulsarapi.CommandConnected{
				ServerVersion:   proto.String(ServerVersion),
				ProtocolVersion: proto.Int32(pv),
				MaxMessageSize:  proto.Int32(c.b.cfg.MaxMessageSize),
			}
		}))
		if c.b.cfg.AuthChallenge {
			c.reply("", cmd(pulsarapi.BaseCommand_AUTH_CHALLENGE, func(b *pulsarapi.BaseCommand) {
				b.AuthChallenge = &pulsarapi.CommandAuthChallenge{
					ServerVersion:   proto.String(ServerVersion),
					ProtocolVersion: proto.Int32(pv),
					Challenge: &pulsarapi.AuthData{
						AuthMethodName: proto.String(bc.GetConnect().GetAuthMethodName()),
						AuthData:       []byte("refresh"),
					},
				}
			}))
		}
	case pulsarapi.BaseCommand_AUTH_RESPONSE:
		// The client's renewed credentials: accepted as they are.
	case pulsarapi.BaseCommand_PING:
		c.reply(t, cmd(pulsarapi.BaseCommand_PONG, func(b *pulsarapi.BaseCommand) { b.Pong = &pulsarapi.CommandPong{} }))
	case pulsarapi.BaseCommand_PONG:
	case pulsarapi.BaseCommand_PARTITIONED_METADATA:
		c.partitionedMetadata(bc.GetPartitionMetadata())
	case pulsarapi.BaseCommand_LOOKUP:
		c.lookup(bc.GetLookupTopic())
	case pulsarapi.BaseCommand_PRODUCER:
		c.producer(bc.GetProducer())
	case pulsarapi.BaseCommand_SEND:
		c.sendCmd(f)
	case pulsarapi.BaseCommand_CLOSE_PRODUCER:
		m := bc.GetCloseProducer()
		if p := c.producers[m.GetProducerId()]; p != nil {
			delete(p.t.producers, p)
			delete(c.producers, p.id)
		}
		c.success(t, m.GetRequestId())
	case pulsarapi.BaseCommand_SUBSCRIBE:
		c.subscribe(bc.GetSubscribe())
	case pulsarapi.BaseCommand_FLOW:
		m := bc.GetFlow()
		if cs := c.consumers[m.GetConsumerId()]; cs != nil {
			cs.permits += int(m.GetMessagePermits())
			c.b.dispatch(cs.sub)
		}
	case pulsarapi.BaseCommand_ACK:
		c.ack(bc.GetAck())
	case pulsarapi.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		c.redeliver(bc.GetRedeliverUnacknowledgedMessages())
	case pulsarapi.BaseCommand_UNSUBSCRIBE:
		m := bc.GetUnsubscribe()
		if cs := c.consumers[m.GetConsumerId()]; cs != nil {
			s := cs.sub
			c.b.removeConsumer(cs)
			delete(s.t.subs, s.name)
		}
		c.success(t, m.GetRequestId())
	case pulsarapi.BaseCommand_CLOSE_CONSUMER:
		m := bc.GetCloseConsumer()
		if cs := c.consumers[m.GetConsumerId()]; cs != nil {
			c.b.removeConsumer(cs)
			c.b.dispatch(cs.sub)
		}
		c.success(t, m.GetRequestId())
	case pulsarapi.BaseCommand_SEEK:
		c.seek(bc.GetSeek())
	case pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID:
		c.lastMessageID(bc.GetGetLastMessageId())
	default:
		c.note("unhandled %s", t)
	}
}

// topicMarks reports the scripted behaviours selected by a topic name.
func has(topic, mark string) bool { return strings.Contains(topic, mark) }

func (c *conn) partitionedMetadata(m *pulsarapi.CommandPartitionedTopicMetadata) {
	const t = "PARTITIONED_METADATA"
	resp := &pulsarapi.CommandPartitionedTopicMetadataResponse{RequestId: proto.Uint64(m.GetRequestId())}
	name := m.GetTopic()
	switch {
	case has(name, MarkMissing):
		resp.Response = pulsarapi.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pulsarapi.ServerError_TopicNotFound.Enum()
		resp.Message = proto.String("scripted: topic " + name + " does not exist")
	case has(name, MarkPartitioned) && !strings.Contains(name, "-partition-"):
		resp.Response = pulsarapi.CommandPartitionedTopicMetadataResponse_Success.Enum()
		resp.Partitions = proto.Uint32(uint32(c.b.cfg.Partitions))
	default:
		resp.Response = pulsarapi.CommandPartitionedTopicMetadataResponse_Success.Enum()
		resp.Partitions = proto.Uint32(0)
	}
	c.reply(t, cmd(pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE, func(b *pulsarapi.BaseCommand) { b.PartitionMetadataResponse = resp }))
}

func (c *conn) lookup(m *pulsarapi.CommandLookupTopic) {
	const t = "LOOKUP"
	resp := &pulsarapi.CommandLookupTopicResponse{RequestId: proto.Uint64(m.GetRequestId())}
	if has(m.GetTopic(), MarkRedirect) && c.b.secondary != "" && c.local == c.b.primary {
		resp.Response = pulsarapi.CommandLookupTopicResponse_Redirect.Enum()
		resp.BrokerServiceUrl = proto.String("pulsar://" + c.b.secondary)
		resp.Authoritative = proto.Bool(true)
	} else {
		resp.Response = pulsarapi.CommandLookupTopicResponse_Connect.Enum()
		resp.BrokerServiceUrl = proto.String("pulsar://" + c.local)
		resp.Authoritative = proto.Bool(true)
	}
	c.reply(t, cmd(pulsarapi.BaseCommand_LOOKUP_RESPONSE, func(b *pulsarapi.BaseCommand) { b.LookupTopicResponse = resp }))
}

func (c *conn) producer(m *pulsarapi.CommandProducer) {
	const t = "PRODUCER"
	if has(m.GetTopic(), MarkUnauthorized) {
		c.fail(t, m.GetRequestId(), pulsarapi.ServerError_AuthorizationError, "scripted: not authorized to produce on "+m.GetTopic())
		return
	}
	tp := c.b.topic(m.GetTopic())
	name := m.GetProducerName()
	if name == "" {
		name = fmt.Sprintf("lab-%d-%d", c.id, m.GetProducerId())
	}
	p := &producer{id: m.GetProducerId(), c: c, t: tp, name: name}
	c.producers[p.id] = p
	tp.producers[p] = struct{}{}
	c.reply(t, cmd(pulsarapi.BaseCommand_PRODUCER_SUCCESS, func(b *pulsarapi.BaseCommand) {
		b.ProducerSuccess = &pulsarapi.CommandProducerSuccess{
			RequestId:      proto.Uint64(m.GetRequestId()),
			ProducerName:   proto.String(name),
			LastSequenceId: proto.Int64(-1),
			TopicEpoch:     proto.Uint64(m.GetEpoch()),
			ProducerReady:  proto.Bool(true),
		}
	}))
}

func (c *conn) sendCmd(f *Frame) {
	const t = "SEND"
	m := f.Cmd.GetSend()
	p := c.producers[m.GetProducerId()]
	if p == nil {
		c.note("SEND for unknown producer %d", m.GetProducerId())
		return
	}
	tp := p.t
	if has(tp.name, MarkSendError) && !tp.sendErrorDone {
		tp.sendErrorDone = true
		c.reply(t, cmd(pulsarapi.BaseCommand_SEND_ERROR, func(b *pulsarapi.BaseCommand) {
			b.SendError = &pulsarapi.CommandSendError{
				ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(m.GetSequenceId()),
				Error: pulsarapi.ServerError_PersistenceError.Enum(), Message: proto.String("scripted: send error"),
			}
		}))
		return
	}
	e := &entry{ledger: tp.ledger, entryID: uint64(len(tp.entries)), frame: f}
	if md, err := f.Metadata(); err == nil {
		e.key = md.GetOrderingKey()
		if len(e.key) == 0 {
			e.key = []byte(md.GetPartitionKey())
		}
		e.msgs = int(md.GetNumMessagesInBatch())
		if e.msgs < 1 {
			e.msgs = 1
		}
	} else {
		e.msgs = 1
	}
	c.b.nextIdx += uint64(e.msgs)
	e.index = c.b.nextIdx - 1
	tp.entries = append(tp.entries, e)
	c.reply(t, cmd(pulsarapi.BaseCommand_SEND_RECEIPT, func(b *pulsarapi.BaseCommand) {
		b.SendReceipt = &pulsarapi.CommandSendReceipt{
			ProducerId: proto.Uint64(p.id), SequenceId: proto.Uint64(m.GetSequenceId()),
			HighestSequenceId: proto.Uint64(m.GetHighestSequenceId()),
			MessageId:         &pulsarapi.MessageIdData{LedgerId: proto.Uint64(e.ledger), EntryId: proto.Uint64(e.entryID)},
		}
	}))
	for _, s := range tp.subs {
		c.b.dispatch(s)
	}
	tp.receipts++
	if has(tp.name, MarkUnload) && tp.receipts == 2 {
		c.b.unload(tp)
	}
}

func (c *conn) subscribe(m *pulsarapi.CommandSubscribe) {
	const t = "SUBSCRIBE"
	tp := c.b.topic(m.GetTopic())
	s := tp.subs[m.GetSubscription()]
	if s == nil {
		s = &subscription{name: m.GetSubscription(), t: tp, typ: m.GetSubType(),
			pending: map[uint64]*consumer{}, acked: map[uint64]bool{}, redeliveries: map[uint64]uint32{}}
		if m.GetInitialPosition() == pulsarapi.CommandSubscribe_Latest {
			s.cursor = uint64(len(tp.entries))
		}
		tp.subs[s.name] = s
	}
	if old := c.consumers[m.GetConsumerId()]; old != nil {
		c.b.removeConsumer(old)
	}
	cs := &consumer{id: m.GetConsumerId(), c: c, sub: s, name: m.GetConsumerName()}
	c.consumers[cs.id] = cs
	s.consumers = append(s.consumers, cs)
	c.success(t, m.GetRequestId())
}

func (c *conn) ack(m *pulsarapi.CommandAck) {
	cs := c.consumers[m.GetConsumerId()]
	if cs != nil {
		s := cs.sub
		for _, id := range m.GetMessageId() {
			if m.GetAckType() == pulsarapi.CommandAck_Cumulative {
				for i := uint64(0); i <= id.GetEntryId() && i < uint64(len(s.t.entries)); i++ {
					s.ackEntry(i)
				}
			} else {
				s.ackEntry(id.GetEntryId())
			}
		}
	}
	if m.RequestId != nil {
		c.reply("ACK", cmd(pulsarapi.BaseCommand_ACK_RESPONSE, func(b *pulsarapi.BaseCommand) {
			b.AckResponse = &pulsarapi.CommandAckResponse{ConsumerId: proto.Uint64(m.GetConsumerId()), RequestId: proto.Uint64(m.GetRequestId())}
		}))
	}
}

func (c *conn) redeliver(m *pulsarapi.CommandRedeliverUnacknowledgedMessages) {
	cs := c.consumers[m.GetConsumerId()]
	if cs == nil {
		return
	}
	s := cs.sub
	if len(m.GetMessageIds()) == 0 {
		for idx, owner := range s.pending {
			if owner == cs {
				s.requeue(idx)
			}
		}
	}
	for _, id := range m.GetMessageIds() {
		if s.pending[id.GetEntryId()] == cs {
			s.requeue(id.GetEntryId())
		}
	}
	c.b.dispatch(s)
}

func (c *conn) seek(m *pulsarapi.CommandSeek) {
	const t = "SEEK"
	cs := c.consumers[m.GetConsumerId()]
	if cs == nil {
		c.fail(t, m.GetRequestId(), pulsarapi.ServerError_ConsumerNotFound, "no such consumer")
		return
	}
	s := cs.sub
	pos := uint64(len(s.t.entries))
	if m.MessageId != nil && m.GetMessageId().GetEntryId() < pos {
		pos = m.GetMessageId().GetEntryId()
	}
	s.cursor = pos
	s.redeliver = nil
	for idx := range s.pending {
		delete(s.pending, idx)
	}
	for idx := range s.acked {
		if idx >= pos {
			delete(s.acked, idx)
			s.t.entries[idx].acks--
		}
	}
	for idx := range s.redeliveries {
		if idx >= pos {
			delete(s.redeliveries, idx)
		}
	}
	c.success(t, m.GetRequestId())
	// Like a real broker, disconnect the subscription's consumers so that
	// they resubscribe from the new position.
	for _, other := range append([]*consumer(nil), s.consumers...) {
		c.b.closeConsumer(other)
	}
}

func (c *conn) lastMessageID(m *pulsarapi.CommandGetLastMessageId) {
	const t = "GET_LAST_MESSAGE_ID"
	cs := c.consumers[m.GetConsumerId()]
	last := &pulsarapi.MessageIdData{LedgerId: proto.Uint64(0), EntryId: proto.Uint64(^uint64(0))}
	resp := &pulsarapi.CommandGetLastMessageIdResponse{RequestId: proto.Uint64(m.GetRequestId()), LastMessageId: last}
	if cs != nil {
		tp := cs.sub.t
		last.LedgerId = proto.Uint64(tp.ledger)
		if n := len(tp.entries); n > 0 {
			last.EntryId = proto.Uint64(uint64(n - 1))
		}
		last.Partition = proto.Int32(tp.partition)
		md := cs.sub.markDelete()
		resp.ConsumerMarkDeletePosition = &pulsarapi.MessageIdData{LedgerId: proto.Uint64(tp.ledger), EntryId: proto.Uint64(uint64(md))}
	}
	c.reply(t, cmd(pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE, func(b *pulsarapi.BaseCommand) { b.GetLastMessageIdResponse = resp }))
}

// cleanup forgets the connection's producers and consumers; b.mu is held.
func (c *conn) cleanup() {
	for _, p := range c.producers {
		delete(p.t.producers, p)
	}
	c.producers = map[uint64]*producer{}
	for _, cs := range c.consumers {
		c.b.removeConsumer(cs)
		c.b.dispatch(cs.sub)
	}
}
