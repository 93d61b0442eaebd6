package track

import (
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

const sendType = pulsarapi.BaseCommand_SEND

// dispatch applies one decoded command to the connection's state.
func (t *Tracker) dispatch(c *conn, f *decode.Frame, info *Info) {
	cmd := f.Command
	c2s := f.Dir == reassembly.ClientToServer
	switch f.Type {
	case pulsarapi.BaseCommand_CONNECT:
		t.onConnect(c, f)
		return
	case pulsarapi.BaseCommand_CONNECTED:
		t.onConnected(c, f, info)
		return
	case pulsarapi.BaseCommand_AUTH_CHALLENGE:
		c.auth = append(c.auth, t.newPending(f, 0))
		return
	case pulsarapi.BaseCommand_AUTH_RESPONSE:
		if len(c.auth) > 0 {
			t.link(info, c.auth[0], f)
			t.release(c.auth[0])
			c.auth[0] = nil
			c.auth = c.auth[1:]
		} else {
			c.orphans = append(c.orphans, t.newPending(f, 0))
		}
		return
	case pulsarapi.BaseCommand_PING:
		c.pings[f.Dir] = append(c.pings[f.Dir], t.newPending(f, 0))
		return
	case pulsarapi.BaseCommand_PONG:
		other := 1 - f.Dir
		if q := c.pings[other]; len(q) > 0 {
			t.link(info, q[0], f)
			t.release(q[0])
			q[0] = nil
			c.pings[other] = q[1:]
		} else {
			c.orphans = append(c.orphans, t.newPending(f, 0))
		}
		return
	case pulsarapi.BaseCommand_SEND:
		t.onSend(c, f, info)
		return
	case pulsarapi.BaseCommand_SEND_RECEIPT, pulsarapi.BaseCommand_SEND_ERROR:
		t.onReceipt(c, f, info)
		return
	case pulsarapi.BaseCommand_MESSAGE:
		t.onMessage(c, f, info)
		return
	case pulsarapi.BaseCommand_FLOW:
		if cs := t.consumer(c, cmd.GetFlow().GetConsumerId(), info); cs != nil {
			cs.Permits += int64(cmd.GetFlow().GetMessagePermits())
		}
		if cmd.GetFlow().GetMessagePermits() == 0 {
			t.problem(info, CodeFlowZero, "FLOW for consumer_id "+utoa(cmd.GetFlow().GetConsumerId())+" grants no permits")
		}
		return
	case pulsarapi.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES:
		t.consumer(c, cmd.GetRedeliverUnacknowledgedMessages().GetConsumerId(), info)
		return
	case pulsarapi.BaseCommand_ACK:
		t.onAck(c, f, info)
		// An ACK with a request_id is also a request (ack receipts).
	case pulsarapi.BaseCommand_CLOSE_PRODUCER:
		if p := c.producers[cmd.GetCloseProducer().GetProducerId()]; p != nil {
			info.Producer = p
			if !c2s {
				p.Closed = true // broker-initiated: not answered by the client
			}
		}
	case pulsarapi.BaseCommand_CLOSE_CONSUMER:
		if cs := c.consumers[cmd.GetCloseConsumer().GetConsumerId()]; cs != nil {
			info.Consumer = cs
			if !c2s {
				cs.Closed = true
			}
		}
	default:
		t.annotateEntity(c, cmd, info)
	}
	if !c2s && !t.tb.isResponse(f.Type) {
		return
	}
	id, ok := t.tb.requestID(cmd, f.Type)
	if c2s {
		if ok && t.tb.isRequest(f.Type) {
			t.onRequest(c, f, info, id)
		}
		return
	}
	t.onResponse(c, f, info, id, ok)
}

// annotateEntity names the producer or consumer of commands that refer to one.
func (t *Tracker) annotateEntity(c *conn, cmd *pulsarapi.BaseCommand, info *Info) {
	switch {
	case cmd.Seek != nil:
		info.Consumer = c.consumers[cmd.Seek.GetConsumerId()]
	case cmd.Unsubscribe != nil:
		info.Consumer = c.consumers[cmd.Unsubscribe.GetConsumerId()]
	case cmd.GetLastMessageId != nil:
		info.Consumer = c.consumers[cmd.GetLastMessageId.GetConsumerId()]
	case cmd.ConsumerStats != nil:
		info.Consumer = c.consumers[cmd.ConsumerStats.GetConsumerId()]
	case cmd.ReachedEndOfTopic != nil:
		info.Consumer = c.consumers[cmd.ReachedEndOfTopic.GetConsumerId()]
	case cmd.ActiveConsumerChange != nil:
		info.Consumer = c.consumers[cmd.ActiveConsumerChange.GetConsumerId()]
	}
}

func (t *Tracker) consumer(c *conn, id uint64, info *Info) *Consumer {
	cs := c.consumers[id]
	info.Consumer = cs
	if cs == nil && !c.s.Partial {
		t.problem(info, CodeUnknownConsumer, "consumer_id "+utoa(id)+" was never subscribed on this connection")
	}
	return cs
}

func (t *Tracker) onConnect(c *conn, f *decode.Frame) {
	cc := f.Command.GetConnect()
	c.s.ClientVersion = cc.GetClientVersion()
	c.s.ClientProtocol = cc.GetProtocolVersion()
	c.s.TopicWatchers = cc.GetFeatureFlags().GetSupportsTopicWatchers()
	c.s.connectSeen = true
	t.release(c.connect) // a second CONNECT replaces the first
	c.connect = t.newPending(f, 0)
}

func (t *Tracker) onConnected(c *conn, f *decode.Frame, info *Info) {
	cc := f.Command.GetConnected()
	c.s.ServerVersion = cc.GetServerVersion()
	c.s.ServerProtocol = cc.GetProtocolVersion()
	c.s.MaxMessageSize = int(cc.GetMaxMessageSize())
	c.s.Connected = true
	if c.connect != nil {
		t.link(info, c.connect, f)
		t.release(c.connect)
		c.connect = nil
	} else {
		c.orphans = append(c.orphans, t.newPending(f, 0))
	}
}

// onRequest registers a client request and its entity.
func (t *Tracker) onRequest(c *conn, f *decode.Frame, info *Info, id uint64) {
	p := t.newPending(f, id)
	cmd := f.Command
	switch f.Type {
	case pulsarapi.BaseCommand_PRODUCER:
		pc := cmd.GetProducer()
		if old := c.producers[pc.GetProducerId()]; old != nil && old.Ready && !old.Closed {
			t.problem(info, CodeProducerIDReused, "producer_id "+utoa(old.ID)+" is still open (PRODUCER #"+itoa(int64(old.Created))+", not closed)")
		}
		pr := &Producer{Conn: c.s.Conn, ID: pc.GetProducerId(), Topic: pc.GetTopic(), Name: pc.GetProducerName(), Created: f.N}
		c.producers[pr.ID] = pr
		p.producer, info.Producer = pr, pr
	case pulsarapi.BaseCommand_SUBSCRIBE:
		if old := c.consumers[cmd.GetSubscribe().GetConsumerId()]; old != nil && old.subscribed && !old.Closed {
			t.problem(info, CodeConsumerIDReused, "consumer_id "+utoa(old.ID)+" is still open (SUBSCRIBE #"+itoa(int64(old.Created))+", not closed)")
		}
		p.consumer = t.subscribe(c, f)
		info.Consumer = p.consumer
	case pulsarapi.BaseCommand_CLOSE_PRODUCER:
		p.producer = info.Producer
	case pulsarapi.BaseCommand_CLOSE_CONSUMER, pulsarapi.BaseCommand_UNSUBSCRIBE:
		p.consumer = info.Consumer
	case pulsarapi.BaseCommand_LOOKUP:
		p.topic = cmd.GetLookupTopic().GetTopic()
		t.onLookup(c, f, info, p)
	case pulsarapi.BaseCommand_PARTITIONED_METADATA:
		p.topic = cmd.GetPartitionMetadata().GetTopic()
	}
	if e := t.takeEarly(c, info, f, sendKey{seq: id}, false); e != nil {
		if p.producer != nil && e.typ == pulsarapi.BaseCommand_PRODUCER_SUCCESS {
			p.producer.Ready = true
		}
		t.release(e)
		t.release(p)
		return
	}
	t.addRequest(c, info, p)
}

// onResponse pairs a broker response with its request.
func (t *Tracker) onResponse(c *conn, f *decode.Frame, info *Info, id uint64, ok bool) {
	cmd := f.Command
	if e := t.tb.serverError(cmd, f.Type); e != "" || f.Type == pulsarapi.BaseCommand_ERROR {
		if e == "" {
			e = cmd.GetError().GetError().String()
		}
		info.Error = e
		t.problem(info, CodeErrorResponse, f.Type.String()+": "+e)
	}
	var req *pending
	if ok {
		req = c.requests.get(id)
	}
	if req == nil && f.Type == pulsarapi.BaseCommand_ERROR && c.connect != nil {
		// An ERROR refusing the handshake answers CONNECT.
		t.link(info, c.connect, f)
		t.release(c.connect)
		c.connect = nil
		return
	}
	if req == nil {
		if ok {
			t.addEarly(c, f, sendKey{seq: id}, false)
		} else if !c.s.Partial {
			t.problem(info, CodeUnmatchedResponse, f.Type.String()+" without request_id")
		}
		return
	}
	info.Producer, info.Consumer = req.producer, req.consumer
	switch f.Type {
	case pulsarapi.BaseCommand_PRODUCER_SUCCESS:
		ps := cmd.GetProducerSuccess()
		if pr := req.producer; pr != nil {
			if ps.GetProducerName() != "" {
				pr.Name = ps.GetProducerName()
			}
			if ps.ProducerReady == nil || ps.GetProducerReady() {
				pr.Ready = true
			} else {
				// Queued for exclusive access: a second PRODUCER_SUCCESS follows.
				lat := f.Time.Sub(req.t)
				info.req = Link{N: req.n, Type: req.typ, Latency: max(lat, 0)}
				info.Request = &info.req
				return
			}
		}
	case pulsarapi.BaseCommand_ERROR:
		if pr := req.producer; pr != nil && req.typ == pulsarapi.BaseCommand_PRODUCER {
			pr.Closed = true
		}
		if cs := req.consumer; cs != nil && req.typ == pulsarapi.BaseCommand_SUBSCRIBE {
			cs.Closed = true
		}
	case pulsarapi.BaseCommand_SUCCESS:
		if req.typ == pulsarapi.BaseCommand_CLOSE_PRODUCER && req.producer != nil {
			req.producer.Closed = true
		}
		if (req.typ == pulsarapi.BaseCommand_CLOSE_CONSUMER || req.typ == pulsarapi.BaseCommand_UNSUBSCRIBE) && req.consumer != nil {
			req.consumer.Closed = true
		}
		if req.typ == pulsarapi.BaseCommand_SUBSCRIBE && req.consumer != nil {
			req.consumer.subscribed = true
		}
	case pulsarapi.BaseCommand_LOOKUP_RESPONSE:
		t.onLookupResponse(c, f, info, req)
	}
	c.requests.del(id)
	t.link(info, req, f)
	t.release(req)
}
