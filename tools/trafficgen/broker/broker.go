package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Config chooses the broker's addresses and scripted behaviour.
type Config struct {
	// Addr is the primary listener, e.g. "127.0.0.1:6650" (loopback only).
	Addr string
	// RedirectAddr is a second listener, e.g. "127.0.0.2:6650"; lookups of
	// topics whose name contains "redirect" that reach the primary listener
	// are answered with a Redirect to it. Empty disables the second listener.
	RedirectAddr string
	// Lifetime bounds how long Run serves; zero means one minute.
	Lifetime time.Duration
	// PingInterval is how often the broker pings every connection; zero
	// disables the broker's own pings.
	PingInterval time.Duration
	// MaxMessageSize is announced in CONNECTED; zero means 5 MiB.
	MaxMessageSize int32
	// Partitions is the partition count of topics whose name contains
	// "partitioned"; zero means 3.
	Partitions int
	// BrokerEntryMetadata prefixes every MESSAGE payload with a 0x0e02
	// BrokerEntryMetadata section (broker_timestamp and index).
	BrokerEntryMetadata bool
	// ReleaseAcked drops a stored payload once every subscription has
	// acknowledged it (bounded memory for bulk runs; a later SEEK cannot
	// replay it).
	ReleaseAcked bool
	// AuthChallenge makes the broker send an AUTH_CHALLENGE right after
	// CONNECTED (auth refresh), which the client answers with AUTH_RESPONSE
	// carrying its credentials again.
	AuthChallenge bool
	// Delays holds back every reply that answers a request type (key: the
	// request's BaseCommand type name, e.g. "LOOKUP") for that long, to
	// make a slower broker (traffic-lab variants for pulsarscope diff).
	// Other replies are not held up behind a delayed one.
	Delays map[string]time.Duration
	// FailFirst makes the first request of a type (key: "PRODUCER" or
	// "SUBSCRIBE") fail with that ServerError; later ones are served.
	FailFirst map[string]pulsarapi.ServerError
	// Log receives one JSON object per line for every connection event and
	// every frame read or written. Nil discards the log.
	Log io.Writer
}

// Broker is the scripted broker. Create it with New, serve with Run.
type Broker struct {
	cfg       Config
	listeners []net.Listener
	primary   string
	secondary string

	logMu sync.Mutex
	enc   *json.Encoder

	mu       sync.Mutex // guards everything below and all topic state
	topics   map[string]*topic
	conns    map[*conn]struct{}
	nextConn int
	nextReq  uint64
	nextIdx  uint64
	closed   bool
	// failedFirst records the request types already failed by FailFirst.
	failedFirst map[string]bool

	wg sync.WaitGroup
}

// LogEvent is one line of the broker's log.
type LogEvent struct {
	// Time is the wall-clock time (RFC 3339 with nanoseconds).
	Time string `json:"t"`
	// Event is "accept", "frame", "closed" or "note".
	Event string `json:"ev"`
	// Conn numbers the connection, from 1 in accept order.
	Conn int `json:"conn"`
	// Local and Remote are the connection's addresses (accept events).
	Local  string `json:"local,omitempty"`
	Remote string `json:"remote,omitempty"`
	// Dir is "c2s" for frames read and "s2c" for frames written.
	Dir string `json:"dir,omitempty"`
	// Type is the BaseCommand type name.
	Type string `json:"type,omitempty"`
	// Payload, Checksum and EntryMeta describe a payload frame: whether it had
	// a payload section, the 0x0e01 checksum, and a 0x0e02 section.
	Payload   bool `json:"payload,omitempty"`
	Checksum  bool `json:"checksum,omitempty"`
	EntryMeta bool `json:"entry_meta,omitempty"`
	// Batch is num_messages_in_batch of a payload frame (0 when unset).
	Batch int `json:"batch,omitempty"`
	// Chunk is true for a chunk of a chunked message.
	Chunk bool `json:"chunk,omitempty"`
	// Answers is the request type a written frame answers.
	Answers string `json:"answers,omitempty"`
	// AnswersFrame is the request a written frame answers: its number among
	// the frames read on the connection (1-based; 0: none).
	AnswersFrame int `json:"answers_frame,omitempty"`
	// Note is free text.
	Note string `json:"note,omitempty"`
}

// CheckLoopback returns an error unless addr is host:port with a literal IP
// address in 127.0.0.0/8.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("address %q: host must be a literal 127.0.0.0/8 address: %w", addr, err)
	}
	if !netip.MustParsePrefix("127.0.0.0/8").Contains(ip.Unmap()) {
		return fmt.Errorf("address %q is not in 127.0.0.0/8: the lab broker listens on loopback only", addr)
	}
	return nil
}

// New validates cfg and opens the listeners.
func New(cfg Config) (*Broker, error) {
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = time.Minute
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = 5 * 1024 * 1024
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 3
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	addrs := []string{cfg.Addr}
	if cfg.RedirectAddr != "" {
		addrs = append(addrs, cfg.RedirectAddr)
	}
	for _, a := range addrs {
		if err := CheckLoopback(a); err != nil {
			return nil, err
		}
	}
	b := &Broker{cfg: cfg, enc: json.NewEncoder(cfg.Log), topics: map[string]*topic{}, conns: map[*conn]struct{}{}}
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			b.closeListeners()
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		b.listeners = append(b.listeners, l)
	}
	b.primary = b.listeners[0].Addr().String()
	if len(b.listeners) > 1 {
		b.secondary = b.listeners[1].Addr().String()
	}
	return b, nil
}

// Addr is the primary listener's address.
func (b *Broker) Addr() string { return b.primary }

// RedirectAddr is the second listener's address ("" without one).
func (b *Broker) RedirectAddr() string { return b.secondary }

// URL is the pulsar:// service URL of the primary listener.
func (b *Broker) URL() string { return "pulsar://" + b.primary }

func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		_ = l.Close()
	}
}

// Run serves until ctx is done or the configured lifetime has passed, then
// closes every connection and returns. It returns nil on such a stop.
func (b *Broker) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Lifetime)
	defer cancel()
	errc := make(chan error, len(b.listeners))
	for _, l := range b.listeners {
		go func(l net.Listener) { errc <- b.accept(ctx, l) }(l)
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	b.mu.Lock()
	b.closed = true
	conns := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		conns = append(conns, c)
	}
	b.mu.Unlock()
	b.closeListeners()
	for _, c := range conns {
		c.shutdown()
	}
	b.wg.Wait()
	return err
}

func (b *Broker) accept(ctx context.Context, l net.Listener) error {
	for {
		nc, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", l.Addr(), err)
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			_ = nc.Close()
			return nil
		}
		b.nextConn++
		c := newConn(b, b.nextConn, nc, l.Addr().String())
		b.conns[c] = struct{}{}
		b.wg.Add(3)
		b.mu.Unlock()
		b.log(LogEvent{Event: "accept", Conn: c.id, Local: nc.LocalAddr().String(), Remote: nc.RemoteAddr().String()})
		go c.readLoop()
		go c.writeLoop()
		go c.pingLoop(ctx)
	}
}

func (b *Broker) log(ev LogEvent) {
	ev.Time = time.Now().Format(time.RFC3339Nano)
	b.logMu.Lock()
	defer b.logMu.Unlock()
	_ = b.enc.Encode(ev)
}
