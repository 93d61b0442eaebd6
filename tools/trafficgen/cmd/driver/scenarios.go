package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func basicMessage(i int) *pulsar.ProducerMessage {
	return &pulsar.ProducerMessage{
		Payload:    []byte("basic message " + strconv.Itoa(i)),
		Key:        "key-" + strconv.Itoa(i%3),
		Properties: map[string]string{"seq": strconv.Itoa(i), "lab": "basic"},
	}
}

// basic: one unbatched producer, one exclusive consumer, individual acks,
// and long enough for both sides' PINGs.
func (d *driver) basic(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	// Immediate acks: one ACK frame per message.
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "basic", SubscriptionName: "basic-sub", Type: pulsar.Exclusive,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "basic", DisableBatching: true})
	if err != nil {
		return err
	}
	const n = 10
	for i := 0; i < n; i++ {
		if _, err := d.send(ctx, p, basicMessage(i)); err != nil {
			return err
		}
	}
	err = d.receive(ctx, cs, n, func(m pulsar.Message) error { return d.ack(cs, m) })
	if err != nil {
		return err
	}
	linger := d.linger
	if linger == 0 {
		linger = 1500 * time.Millisecond
	}
	time.Sleep(linger) // let PING/PONG happen both ways
	p.Close()
	cs.Close()
	d.expectCounts(n, n, n)
	d.outcome("basic-roundtrip")
	return nil
}

// batchingCompression: one batched producer per codec (none, LZ4, ZLIB,
// ZSTD, SNAPPY) on one connection.
func (d *driver) batchingCompression(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	codecs := []struct {
		name string
		ct   pulsar.CompressionType
	}{{"none", pulsar.NoCompression}, {"lz4", pulsar.LZ4}, {"zlib", pulsar.ZLib}, {"zstd", pulsar.ZSTD}, {"snappy", pulsar.SNAPPY}}
	const n = 25
	for _, cd := range codecs {
		topic := "batch-" + cd.name
		cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "batch-sub", Type: pulsar.Exclusive})
		if err != nil {
			return err
		}
		p, err := d.producer(c, pulsar.ProducerOptions{Topic: topic, CompressionType: cd.ct,
			BatchingMaxMessages: 10, BatchingMaxPublishDelay: 20 * time.Millisecond})
		if err != nil {
			return err
		}
		err = d.sendAsync(ctx, p, n, func(i int) *pulsar.ProducerMessage {
			return &pulsar.ProducerMessage{
				Payload:    bytes.Repeat([]byte(cd.name+" payload "+strconv.Itoa(i)+" "), 4),
				Key:        "k" + strconv.Itoa(i%4),
				Properties: map[string]string{"codec": cd.name},
			}
		})
		if err != nil {
			return err
		}
		err = d.receive(ctx, cs, n, func(m pulsar.Message) error {
			if !bytes.HasPrefix(m.Payload(), []byte(cd.name+" payload ")) {
				return fmt.Errorf("%s: unexpected payload %q", topic, m.Payload())
			}
			return d.ack(cs, m)
		})
		if err != nil {
			return err
		}
		d.outcome("codec-" + cd.name)
		p.Close()
		cs.Close()
	}
	d.expectCounts(n*int64(len(codecs)), n*int64(len(codecs)), n*int64(len(codecs)))
	return nil
}

// chunking: a 20 KB message split into chunks of at most 4 KB, between two
// small messages.
func (d *driver) chunking(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "chunked", SubscriptionName: "chunk-sub", Type: pulsar.Exclusive})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "chunked", DisableBatching: true, EnableChunking: true, ChunkMaxMessageSize: 4096})
	if err != nil {
		return err
	}
	big := make([]byte, 20000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	payloads := [][]byte{[]byte("before the chunked message"), big, []byte("after the chunked message")}
	for i, pl := range payloads {
		if _, err := d.send(ctx, p, &pulsar.ProducerMessage{Payload: pl, Key: "chunk-key", Properties: map[string]string{"part": strconv.Itoa(i)}}); err != nil {
			return err
		}
	}
	i := 0
	err = d.receive(ctx, cs, len(payloads), func(m pulsar.Message) error {
		if !bytes.Equal(m.Payload(), payloads[i]) {
			return fmt.Errorf("chunking: message %d has %d bytes, want %d", i, len(m.Payload()), len(payloads[i]))
		}
		i++
		return d.ack(cs, m)
	})
	if err != nil {
		return err
	}
	d.outcome("chunked-message-reassembled")
	p.Close()
	cs.Close()
	d.expectCounts(int64(len(payloads)), int64(len(payloads)), int64(len(payloads)))
	return nil
}

// large: messages larger than a loopback segment (64 KB), so that one
// SEND and one MESSAGE frame span several TCP segments: 300,000 and
// 150,000 bytes between two small messages, batching and chunking off.
//
// With burst, the 300,000-byte message is sent 8 times more (about 5 MB on
// one connection, more than a small capture buffer holds: the live-drop
// test's traffic).
func (d *driver) large(ctx context.Context, burst bool) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "large", SubscriptionName: "large-sub", Type: pulsar.Exclusive})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "large", DisableBatching: true})
	if err != nil {
		return err
	}
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('A' + i%23)
		}
		return b
	}
	payloads := [][]byte{[]byte("before the large messages"), payload(300000), payload(150000), []byte("after the large messages")}
	if burst {
		for range 8 {
			payloads = append(payloads, payload(300000))
		}
	}
	for i, pl := range payloads {
		if _, err := d.send(ctx, p, &pulsar.ProducerMessage{Payload: pl, Key: "large-key", Properties: map[string]string{"part": strconv.Itoa(i)}}); err != nil {
			return err
		}
		if burst {
			time.Sleep(100 * time.Millisecond) // spread over a second: a capture can resume in the middle
		}
	}
	i := 0
	err = d.receive(ctx, cs, len(payloads), func(m pulsar.Message) error {
		if !bytes.Equal(m.Payload(), payloads[i]) {
			return fmt.Errorf("large: message %d has %d bytes, want %d", i, len(m.Payload()), len(payloads[i]))
		}
		i++
		return d.ack(cs, m)
	})
	if err != nil {
		return err
	}
	d.outcome("large-messages-received")
	p.Close()
	cs.Close()
	d.expectCounts(int64(len(payloads)), int64(len(payloads)), int64(len(payloads)))
	return nil
}

// partitioned: a 3-partition topic, keyed batched producer, one consumer per
// partition (one Subscribe), acks with response.
func (d *driver) partitioned(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "partitioned-orders", SubscriptionName: "orders-sub", Type: pulsar.Failover, AckWithResponse: true})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "partitioned-orders", BatchingMaxMessages: 5, BatchingMaxPublishDelay: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	const n = 30
	err = d.sendAsync(ctx, p, n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte("order " + strconv.Itoa(i)), Key: "customer-" + strconv.Itoa(i%6),
			Properties: map[string]string{"order": strconv.Itoa(i)}}
	})
	if err != nil {
		return err
	}
	parts := map[string]bool{}
	err = d.receive(ctx, cs, n, func(m pulsar.Message) error {
		parts[m.Topic()] = true
		return d.ack(cs, m)
	})
	if err != nil {
		return err
	}
	if len(parts) < 2 {
		d.failf("partitioned: messages came from %d partitions, want at least 2", len(parts))
	}
	d.outcome("partitions-" + strconv.Itoa(len(parts)))
	p.Close()
	cs.Close()
	d.expectCounts(n, n, n)
	return nil
}

// subscriptions: Exclusive (nack, redelivery, last message id, seek,
// unsubscribe), Shared (two consumers, acks with response), Failover
// (cumulative acks) and Key_Shared, all on one connection.
func (d *driver) subscriptions(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	var sent, received, acks int64

	// Exclusive.
	ex, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-exclusive", SubscriptionName: "ex-sub", Type: pulsar.Exclusive, NackRedeliveryDelay: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	pe, err := d.producer(c, pulsar.ProducerOptions{Topic: "subs-exclusive", DisableBatching: true})
	if err != nil {
		return err
	}
	// Shared.
	shA, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-shared", SubscriptionName: "sh-sub", Type: pulsar.Shared, Name: "shared-a", AckWithResponse: true})
	if err != nil {
		return err
	}
	shB, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-shared", SubscriptionName: "sh-sub", Type: pulsar.Shared, Name: "shared-b"})
	if err != nil {
		return err
	}
	ps, err := d.producer(c, pulsar.ProducerOptions{Topic: "subs-shared", DisableBatching: true})
	if err != nil {
		return err
	}
	// Failover.
	foA, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-failover", SubscriptionName: "fo-sub", Type: pulsar.Failover, Name: "failover-a"})
	if err != nil {
		return err
	}
	foB, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-failover", SubscriptionName: "fo-sub", Type: pulsar.Failover, Name: "failover-b"})
	if err != nil {
		return err
	}
	pf, err := d.producer(c, pulsar.ProducerOptions{Topic: "subs-failover", BatchingMaxMessages: 5, BatchingMaxPublishDelay: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	// Key_Shared.
	ksA, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-keyshared", SubscriptionName: "ks-sub", Type: pulsar.KeyShared, Name: "keyshared-a"})
	if err != nil {
		return err
	}
	ksB, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "subs-keyshared", SubscriptionName: "ks-sub", Type: pulsar.KeyShared, Name: "keyshared-b"})
	if err != nil {
		return err
	}
	pk, err := d.producer(c, pulsar.ProducerOptions{Topic: "subs-keyshared", DisableBatching: true})
	if err != nil {
		return err
	}

	// Interleave the producers' sends.
	for i := 0; i < 12; i++ {
		for _, pm := range []struct {
			p   pulsar.Producer
			key string
		}{{pe, "ex"}, {ps, "sh"}, {pf, "fo"}, {pk, "ks-" + strconv.Itoa(i%4)}} {
			if pm.p == pe && i >= 6 {
				continue
			}
			if _, err := d.send(ctx, pm.p, &pulsar.ProducerMessage{Payload: []byte(pm.key + " " + strconv.Itoa(i)), Key: pm.key,
				OrderingKey: pm.key, Properties: map[string]string{"i": strconv.Itoa(i)}}); err != nil {
				return err
			}
			sent++
		}
	}

	// Exclusive: nack the third message once, ack everything else.
	var first pulsar.MessageID
	nacked := false
	if err := d.receive(ctx, ex, 7, func(m pulsar.Message) error {
		if first == nil {
			first = m.ID()
		}
		if string(m.Payload()) == "ex 2" && !nacked {
			nacked = true
			ex.Nack(m)
			d.nacks.Add(1)
			return nil
		}
		if string(m.Payload()) == "ex 2" && m.RedeliveryCount() == 0 {
			return fmt.Errorf("exclusive: redelivered message has redelivery count 0")
		}
		return d.ack(ex, m)
	}); err != nil {
		return err
	}
	received += 7
	acks += 6
	if d.redelivered.Load() < 1 {
		d.failf("exclusive: no redelivered message after a negative ack")
	} else {
		d.outcome("nack-redelivered")
	}
	ids, err := ex.GetLastMessageIDs()
	if err != nil {
		return fmt.Errorf("get last message id: %w", err)
	}
	if len(ids) != 1 {
		d.failf("get last message id: %d ids, want 1", len(ids))
	} else {
		d.outcome("last-message-id")
	}
	if err := ex.Seek(first); err != nil {
		return fmt.Errorf("seek: %w", err)
	}
	// After the seek the broker closes the consumer; it resubscribes from
	// the first message, which the client itself skips (its start position
	// is exclusive), so "ex 1" to "ex 5" arrive again.
	var lastID pulsar.MessageID
	if err := d.receive(ctx, ex, 5, func(m pulsar.Message) error { lastID = m.ID(); return nil }); err != nil {
		return err
	}
	received += 5
	if err := d.ackCumulative(ex, lastID); err != nil {
		return err
	}
	acks++
	d.outcome("seek-replayed")

	// Shared: two consumers share 12 messages.
	n, err := d.receiveAll(ctx, 12, []pulsar.Consumer{shA, shB})
	if err != nil {
		return err
	}
	received += 12
	acks += 12
	if n[0] == 0 || n[1] == 0 {
		d.failf("shared: distribution %v, want both consumers used", n)
	} else {
		d.outcome("shared-both-consumers")
	}

	// Failover: the active consumer gets all, acks cumulatively.
	n, err = d.receiveAll(ctx, 12, []pulsar.Consumer{foA, foB})
	if err != nil {
		return err
	}
	received += 12
	for _, k := range n {
		if k > 0 {
			acks++
		}
	}
	d.outcome("failover-" + strconv.Itoa(n[0]) + "-" + strconv.Itoa(n[1]))

	// Key_Shared.
	n, err = d.receiveAll(ctx, 12, []pulsar.Consumer{ksA, ksB})
	if err != nil {
		return err
	}
	received += 12
	acks += 12
	d.outcome("keyshared-" + strconv.Itoa(n[0]) + "-" + strconv.Itoa(n[1]))

	if err := ex.Unsubscribe(); err != nil {
		return fmt.Errorf("unsubscribe: %w", err)
	}
	d.outcome("unsubscribed")
	for _, p := range []pulsar.Producer{pe, ps, pf, pk} {
		p.Close()
	}
	for _, cs := range []pulsar.Consumer{ex, shA, shB, foA, foB, ksA, ksB} {
		cs.Close()
	}
	d.expectCounts(sent, received, acks)
	return nil
}

// receiveAll receives total messages from several consumers concurrently.
// Failover consumers ack cumulatively (the last message each got); the
// others ack individually. It returns how many each consumer got.
func (d *driver) receiveAll(ctx context.Context, total int, css []pulsar.Consumer) ([]int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got atomic.Int64
	counts := make([]int, len(css))
	last := make([]pulsar.MessageID, len(css))
	errs := make([]error, len(css))
	var wg sync.WaitGroup
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := cs.Receive(ctx)
				if err != nil {
					if got.Load() < int64(total) {
						errs[i] = fmt.Errorf("receive on %s (%s): %w", cs.Subscription(), cs.Name(), err)
					}
					return
				}
				d.received.Add(1)
				counts[i]++
				last[i] = m.ID()
				if isFailover(cs) {
					// acked cumulatively below
				} else if err := d.ack(cs, m); err != nil {
					errs[i] = err
					cancel()
					return
				}
				if got.Add(1) >= int64(total) {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, cs := range css {
		if errs[i] != nil {
			return counts, errs[i]
		}
		if isFailover(cs) && last[i] != nil {
			if err := d.ackCumulative(cs, last[i]); err != nil {
				return counts, err
			}
		}
	}
	if got.Load() < int64(total) {
		return counts, fmt.Errorf("received %d of %d", got.Load(), total)
	}
	return counts, nil
}

func isFailover(cs pulsar.Consumer) bool { return strings.HasPrefix(cs.Name(), "failover") }
