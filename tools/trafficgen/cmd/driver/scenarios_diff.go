package main

import (
	"context"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// basicVariant runs the basic flow changed in exactly one way, for
// pulsarscope diff's tests (each capture is compared with basic's):
//
//   - basic-batching: the producer batches (one message per batch, since
//     sends are synchronous);
//   - basic-lz4: the producer compresses with LZ4;
//   - basic-extra: the consumer also asks for the last message id
//     (one extra GET_LAST_MESSAGE_ID request);
//   - basic-producer-error: the broker (-fail-first PRODUCER=ServiceNotReady)
//     fails the first PRODUCER and the driver creates the producer again;
//   - basic-slow-lookup: the unchanged flow against a broker that delays its
//     LOOKUP responses (-delay LOOKUP=50ms).
func (d *driver) basicVariant(ctx context.Context, variant string) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "basic", SubscriptionName: "basic-sub", Type: pulsar.Exclusive,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
	if err != nil {
		return err
	}
	opts := pulsar.ProducerOptions{Topic: "basic", DisableBatching: true}
	switch variant {
	case "basic-batching":
		opts.DisableBatching = false
		opts.BatchingMaxMessages = 10
		opts.BatchingMaxPublishDelay = 10 * time.Millisecond
	case "basic-lz4":
		opts.CompressionType = pulsar.LZ4
	}
	p, err := d.producer(c, opts)
	if variant == "basic-producer-error" {
		if !errorContains(err, "ServiceNotReady") {
			d.failf("basic-producer-error: want a ServiceNotReady error on the first producer, got %v", err)
		} else {
			d.outcome("producer-error-then-retry")
		}
		p, err = d.producer(c, opts)
	}
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
	if variant == "basic-extra" {
		if _, err := cs.GetLastMessageIDs(); err != nil {
			d.failf("basic-extra: last message id: %v", err)
		} else {
			d.outcome("last-message-id")
		}
	}
	time.Sleep(1500 * time.Millisecond) // let PING/PONG happen both ways, as basic does
	p.Close()
	cs.Close()
	d.expectCounts(n, n, n)
	d.outcome("basic-roundtrip")
	return nil
}
