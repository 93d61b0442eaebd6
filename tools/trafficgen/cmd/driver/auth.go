package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// LabToken is the token the auth scenario's client presents. It is fake,
// and exists so that every output of pulsarscope can be checked for
// redaction on a real client's CONNECT and AUTH_RESPONSE.
const LabToken = "lab-token.eyJzdWIiOiJwdWxzYXJzY29wZS1sYWIifQ.not-a-real-signature"

// auth: a client authenticating with a token; the broker (-auth-challenge)
// asks for the credentials again right after CONNECTED, and the client
// answers with AUTH_RESPONSE. Then a short produce/consume round trip.
func (d *driver) auth(ctx context.Context) error {
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: d.url, Logger: d.logger,
		Authentication:    pulsar.NewAuthenticationToken(LabToken),
		OperationTimeout:  10 * time.Second,
		ConnectionTimeout: 5 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("new client with token auth: %w", err)
	}
	d.clients.Add(1)
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "auth", SubscriptionName: "auth-sub", Type: pulsar.Exclusive,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "auth", DisableBatching: true})
	if err != nil {
		return err
	}
	const n = 3
	for i := 0; i < n; i++ {
		if _, err := d.send(ctx, p, basicMessage(i)); err != nil {
			return err
		}
	}
	if err := d.receive(ctx, cs, n, func(m pulsar.Message) error { return d.ack(cs, m) }); err != nil {
		return err
	}
	p.Close()
	cs.Close()
	d.expectCounts(n, n, n)
	d.outcome("auth-token-roundtrip")
	return nil
}
