package track

import (
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

type msgKey struct{ ledger, entry uint64 }

type delivery struct {
	n     int // MESSAGE frame
	acked bool
}

// deliveries are the message ids delivered to one consumer identity.
type deliveries struct {
	byID  map[msgKey]*delivery
	order []msgKey
	// overflow is set once ids were evicted: acks are no longer checked.
	overflow bool
}

// subscribe creates the consumer of a SUBSCRIBE.
func (t *Tracker) subscribe(c *conn, f *decode.Frame) *Consumer {
	s := f.Command.GetSubscribe()
	cs := &Consumer{
		Conn: c.s.Conn, ID: s.GetConsumerId(), Topic: s.GetTopic(), Subscription: s.GetSubscription(),
		Name: s.GetConsumerName(), SubType: s.GetSubType().String(), Created: f.N,
	}
	key := cs.Topic + "\x00" + cs.Subscription + "\x00" + cs.Name
	if cs.Name == "" {
		key += "\x00" + c.s.Conn.Client.String() + "\x00" + utoa(cs.ID)
	}
	d := t.identities[key]
	if d == nil {
		d = &deliveries{byID: map[msgKey]*delivery{}}
		t.identities[key] = d
	}
	cs.del = d
	c.consumers[cs.ID] = cs
	return cs
}

// onMessage accounts for permits and remembers the delivered id.
func (t *Tracker) onMessage(c *conn, f *decode.Frame, info *Info) {
	m := f.Command.GetMessage()
	info.Entries = entries(f)
	cs := t.consumer(c, m.GetConsumerId(), info)
	if cs == nil {
		return
	}
	if cs.Permits <= 0 && !c.s.Partial {
		t.problem(info, CodePermitsExceeded, "consumer_id "+utoa(cs.ID)+" has "+itoa(cs.Permits)+" permits left")
	}
	cs.Permits -= int64(info.Entries)
	if m.MessageId == nil {
		return
	}
	k := msgKey{m.MessageId.GetLedgerId(), m.MessageId.GetEntryId()}
	d := cs.del
	if old := d.byID[k]; old != nil {
		info.RedeliveryOf = old.n
		old.n, old.acked = f.N, false
		return
	}
	d.byID[k] = &delivery{n: f.N}
	d.order = append(d.order, k)
	if len(d.byID) > t.opts.MaxDelivered {
		old := d.order[0]
		d.order = d.order[1:]
		delete(d.byID, old)
		if !d.overflow {
			d.overflow = true
			t.finding(c, f.Dir, f.Time, 0, f.Type, CodeStateEvicted, "consumer "+cs.Subscription+"/"+cs.Name+
				": more than "+itoa(int64(t.opts.MaxDelivered))+" message ids remembered; acks are no longer checked")
		}
	}
}

// onAck links an ACK to the MESSAGE frames it acknowledges.
func (t *Tracker) onAck(c *conn, f *decode.Frame, info *Info) {
	a := f.Command.GetAck()
	cs := t.consumer(c, a.GetConsumerId(), info)
	if cs == nil {
		return
	}
	d := cs.del
	for _, id := range a.GetMessageId() {
		k := msgKey{id.GetLedgerId(), id.GetEntryId()}
		if a.GetAckType() == pulsarapi.CommandAck_Cumulative {
			for kk, dl := range d.byID {
				if !dl.acked && (kk.ledger < k.ledger || (kk.ledger == k.ledger && kk.entry <= k.entry)) {
					t.acked(info, dl, f.N)
				}
			}
		}
		dl := d.byID[k]
		if dl == nil {
			if !d.overflow && !c.s.Partial {
				t.problem(info, CodeAckNotDelivered, "message "+utoa(k.ledger)+":"+utoa(k.entry)+" was not delivered to consumer_id "+utoa(cs.ID))
			}
			continue
		}
		if a.GetAckType() != pulsarapi.CommandAck_Cumulative {
			t.acked(info, dl, f.N)
		}
	}
	sortInts(info.Acks)
}

func (t *Tracker) acked(info *Info, dl *delivery, ack int) {
	// Partial batch acks (ack_set) may ack one MESSAGE several times.
	for _, n := range info.Acks {
		if n == dl.n {
			return
		}
	}
	dl.acked = true
	info.Acks = append(info.Acks, dl.n)
	if t.rec != nil {
		l := t.rec.at(dl.n)
		l.ackedBy = append(l.ackedBy, ack)
	}
}

func sortInts(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
