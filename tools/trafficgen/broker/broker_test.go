package broker_test

import (
	"bufio"
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/tools/trafficgen/broker"
	"github.com/pulsarscope/pulsarscope/tools/trafficgen/lab"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6650": true, "127.0.0.2:0": true, "127.255.255.254:1": true,
		"0.0.0.0:6650": false, "10.0.0.1:6650": false, "[::1]:6650": false, "localhost:6650": false,
		":6650": false, "192.168.1.1:0": false, "127.0.0.1": false,
	} {
		err := broker.CheckLoopback(addr)
		if (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestNewRefusesNonLoopback(t *testing.T) {
	for _, cfg := range []broker.Config{
		{Addr: "0.0.0.0:0"},
		{Addr: "127.0.0.1:0", RedirectAddr: "10.1.2.3:0"},
		{Addr: "[::]:0"},
	} {
		if b, err := broker.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded on %s, want an error", cfg, b.Addr())
		}
	}
}

func sendFrame(t *testing.T, withEntryMeta bool) *broker.Frame {
	t.Helper()
	body, err := broker.NewBody(&pulsarapi.MessageMetadata{
		ProducerName: proto.String("p"), SequenceId: proto.Uint64(7), PublishTime: proto.Uint64(1),
		NumMessagesInBatch: proto.Int32(3),
	}, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	f := &broker.Frame{
		Cmd: &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(),
			Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(1), SequenceId: proto.Uint64(7)}},
		HasPayload: true, HasChecksum: true, Checksum: broker.Checksum(body), Body: body,
	}
	if withEntryMeta {
		f.BrokerEntryMetadata, err = proto.Marshal(&pulsarapi.BrokerEntryMetadata{BrokerTimestamp: proto.Uint64(5), Index: proto.Uint64(9)})
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestFrameRoundTrip(t *testing.T) {
	ping := &broker.Frame{Cmd: &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_PING.Enum(), Ping: &pulsarapi.CommandPing{}}}
	frames := []*broker.Frame{ping, sendFrame(t, false), sendFrame(t, true)}
	var wire []byte
	for _, f := range frames {
		var err error
		if wire, err = broker.AppendFrame(wire, f); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(wire))
	for i, want := range frames {
		got, err := broker.ReadFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Cmd.GetType() != want.Cmd.GetType() || got.HasPayload != want.HasPayload || got.HasChecksum != want.HasChecksum ||
			!bytes.Equal(got.Body, want.Body) || !bytes.Equal(got.BrokerEntryMetadata, want.BrokerEntryMetadata) {
			t.Errorf("frame %d: got %+v, want %+v", i, got, want)
		}
		if !got.ChecksumValid() {
			t.Errorf("frame %d: checksum invalid", i)
		}
		if got.HasPayload {
			md, err := got.Metadata()
			if err != nil || md.GetNumMessagesInBatch() != 3 {
				t.Errorf("frame %d: metadata %v, %v", i, md, err)
			}
		}
	}
	if _, err := broker.ReadFrame(r); err == nil {
		t.Error("read past the end: want an error")
	}
	// A flipped payload byte breaks the checksum.
	bad := sendFrame(t, false)
	bad.Body = append([]byte(nil), bad.Body...)
	bad.Body[len(bad.Body)-1] ^= 1
	if bad.ChecksumValid() {
		t.Error("corrupted body: checksum still valid")
	}
	// Truncated and oversized frames are errors.
	tr := bufio.NewReader(bytes.NewReader(wire[:len(wire)-1]))
	for i := range frames {
		_, err := broker.ReadFrame(tr)
		if last := i == len(frames)-1; (err != nil) != last {
			t.Errorf("truncated stream, frame %d: error %v", i, err)
		}
	}
	if _, err := broker.ParseFrame([]byte{0, 0, 0, 99, 1}); err == nil {
		t.Error("command size beyond the frame: want an error")
	}
	if _, err := broker.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0x7f, 0, 0, 0}))); err == nil {
		t.Error("oversized frame: want an error")
	}
}

// syncBuffer is a bytes.Buffer safe for the broker's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestBrokerLifetime(t *testing.T) {
	b, err := broker.New(broker.Config{Addr: "127.0.0.1:0", Lifetime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := b.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Run took %v with a 200ms lifetime", d)
	}
}

// TestBasicFlowWithRealClient runs the broker in-process and drives it with
// the real client: a producer, a consumer, acks, a redirected lookup and a
// failed lookup; the broker's log must account for every frame.
func TestBasicFlowWithRealClient(t *testing.T) {
	log := &syncBuffer{}
	b, err := broker.New(broker.Config{Addr: "127.0.0.1:0", RedirectAddr: "127.0.0.2:0", Lifetime: 30 * time.Second,
		PingInterval: 200 * time.Millisecond, BrokerEntryMetadata: true, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: plog.DefaultNopLogger(), OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const topic = "persistent://public/default/test-basic"
	cs, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()
	const n = 5
	for i := 0; i < n; i++ {
		if _, err := p.Send(rctx, &pulsar.ProducerMessage{Payload: []byte("m"), Key: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		m, err := cs.Receive(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Payload()) != "m" || m.Key() != "k" {
			t.Errorf("message %d: payload %q key %q", i, m.Payload(), m.Key())
		}
		if err := cs.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	pr, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/test-redirect"})
	if err != nil {
		t.Fatalf("redirected producer: %v", err)
	}
	if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/test-missing"}); err == nil || !strings.Contains(err.Error(), "TopicNotFound") {
		t.Errorf("producer on a missing topic: got %v, want TopicNotFound", err)
	}
	pr.Close()
	p.Close()
	cs.Close()
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var e lab.Expect
	if err := e.FromBrokerLog(strings.NewReader(log.String())); err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]int{ // type: c2s, s2c
		"SEND": {n, 0}, "SEND_RECEIPT": {0, n}, "MESSAGE": {0, n}, "PRODUCER": {2, 0}, "PRODUCER_SUCCESS": {0, 2},
		"SUBSCRIBE": {1, 0}, "CLOSE_PRODUCER": {2, 0}, "CLOSE_CONSUMER": {1, 0},
	}
	for typ, want := range checks {
		if got := [2]int{e.Frames.C2S[typ], e.Frames.S2C[typ]}; got != want {
			t.Errorf("%s frames: got %v, want %v", typ, got, want)
		}
	}
	if e.Connections != 2 {
		t.Errorf("connections: got %d, want 2 (primary and redirect target)", e.Connections)
	}
	if e.PayloadFrames != 2*n || e.ChecksummedPayloadFrames != 2*n || e.BrokerEntryMetadataFrames != n {
		t.Errorf("payload frames %d, checksummed %d, with entry metadata %d; want %d, %d, %d",
			e.PayloadFrames, e.ChecksummedPayloadFrames, e.BrokerEntryMetadataFrames, 2*n, 2*n, n)
	}
	if e.Answered["LOOKUP"] < 3 || e.Answered["SEND"] != n || e.Answered["CONNECT"] != 2 {
		t.Errorf("answered: %v", e.Answered)
	}
	if e.Frames.C2S["ACK"] == 0 {
		t.Error("no ACK frame")
	}
	if len(e.Notes) != 0 {
		t.Errorf("broker notes: %v", e.Notes)
	}
}

// TestScriptedErrorsWithRealClient checks the scripted failures: a refused
// producer, a SEND_ERROR the client recovers from, and a topic unload after
// which producer and consumer reconnect and every message arrives.
func TestScriptedErrorsWithRealClient(t *testing.T) {
	log := &syncBuffer{}
	b, err := broker.New(broker.Config{Addr: "127.0.0.1:0", Lifetime: 30 * time.Second, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.URL(), Logger: plog.DefaultNopLogger(), OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
	defer rcancel()

	if _, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/t-unauthorized"}); err == nil || !strings.Contains(err.Error(), "AuthorizationError") {
		t.Errorf("unauthorized producer: got %v, want AuthorizationError", err)
	}
	const topic = "persistent://public/default/t-unload"
	cs, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	for i := 0; i < n; i++ {
		if _, err := p.Send(rctx, &pulsar.ProducerMessage{Payload: []byte{byte('a' + i)}}); err != nil {
			t.Fatalf("send %d across the unload: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := cs.Receive(rctx)
		if err != nil {
			t.Fatalf("after %d distinct messages: %v", len(seen), err)
		}
		seen[string(m.Payload())] = true
		_ = cs.Ack(m)
	}
	pe, err := c.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://public/default/t-send-error", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Send(rctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatalf("send after SEND_ERROR: %v", err)
	}
	pe.Close()
	p.Close()
	cs.Close()
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var e lab.Expect
	if err := e.FromBrokerLog(strings.NewReader(log.String())); err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]int{"ERROR": 1, "SEND_ERROR": 1, "CLOSE_PRODUCER": 1, "CLOSE_CONSUMER": 1} {
		if got := e.Frames.S2C[typ]; got != want {
			t.Errorf("broker wrote %d %s, want %d", got, typ, want)
		}
	}
	if e.Frames.C2S["PRODUCER"] < 4 || e.Frames.C2S["SUBSCRIBE"] < 2 {
		t.Errorf("no reconnect: PRODUCER %d, SUBSCRIBE %d", e.Frames.C2S["PRODUCER"], e.Frames.C2S["SUBSCRIBE"])
	}
	if e.Connections < 2 {
		t.Errorf("connections %d: the client should reconnect after SEND_ERROR", e.Connections)
	}
}
