package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// errorsScenario: failed metadata lookup, lookup redirect, producer error,
// send error, and a broker-initiated close (topic unload) with reconnect.
func (d *driver) errorsScenario(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	var sent, received, acks int64

	// 1. Partitioned-metadata lookup fails with TopicNotFound.
	if _, err := d.producer(c, pulsar.ProducerOptions{Topic: "missing-topic"}); errorContains(err, "TopicNotFound") {
		d.outcome("metadata-TopicNotFound")
	} else {
		d.failf("missing-topic: want a TopicNotFound error, got %v", err)
	}

	// 2. Lookup redirect to the second listener.
	pr, err := d.producer(c, pulsar.ProducerOptions{Topic: "redirect-topic", DisableBatching: true})
	if err != nil {
		return err
	}
	for i := 0; i < 3; i++ {
		if _, err := d.send(ctx, pr, &pulsar.ProducerMessage{Payload: []byte("redirected " + strconv.Itoa(i))}); err != nil {
			return err
		}
		sent++
	}
	d.outcome("lookup-redirect-followed")

	// 3. Producer refused with AuthorizationError.
	if _, err := d.producer(c, pulsar.ProducerOptions{Topic: "unauthorized-topic"}); errorContains(err, "AuthorizationError") {
		d.outcome("producer-AuthorizationError")
	} else {
		d.failf("unauthorized-topic: want an AuthorizationError, got %v", err)
	}

	// 4. Topic unload: the broker closes producer and consumer after the
	// second receipt; both reconnect and every message arrives.
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "unload-topic", SubscriptionName: "unload-sub", Type: pulsar.Exclusive})
	if err != nil {
		return err
	}
	pu, err := d.producer(c, pulsar.ProducerOptions{Topic: "unload-topic", DisableBatching: true})
	if err != nil {
		return err
	}
	const n = 5
	for i := 0; i < n; i++ {
		if _, err := d.send(ctx, pu, &pulsar.ProducerMessage{Payload: []byte("unload " + strconv.Itoa(i))}); err != nil {
			return err
		}
		sent++
	}
	seen := map[string]bool{}
	for len(seen) < n {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		m, err := cs.Receive(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("unload-topic: received %d distinct of %d: %w", len(seen), n, err)
		}
		d.received.Add(1)
		received++
		seen[string(m.Payload())] = true
		if err := d.ack(cs, m); err != nil {
			return err
		}
		acks++
	}
	d.outcome("unload-reconnected")

	// 5. Send error: the broker answers the first SEND with SEND_ERROR; the
	// client drops the connection, reconnects and resends.
	pe, err := d.producer(c, pulsar.ProducerOptions{Topic: "send-error-topic", DisableBatching: true})
	if err != nil {
		return err
	}
	if _, err := d.send(ctx, pe, &pulsar.ProducerMessage{Payload: []byte("retried after send error")}); err != nil {
		return err
	}
	sent++
	d.outcome("send-error-retried")

	pr.Close()
	pu.Close()
	pe.Close()
	cs.Close()
	d.expect("sent", d.sent.Load(), sent)
	d.expect("receipts", d.receipts.Load(), sent)
	d.expect("acks", d.acks.Load(), acks)
	if received < n {
		d.failf("unload-topic: received %d, want at least %d", received, n)
	}
	return nil
}

// many: 5 clients (5 connections), each with 4 producers and 4 consumers.
func (d *driver) many(ctx context.Context) error {
	const clients, perClient, msgs = 5, 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for ci := 0; ci < clients; ci++ {
		c, err := d.client()
		if err != nil {
			return err
		}
		defer c.Close()
		for pi := 0; pi < perClient; pi++ {
			topic := fmt.Sprintf("many-%d-%d", ci, pi)
			cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "many-sub", Type: pulsar.Shared})
			if err != nil {
				return err
			}
			p, err := d.producer(c, pulsar.ProducerOptions{Topic: topic, DisableBatching: pi%2 == 0,
				BatchingMaxMessages: 5, BatchingMaxPublishDelay: 10 * time.Millisecond})
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer p.Close()
				defer cs.Close()
				err := d.sendAsync(ctx, p, msgs, func(i int) *pulsar.ProducerMessage {
					return &pulsar.ProducerMessage{Payload: []byte(topic + " " + strconv.Itoa(i)), Key: topic}
				})
				if err == nil {
					err = d.receive(ctx, cs, msgs, func(m pulsar.Message) error { return d.ack(cs, m) })
				}
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	total := int64(clients * perClient * msgs)
	d.expectCounts(total, total, total)
	d.outcome("many-" + strconv.Itoa(clients) + "-clients")
	return nil
}

// bulk: high-rate batched traffic until ctx is cancelled (SIGTERM).
func (d *driver) bulk(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	payload := make([]byte, 200)
	for i := range payload {
		payload[i] = byte('A' + i%26)
	}
	var wg sync.WaitGroup
	for ti := 0; ti < 2; ti++ {
		topic := "bulk-" + strconv.Itoa(ti)
		cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "bulk-sub", Type: pulsar.Shared})
		if err != nil {
			return err
		}
		p, err := d.producer(c, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 100, BatchingMaxPublishDelay: 5 * time.Millisecond,
			CompressionType: pulsar.LZ4})
		if err != nil {
			return err
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				d.sent.Add(1)
				p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload, Key: strconv.Itoa(i % 16)},
					func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
						if err != nil {
							d.sendErrors.Add(1)
							return
						}
						d.receipts.Add(1)
					})
			}
		}()
		go func() {
			defer wg.Done()
			for {
				m, err := cs.Receive(ctx)
				if err != nil {
					return
				}
				d.received.Add(1)
				if cs.Ack(m) == nil {
					d.acks.Add(1)
				}
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	d.outcome("bulk-stopped")
	return nil
}
