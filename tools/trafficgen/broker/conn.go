package broker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// outFrame is a frame queued for writing, with the request type it answers
// and the request itself: its number among the frames read on the
// connection (1-based; 0 for a frame that answers none).
type outFrame struct {
	f       *Frame
	answers string
	req     int
}

// conn is one client connection.
type conn struct {
	b     *Broker
	id    int
	nc    net.Conn
	local string // listener address the client connected to

	out      chan []outFrame
	done     chan struct{}
	doneOnce sync.Once
	// reading is the number of the frame being handled among those read
	// on the connection (1-based); replies made while handling it answer
	// it. Guarded by b.mu.
	reading int

	// guarded by b.mu
	producers map[uint64]*producer
	consumers map[uint64]*consumer
}

func newConn(b *Broker, id int, nc net.Conn, local string) *conn {
	return &conn{
		b: b, id: id, nc: nc, local: local,
		out:       make(chan []outFrame, 4096),
		done:      make(chan struct{}),
		producers: map[uint64]*producer{},
		consumers: map[uint64]*consumer{},
	}
}

// shutdown closes the socket; the read loop then cleans up.
func (c *conn) shutdown() {
	c.doneOnce.Do(func() { close(c.done) })
	_ = c.nc.Close()
}

// send queues frames to be written together in one write. It must be called
// with b.mu held, so that frames keep the order of the events causing them.
func (c *conn) send(frames ...outFrame) {
	if len(frames) == 0 {
		return
	}
	select {
	case c.out <- frames:
	case <-c.done:
	}
}

func (c *conn) readLoop() {
	defer c.b.wg.Done()
	r := bufio.NewReaderSize(c.nc, 64*1024)
	var readErr error
	for {
		f, err := ReadFrame(r)
		if err != nil {
			readErr = err
			break
		}
		ev := LogEvent{Event: "frame", Conn: c.id, Dir: "c2s", Type: f.Cmd.GetType().String()}
		describePayload(&ev, f)
		c.b.log(ev)
		c.b.mu.Lock()
		c.reading++
		c.handle(f)
		c.b.mu.Unlock()
	}
	note := "client closed"
	if !errors.Is(readErr, io.EOF) {
		note = readErr.Error()
	}
	c.b.mu.Lock()
	c.cleanup()
	delete(c.b.conns, c)
	c.b.mu.Unlock()
	c.shutdown()
	c.b.log(LogEvent{Event: "closed", Conn: c.id, Note: note})
}

func describePayload(ev *LogEvent, f *Frame) {
	if !f.HasPayload {
		return
	}
	ev.Payload = true
	ev.Checksum = f.HasChecksum
	ev.EntryMeta = f.BrokerEntryMetadata != nil
	if md, err := f.Metadata(); err == nil {
		ev.Batch = int(md.GetNumMessagesInBatch())
		if md.NumMessagesInBatch == nil {
			ev.Batch = 0
		}
		ev.Chunk = md.GetNumChunksFromMsg() > 1
	} else {
		ev.Note = err.Error()
	}
	if !f.ChecksumValid() {
		ev.Note = "checksum mismatch"
	}
}

func (c *conn) writeLoop() {
	defer c.b.wg.Done()
	var buf []byte
	for {
		var batch []outFrame
		select {
		case batch = <-c.out:
		case <-c.done:
			return
		}
		// Coalesce whatever else is already queued into the same write.
	more:
		for len(batch) < 256 {
			select {
			case next := <-c.out:
				batch = append(batch, next...)
			default:
				break more
			}
		}
		buf = buf[:0]
		var err error
		for _, o := range batch {
			if buf, err = AppendFrame(buf, o.f); err != nil {
				break
			}
		}
		if err == nil {
			_, err = c.nc.Write(buf)
		}
		if err != nil {
			c.b.log(LogEvent{Event: "note", Conn: c.id, Note: "write failed, " + strconv.Itoa(len(batch)) + " frames not counted: " + err.Error()})
			c.shutdown()
			return
		}
		for _, o := range batch {
			ev := LogEvent{Event: "frame", Conn: c.id, Dir: "s2c", Type: o.f.Cmd.GetType().String(), Answers: o.answers, AnswersFrame: o.req}
			describePayload(&ev, o.f)
			c.b.log(ev)
		}
	}
}

func (c *conn) pingLoop(ctx context.Context) {
	defer c.b.wg.Done()
	if c.b.cfg.PingInterval <= 0 {
		return
	}
	t := time.NewTicker(c.b.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-t.C:
			c.b.mu.Lock()
			c.send(outFrame{f: &Frame{Cmd: cmd(pulsarapi.BaseCommand_PING, func(b *pulsarapi.BaseCommand) { b.Ping = &pulsarapi.CommandPing{} })}})
			c.b.mu.Unlock()
		}
	}
}
