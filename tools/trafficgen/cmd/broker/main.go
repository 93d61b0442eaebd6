// Command broker runs the traffic lab's scripted Pulsar broker on loopback
// until its lifetime ends or it receives SIGINT/SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/tools/trafficgen/broker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg broker.Config
	var logPath, readyPath string
	flag.StringVar(&cfg.Addr, "addr", "127.0.0.1:6650", "primary listener (127.0.0.0/8 only)")
	flag.StringVar(&cfg.RedirectAddr, "redirect-addr", "127.0.0.2:6650", "second listener that lookups of \"redirect\" topics are redirected to (127.0.0.0/8 only; empty disables)")
	flag.DurationVar(&cfg.Lifetime, "lifetime", 60*time.Second, "stop after this long")
	flag.DurationVar(&cfg.PingInterval, "ping", time.Second, "interval of the broker's own PINGs (0 disables)")
	flag.IntVar(&cfg.Partitions, "partitions", 3, "partitions of topics named \"...partitioned...\"")
	flag.BoolVar(&cfg.BrokerEntryMetadata, "entry-metadata", false, "prefix MESSAGE payloads with BrokerEntryMetadata (0x0e02)")
	flag.BoolVar(&cfg.ReleaseAcked, "release-acked", false, "drop payloads once acknowledged (bounded memory for bulk runs)")
	flag.BoolVar(&cfg.AuthChallenge, "auth-challenge", false, "send AUTH_CHALLENGE after CONNECTED (auth refresh)")
	flag.StringVar(&logPath, "log", "", "frame log (JSON lines); empty writes to stdout")
	flag.StringVar(&readyPath, "ready", "", "file to create once listening")
	cfg.Delays = map[string]time.Duration{}
	flag.Func("delay", "hold back replies to a request type, TYPE=DURATION (e.g. LOOKUP=50ms; repeatable)", func(v string) error {
		return broker.ParseDelay(cfg.Delays, v)
	})
	cfg.FailFirst = map[string]pulsarapi.ServerError{}
	flag.Func("fail-first", "answer the first PRODUCER or SUBSCRIBE with an ERROR, TYPE=ServerError (e.g. PRODUCER=ServiceNotReady; repeatable)", func(v string) error {
		return broker.ParseFailFirst(cfg.FailFirst, v)
	})
	flag.Parse()

	var w io.Writer = os.Stdout
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return fmt.Errorf("create log: %w", err)
		}
		defer f.Close()
		w = f
	}
	cfg.Log = w
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	if readyPath != "" {
		if err := os.WriteFile(readyPath, []byte(b.Addr()+"\n"), 0o644); err != nil {
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := b.Run(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
