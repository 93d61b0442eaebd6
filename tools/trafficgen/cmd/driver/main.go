// Command driver runs one traffic-lab scenario with the real Apache Pulsar Go
// client against the lab broker, logs its counts, writes them as JSON, and
// exits non-zero unless the client saw every outcome the scenario expects.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

// scenarioList names the scenarios the driver knows.
const scenarioList = "basic, keepalive, batching-compression, chunking, large, large-burst (not committed), partitioned, subscriptions, errors, many, any, auth, encryption, concurrent, bulk; variants of basic for diff tests: basic-batching, basic-lz4, basic-extra, basic-producer-error, basic-slow-lookup; of many: many-slow-producer (the broker holds each PRODUCER_SUCCESS back 20 ms)"

func main() {
	url := flag.String("url", "pulsar://127.0.0.1:6650", "broker service URL")
	scenario := flag.String("scenario", "basic", "scenario: "+scenarioList)
	resultPath := flag.String("result", "", "write the counts as JSON to this file")
	timeout := flag.Duration("timeout", 50*time.Second, "give up after this long")
	clientLog := flag.String("client-log", "fatal", "log level of the Pulsar client (logrus level; the errors scenario makes it log expected errors)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := newDriver(*url, *clientLog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(2)
	}
	start := time.Now()
	err = d.run(ctx, *scenario, *timeout)
	res := d.result(*scenario, time.Since(start), err)
	fmt.Fprintf(os.Stderr, "driver: scenario=%s sent=%d receipts=%d received=%d acks=%d nacks=%d redelivered=%d clients=%d producers=%d consumers=%d outcomes=%v failures=%v (%.1fs)\n",
		res.Scenario, res.Sent, res.Receipts, res.Received, res.Acks, res.Nacks, res.Redelivered, res.Clients, res.Producers, res.Consumers, res.Outcomes, res.Failures, res.Seconds)
	if *resultPath != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if werr := os.WriteFile(*resultPath, append(b, '\n'), 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "driver: write result:", werr)
			os.Exit(2)
		}
	}
	if !res.OK {
		os.Exit(1)
	}
}

// Result is what the driver writes with -result.
type Result struct {
	Scenario    string   `json:"scenario"`
	OK          bool     `json:"ok"`
	Seconds     float64  `json:"seconds"`
	Sent        int64    `json:"sent"`
	Receipts    int64    `json:"receipts"`
	SendErrors  int64    `json:"send_errors"`
	Received    int64    `json:"received"`
	Acks        int64    `json:"acks"`
	Cumulative  int64    `json:"cumulative_acks"`
	Nacks       int64    `json:"nacks"`
	Redelivered int64    `json:"redelivered"`
	Clients     int64    `json:"clients"`
	Producers   int64    `json:"producers"`
	Consumers   int64    `json:"consumers"`
	Outcomes    []string `json:"outcomes"`
	Failures    []string `json:"failures,omitempty"`
}

type driver struct {
	url    string
	logger plog.Logger
	// linger is how long basic waits at its end for PING/PONG both ways
	// (default 1.5 s).
	linger time.Duration

	sent, receipts, sendErrors, received, acks, cumulative, nacks, redelivered atomic.Int64
	clients, producers, consumers                                              atomic.Int64

	mu       sync.Mutex
	outcomes []string
	failures []string
}

func newDriver(url, level string) (*driver, error) {
	l := logrus.New()
	lv, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("client log level: %w", err)
	}
	l.SetLevel(lv)
	l.SetOutput(os.Stderr)
	return &driver{url: url, logger: plog.NewLoggerWithLogrus(l)}, nil
}

func (d *driver) outcome(s string) { d.mu.Lock(); d.outcomes = append(d.outcomes, s); d.mu.Unlock() }
func (d *driver) failf(format string, args ...any) {
	d.mu.Lock()
	d.failures = append(d.failures, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

func (d *driver) result(scenario string, took time.Duration, err error) Result {
	if err != nil {
		d.failf("%v", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	outcomes := append([]string{}, d.outcomes...)
	sort.Strings(outcomes)
	return Result{
		Scenario: scenario, OK: len(d.failures) == 0, Seconds: took.Round(time.Millisecond).Seconds(),
		Sent: d.sent.Load(), Receipts: d.receipts.Load(), SendErrors: d.sendErrors.Load(),
		Received: d.received.Load(), Acks: d.acks.Load(), Cumulative: d.cumulative.Load(),
		Nacks: d.nacks.Load(), Redelivered: d.redelivered.Load(),
		Clients: d.clients.Load(), Producers: d.producers.Load(), Consumers: d.consumers.Load(),
		Outcomes: outcomes, Failures: d.failures,
	}
}

func (d *driver) run(ctx context.Context, scenario string, timeout time.Duration) error {
	if scenario != "bulk" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch scenario {
	case "basic", "any":
		return d.basic(ctx)
	case "keepalive":
		// The broker holds its PONGs back 1.2 s (capture.sh): with the
		// client's PING every second, two are outstanding at times.
		d.linger = 4 * time.Second
		return d.basic(ctx)
	case "batching-compression":
		return d.batchingCompression(ctx)
	case "chunking":
		return d.chunking(ctx)
	case "large":
		return d.large(ctx, false)
	case "large-burst":
		return d.large(ctx, true)
	case "partitioned":
		return d.partitioned(ctx)
	case "subscriptions":
		return d.subscriptions(ctx)
	case "errors":
		return d.errorsScenario(ctx)
	case "many", "many-slow-producer":
		return d.many(ctx)
	case "bulk":
		return d.bulk(ctx)
	case "encryption":
		return d.encryption(ctx)
	case "concurrent":
		return d.concurrent(ctx)
	case "auth":
		return d.auth(ctx)
	case "basic-batching", "basic-lz4", "basic-extra", "basic-producer-error", "basic-slow-lookup":
		return d.basicVariant(ctx, scenario)
	}
	return fmt.Errorf("unknown scenario %q (known: %s)", scenario, scenarioList)
}

// client opens a client; every client has its own connection pool, so its
// own TCP connection to each broker address.
func (d *driver) client() (pulsar.Client, error) {
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: d.url, Logger: d.logger,
		OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second,
		KeepAliveInterval: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	d.clients.Add(1)
	return c, nil
}

func topicName(s string) string { return "persistent://public/default/" + s }

func (d *driver) producer(c pulsar.Client, opts pulsar.ProducerOptions) (pulsar.Producer, error) {
	opts.Topic = topicName(opts.Topic)
	if opts.SendTimeout == 0 {
		opts.SendTimeout = 20 * time.Second
	}
	p, err := c.CreateProducer(opts)
	if err != nil {
		return nil, fmt.Errorf("create producer on %s: %w", opts.Topic, err)
	}
	d.producers.Add(1)
	return p, nil
}

func (d *driver) consumer(c pulsar.Client, opts pulsar.ConsumerOptions) (pulsar.Consumer, error) {
	opts.Topic = topicName(opts.Topic)
	opts.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	if opts.NackRedeliveryDelay == 0 {
		opts.NackRedeliveryDelay = 300 * time.Millisecond
	}
	cs, err := c.Subscribe(opts)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s on %s: %w", opts.SubscriptionName, opts.Topic, err)
	}
	d.consumers.Add(1)
	return cs, nil
}

// send publishes synchronously and counts the outcome.
func (d *driver) send(ctx context.Context, p pulsar.Producer, m *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	d.sent.Add(1)
	id, err := p.Send(ctx, m)
	if err != nil {
		d.sendErrors.Add(1)
		return nil, fmt.Errorf("send on %s: %w", p.Topic(), err)
	}
	d.receipts.Add(1)
	return id, nil
}

// sendAsync publishes n messages asynchronously, flushes and waits for all
// receipts.
func (d *driver) sendAsync(ctx context.Context, p pulsar.Producer, n int, mk func(i int) *pulsar.ProducerMessage) error {
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := 0; i < n; i++ {
		wg.Add(1)
		d.sent.Add(1)
		p.SendAsync(ctx, mk(i), func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				d.sendErrors.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			d.receipts.Add(1)
		})
	}
	if err := p.FlushWithCtx(ctx); err != nil {
		return fmt.Errorf("flush %s: %w", p.Topic(), err)
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return fmt.Errorf("async send on %s: %w", p.Topic(), err)
	}
	return nil
}

// receive takes n messages from cs (within ctx), calling handle for each.
func (d *driver) receive(ctx context.Context, cs pulsar.Consumer, n int, handle func(pulsar.Message) error) error {
	for i := 0; i < n; i++ {
		m, err := cs.Receive(ctx)
		if err != nil {
			return fmt.Errorf("receive %d of %d on %s: %w", i+1, n, cs.Subscription(), err)
		}
		d.received.Add(1)
		if m.RedeliveryCount() > 0 {
			d.redelivered.Add(1)
		}
		if handle != nil {
			if err := handle(m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *driver) ack(cs pulsar.Consumer, m pulsar.Message) error {
	if err := cs.Ack(m); err != nil {
		return fmt.Errorf("ack on %s: %w", cs.Subscription(), err)
	}
	d.acks.Add(1)
	return nil
}

func (d *driver) ackCumulative(cs pulsar.Consumer, id pulsar.MessageID) error {
	if err := cs.AckIDCumulative(id); err != nil {
		return fmt.Errorf("cumulative ack on %s: %w", cs.Subscription(), err)
	}
	d.acks.Add(1)
	d.cumulative.Add(1)
	return nil
}

// expect records a failure unless got == want.
func (d *driver) expect(what string, got, want int64) {
	if got != want {
		d.failf("%s: got %d, want %d", what, got, want)
	}
}

// expectCounts checks the basic send/receive balance.
func (d *driver) expectCounts(sent, received, acks int64) {
	d.expect("sent", d.sent.Load(), sent)
	d.expect("receipts", d.receipts.Load(), sent)
	d.expect("received", d.received.Load(), received)
	d.expect("acks", d.acks.Load(), acks)
}

// errorContains reports whether err's text contains s.
func errorContains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
