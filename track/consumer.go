package track

import (
	"slices"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/internal/chunked"
)

type msgKey struct{ ledger, entry uint64 }

// delivery is one message id delivered to a consumer identity.
type delivery struct {
	k     msgKey
	n     int // MESSAGE frame (the latest, on a redelivery)
	acked bool
}

// identity is what makes consumers on different connections the same
// consumer: topic, subscription and name; an unnamed consumer is only
// itself (name is then "\x00", its client endpoint and consumer id: built
// once, when the consumer is created).
type identity struct {
	topic, subscription, name string
}

// smallDeliveries is how many ids are searched linearly before an index
// is built.
const smallDeliveries = 16

// deliveries are the message ids delivered to one consumer identity, in
// order of first delivery (the oldest is evicted beyond the cap). While
// the ids arrive in increasing order (the usual case: a broker dispatches
// entries in ledger order) they are found by binary search, and a new id
// is known to be new at a glance. Once one arrives out of order, index
// maps every id to its position plus base (the number of ids evicted);
// few ids are searched linearly. The ids lie in blocks (chunked.List): a
// consumer of a million messages never copies them to a bigger array.
type deliveries struct {
	ids   chunked.List[delivery]
	index map[msgKey]int
	// unsorted is set once an id arrived out of order: index is in use.
	unsorted bool
	base     int
	// overflow is set once ids were evicted: acks are no longer checked.
	overflow bool
	// hint is where the id after the last one found would be: acks list
	// ids in the order they were delivered.
	hint int
}

func (k msgKey) less(o msgKey) bool {
	return k.ledger < o.ledger || (k.ledger == o.ledger && k.entry < o.entry)
}

// len is the number of ids kept.
func (d *deliveries) len() int { return d.ids.Len() }

// at is the i-th id kept, the oldest first (0 <= i < d.len()); the
// pointer is valid until the next add or evictOldest.
func (d *deliveries) at(i int) *delivery { return d.ids.At(i) }

func (d *deliveries) find(k msgKey) *delivery {
	if d.index != nil {
		if i, ok := d.index[k]; ok {
			return d.at(i - d.base)
		}
		return nil
	}
	if !d.unsorted && d.len() > smallDeliveries {
		if d.at(d.len()-1).k.less(k) || k.less(d.at(0).k) {
			return nil // newer than every id, or older (evicted)
		}
		if h := d.hint; h < d.len() {
			if dl := d.at(h); dl.k == k {
				d.hint = h + 1
				return dl
			}
		}
		i, j := 0, d.len()
		for i < j {
			h := int(uint(i+j) >> 1)
			if d.at(h).k.less(k) {
				i = h + 1
			} else {
				j = h
			}
		}
		if i < d.len() {
			if dl := d.at(i); dl.k == k {
				d.hint = i + 1
				return dl
			}
		}
		return nil
	}
	for i := 0; i < d.len(); i++ {
		if dl := d.at(i); dl.k == k {
			return dl
		}
	}
	return nil
}

func (d *deliveries) add(k msgKey, n int) {
	if !d.unsorted && d.len() > 0 && !d.at(d.len()-1).k.less(k) {
		d.unsorted = true
	}
	d.ids.Push(delivery{k: k, n: n})
	switch {
	case d.index != nil:
		d.index[k] = d.base + d.len() - 1
	case d.unsorted && d.len() > smallDeliveries:
		d.index = make(map[msgKey]int, 2*d.len())
		for i := 0; i < d.len(); i++ {
			d.index[d.at(i).k] = d.base + i
		}
	}
}

func (d *deliveries) evictOldest() {
	if d.index != nil {
		delete(d.index, d.at(0).k)
	}
	d.ids.DropFirst()
	d.base++
	if d.hint > 0 {
		d.hint--
	}
}

// subscribe creates the consumer of a SUBSCRIBE.
func (t *Tracker) subscribe(c *conn, f *decode.Frame) *Consumer {
	s := f.Command.GetSubscribe()
	cs := &Consumer{
		Conn: c.s.Conn, ID: s.GetConsumerId(), Topic: s.GetTopic(), Subscription: s.GetSubscription(),
		Name: s.GetConsumerName(), SubType: s.GetSubType().String(), Created: f.N,
	}
	key := identity{topic: cs.Topic, subscription: cs.Subscription, name: cs.Name}
	if cs.Name == "" {
		key.name = "\x00" + c.s.Conn.Client.String() + "\x00" + utoa(cs.ID)
	}
	d := t.identities[key]
	if d == nil {
		d = &deliveries{}
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
	if old := d.find(k); old != nil {
		info.RedeliveryOf = old.n
		old.n, old.acked = f.N, false
		return
	}
	d.add(k, f.N)
	if d.len() > t.opts.MaxDelivered {
		d.evictOldest()
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
	cumulative := a.GetAckType() == pulsarapi.CommandAck_Cumulative
	if cumulative && (cs.SubType == pulsarapi.CommandSubscribe_Shared.String() || cs.SubType == pulsarapi.CommandSubscribe_Key_Shared.String()) {
		t.problem(info, CodeCumulativeAckShared, "consumer_id "+utoa(cs.ID)+" ("+cs.SubType+") acknowledges cumulatively")
	}
	for _, id := range a.GetMessageId() {
		k := msgKey{id.GetLedgerId(), id.GetEntryId()}
		if cumulative {
			for i := 0; i < d.len(); i++ {
				dl := d.at(i)
				if !dl.acked && (dl.k.ledger < k.ledger || (dl.k.ledger == k.ledger && dl.k.entry <= k.entry)) {
					dl.acked = true
					info.Acks = append(info.Acks, dl.n)
				}
			}
		}
		dl := d.find(k)
		if dl == nil {
			if !d.overflow && !c.s.Partial {
				t.problem(info, CodeAckNotDelivered, "message "+utoa(k.ledger)+":"+utoa(k.entry)+" was not delivered to consumer_id "+utoa(cs.ID))
			}
			continue
		}
		if !cumulative {
			dl.acked = true
			info.Acks = append(info.Acks, dl.n)
		}
	}
	// Partial batch acks (ack_set) may ack one MESSAGE several times: it
	// is listed once.
	if len(info.Acks) > 1 {
		if !slices.IsSorted(info.Acks) { // acks list ids in delivery order
			slices.Sort(info.Acks)
		}
		info.Acks = slices.Compact(info.Acks)
	}
	if t.rec != nil {
		for _, n := range info.Acks {
			l := t.rec.at(n)
			l.ackedBy = append(l.ackedBy, f.N)
		}
	}
}
