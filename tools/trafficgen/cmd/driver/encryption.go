package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
)

// labKeyPair writes a fresh RSA key pair in the formats the Go client's
// default crypto reads (public key PKIX, private key PKCS#1, PEM) into a
// temporary folder and returns their paths.
func labKeyPair() (pub, priv string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generating the lab's RSA key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding the lab's public key: %w", err)
	}
	dir, err := os.MkdirTemp("", "trafficgen-keys")
	if err != nil {
		return "", "", err
	}
	pub, priv = filepath.Join(dir, "public.pem"), filepath.Join(dir, "private.pem")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", err
	}
	return pub, priv, nil
}

// encryption: end-to-end encrypted messages, unbatched and batched with
// LZ4, under one data key name ("lab-key"); the consumer decrypts them.
func (d *driver) encryption(ctx context.Context) error {
	pub, priv, err := labKeyPair()
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(pub))
	keys := crypto.NewFileKeyReader(pub, priv)
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	const n = 10
	for _, v := range []struct {
		topic   string
		batched bool
	}{{"encrypted", false}, {"encrypted-batched", true}} {
		cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: v.topic, SubscriptionName: "enc-sub", Type: pulsar.Exclusive,
			Decryption: &pulsar.MessageDecryptionInfo{KeyReader: keys, ConsumerCryptoFailureAction: crypto.ConsumerCryptoFailureActionFail}})
		if err != nil {
			return err
		}
		opts := pulsar.ProducerOptions{Topic: v.topic, DisableBatching: !v.batched,
			Encryption: &pulsar.ProducerEncryptionInfo{KeyReader: keys, Keys: []string{"lab-key"}}}
		if v.batched {
			opts.CompressionType, opts.BatchingMaxMessages, opts.BatchingMaxPublishDelay = pulsar.LZ4, 5, 20*time.Millisecond
		}
		p, err := d.producer(c, opts)
		if err != nil {
			return err
		}
		mk := func(i int) *pulsar.ProducerMessage {
			return &pulsar.ProducerMessage{Payload: []byte("secret message " + strconv.Itoa(i)), Key: "key-" + strconv.Itoa(i%3)}
		}
		if v.batched {
			err = d.sendAsync(ctx, p, n, mk)
		} else {
			for i := 0; i < n && err == nil; i++ {
				_, err = d.send(ctx, p, mk(i))
			}
		}
		if err != nil {
			return err
		}
		err = d.receive(ctx, cs, n, func(m pulsar.Message) error {
			if want := "secret message "; len(m.Payload()) < len(want) || string(m.Payload()[:len(want)]) != want {
				return fmt.Errorf("%s: message not decrypted: %q", v.topic, m.Payload())
			}
			return d.ack(cs, m)
		})
		if err != nil {
			return err
		}
		p.Close()
		cs.Close()
	}
	d.expectCounts(2*n, 2*n, 2*n)
	d.outcome("encryption-roundtrip")
	return nil
}

// concurrent: a producer and a consumer on a topic of 16 partitions (the
// broker runs with -partitions 16): the client looks up, subscribes and
// creates a producer on every partition at once, so more than 8 requests
// are in flight on the one connection; then 48 messages, keyed across the
// partitions, each received and acked.
func (d *driver) concurrent(ctx context.Context) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	cs, err := d.consumer(c, pulsar.ConsumerOptions{Topic: "partitioned-wide", SubscriptionName: "wide-sub", Type: pulsar.Shared})
	if err != nil {
		return err
	}
	p, err := d.producer(c, pulsar.ProducerOptions{Topic: "partitioned-wide", DisableBatching: true})
	if err != nil {
		return err
	}
	const n = 48
	err = d.sendAsync(ctx, p, n, func(i int) *pulsar.ProducerMessage {
		return &pulsar.ProducerMessage{Payload: []byte("wide " + strconv.Itoa(i)), Key: "key-" + strconv.Itoa(i)}
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
	if len(parts) < 8 {
		d.failf("concurrent: messages came from %d partitions, want at least 8", len(parts))
	}
	p.Close()
	cs.Close()
	d.expectCounts(n, n, n)
	d.outcome("concurrent-16-partitions")
	return nil
}
