package decode

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// Batching of a ParallelStreamDecoder. Small batches keep what is in
// flight (decoded frames waiting for their turn) small and in cache.
const (
	parMaxItems = 128      // frames and events per batch
	parMaxRaw   = 32 << 10 // frame bytes per batch (a bigger frame gets a batch of its own)
	parMaxDelay = 50 * time.Millisecond
	parKeepRaw  = 1 << 20           // batch byte buffers above this are released after use
	parBudget   = parMaxItems << 15 // decode buffers a batch may hold (decompressed payloads, entries): 32 KiB a frame
)

// ParallelStreamDecoder is a StreamDecoder that decodes frames on other
// goroutines. Framing, resynchronisation, numbering and accounting stay on
// the caller's goroutine (the reassembler's), exactly as in StreamDecoder;
// each whole frame is queued in a batch (copied into it, unless it lies in
// a buffer of the Keeper's, SetKeeper), batches are decoded by workers,
// each with its own Decoder, and the worker that finishes the next batch
// in order hands frames and events to the Sink, one worker at a time, in
// the order a StreamDecoder would, with the same values. A worker that
// takes the next batch in order while no one delivers decodes and hands
// over its frames one by one instead, in its Decoder's own buffers: what
// the Sink reads was just written on the same core, not in a batch's
// slots by another one.
//
// The Sink is called from the workers' goroutines, never two at once, not
// from the caller's; it must not call the decoder's methods (Stats,
// Totals, Frames), whose figures are the caller's to read. Frames reach the Sink at most parMaxDelay (50 ms)
// after their last byte arrives, so live captures are not held up.
// Memory is bounded: a fixed number of batches are in flight (the caller
// blocks when they are all taken), each holding at most parBudget of
// decode buffers; a frame that would take more (a big decompressed
// payload) is decoded again, by the delivering worker, when its turn
// comes.
//
// Call Wait after the last Close (the end of reassembly.Run): it delivers
// what is queued and stops the goroutines. A panic in the Sink is re-raised
// by Wait.
type ParallelStreamDecoder struct {
	*StreamDecoder
	sink Sink
	opts Options
	// batch limits: parMaxItems and parMaxRaw (smaller in tests)
	maxItems, maxRaw, budget int
	deferred                 atomic.Int64 // frames decoded late (tests)
	streamed, slotted        atomic.Int64 // batches decoded by the delivering worker, or into slots (tests)
	noStream                 bool         // every batch decoded into slots (tests)

	mu  sync.Mutex // guards cur and seq: the caller's calls and the flush ticker
	cur *pbatch
	seq int

	late *Decoder // the delivering worker's, for deferred frames

	// acks holds the ids of delivered ACKs, given back by their slots
	// for the workers' next ones (decodeAck).
	acks sync.Pool

	keeper Keeper // nil: every frame is copied into its batch

	free chan *pbatch
	work chan *pbatch

	// Delivery: the worker that finishes the next batch in order hands
	// it, and the finished ones after it, to the Sink (one worker at a
	// time: delivering).
	dmu        sync.Mutex
	pending    map[int]*pbatch // finished, waiting for their turn
	next       int             // seq of the next batch to deliver
	delivering bool

	workers  sync.WaitGroup
	stop     chan struct{}
	ticker   sync.WaitGroup
	waited   bool
	panicked any // first panic of the Sink, re-raised by Wait
}

// pbatch is a run of consecutive frames and events.
type pbatch struct {
	seq   int
	start time.Time // when its first item was added
	items []pitem
	raw   []byte       // the bytes of the frames copied
	size  int          // of its frames, copied or not
	held  []int        // the Keeper's buffers its frames lie in
	slots []*frameBufs // per frame, what its decoded Frame points into
}

// bytes returns the bytes of frame it.
func (b *pbatch) bytes(it *pitem) []byte {
	if it.data != nil {
		return it.data
	}
	return b.raw[it.start:it.end]
}

type pitem struct {
	frame      bool
	start, end int    // of raw
	data       []byte // the frame, in a buffer of the Keeper's (not copied)
	n          int
	ts         time.Time
	conn       *reassembly.Conn
	dir        reassembly.Dir
	offset     int64
	lost       int64  // > 0: a damaged frame, of which this many bytes were not captured
	conflict   string // a retransmission-conflict problem's detail, or ""
	f          *Frame // decoded
	deferred   bool   // too big to hold: decode at delivery
	ev         Event  // an event (a copy unless Retain)
	evp        *Event // the event itself (Retain)
	stats      ConnStats
	hasStats   bool
}

// NewParallelStreamDecoder returns a ParallelStreamDecoder decoding on
// workers goroutines (0: GOMAXPROCS). With one worker or GOMAXPROCS 1 it
// decodes on the caller's goroutine like a StreamDecoder (Wait is then
// only a formality).
func NewParallelStreamDecoder(sink Sink, opts Options, workers int) *ParallelStreamDecoder {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &ParallelStreamDecoder{sink: sink, opts: opts.withDefaults(), maxItems: parMaxItems, maxRaw: parMaxRaw, budget: parBudget}
	if opts.SkipPayloadContents {
		// Frames cost a fraction of their full decoding: batches twice
		// as big keep what a batch costs to hand over (waking a worker)
		// small beside its work (docs/benchmarks.md).
		p.maxItems, p.maxRaw = 2*parMaxItems, 2*parMaxRaw
	}
	if workers < 2 {
		p.StreamDecoder = NewStreamDecoder(sink, opts)
		return p
	}
	p.StreamDecoder = NewStreamDecoder(parSink{p}, opts)
	p.StreamDecoder.par = p
	n := 2*workers + 2 // deeper than workers + 2: less waiting for the oldest batch
	if opts.SkipPayloadContents {
		// Two more: a batch waiting for the one before it to be
		// delivered holds no decode buffers worth keeping small, and
		// the reader waits less for a free one (bulk500 stats: 0.30
		// -> 0.29 s; read -q, with payloads, is slower with them).
		n += 2
	}
	p.free = make(chan *pbatch, n)
	p.work = make(chan *pbatch, n)
	p.pending = make(map[int]*pbatch, n)
	for i := 0; i < n; i++ {
		p.free <- &pbatch{}
	}
	for i := 0; i < workers; i++ {
		p.workers.Add(1)
		go p.worker()
	}
	p.stop = make(chan struct{})
	p.ticker.Add(1)
	go p.tick()
	return p
}

// Wait delivers everything queued to the Sink and stops the goroutines.
// Call it once, after the last Close.
func (p *ParallelStreamDecoder) Wait() {
	if p.StreamDecoder.par == nil || p.waited {
		return
	}
	p.waited = true
	close(p.stop)
	p.ticker.Wait()
	p.mu.Lock()
	p.flushLocked()
	p.mu.Unlock()
	close(p.work)
	p.workers.Wait() // the last batch finished is delivered before its worker returns
	if p.panicked != nil {
		panic(p.panicked)
	}
}

// item returns a new item at the end of the current batch (taking a free
// batch if needed). p.mu is held.
func (p *ParallelStreamDecoder) item() *pitem {
	if p.cur == nil {
		p.cur = <-p.free
		p.cur.start = time.Now()
	}
	b := p.cur
	if len(b.items) < cap(b.items) {
		b.items = b.items[:len(b.items)+1]
	} else {
		b.items = append(b.items, pitem{})
	}
	it := &b.items[len(b.items)-1]
	probs := it.ev.Problems[:0]
	*it = pitem{}
	it.ev.Problems = probs
	return it
}

// The reassembler's calls hold p.mu for their whole run (frame and event
// queue under it), which the flush ticker takes too: one lock a call, not
// one a frame.

// Open is StreamDecoder.Open, under p.mu.
func (p *ParallelStreamDecoder) Open(c *reassembly.Conn) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.Open(c)
}

// Data is StreamDecoder.Data, under p.mu.
func (p *ParallelStreamDecoder) Data(c *reassembly.Conn, d reassembly.Dir, data []byte, ts time.Time) {
	p.lock()
	defer p.unlock() // also if the framer's rescue catches a panic
	p.StreamDecoder.Data(c, d, data, ts)
}

// Gap is StreamDecoder.Gap, under p.mu.
func (p *ParallelStreamDecoder) Gap(c *reassembly.Conn, d reassembly.Dir, n int64, ts time.Time) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.Gap(c, d, n, ts)
}

// OutOfWindow is StreamDecoder.OutOfWindow, under p.mu.
func (p *ParallelStreamDecoder) OutOfWindow(c *reassembly.Conn, d reassembly.Dir, n int, ts time.Time) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.OutOfWindow(c, d, n, ts)
}

// Pending is StreamDecoder.Pending, under p.mu.
func (p *ParallelStreamDecoder) Pending(c *reassembly.Conn, d reassembly.Dir) bool {
	p.lock()
	defer p.unlock()
	return p.StreamDecoder.Pending(c, d)
}

// Conflict is StreamDecoder.Conflict, under p.mu.
func (p *ParallelStreamDecoder) Conflict(c *reassembly.Conn, d reassembly.Dir, off, n int64, ts time.Time) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.Conflict(c, d, off, n, ts)
}

// GapWithReason is StreamDecoder.GapWithReason, under p.mu.
func (p *ParallelStreamDecoder) GapWithReason(c *reassembly.Conn, d reassembly.Dir, n int64, reason reassembly.GapReason, ts time.Time) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.GapWithReason(c, d, n, reason, ts)
}

// Close is StreamDecoder.Close, under p.mu.
func (p *ParallelStreamDecoder) Close(c *reassembly.Conn, reason reassembly.CloseReason, ts time.Time) {
	p.lock()
	defer p.unlock()
	p.StreamDecoder.Close(c, reason, ts)
}

// lock takes p.mu when frames are decoded on other goroutines.
func (p *ParallelStreamDecoder) lock() {
	if p.StreamDecoder.par != nil {
		p.mu.Lock()
	}
}

func (p *ParallelStreamDecoder) unlock() {
	if p.StreamDecoder.par != nil {
		p.mu.Unlock()
	}
}

// Keeper keeps the buffers the bytes handed to Data lie in unchanged past
// the call (capture.ReadBuffers): a frame that lies in one is queued
// without being copied, its buffer held until its batch is delivered.
type Keeper interface {
	// Owner reports which buffer b lies in; ok is false when none that
	// may be held. Called on the caller's goroutine.
	Owner(b []byte) (id int, ok bool)
	// Hold keeps buffer id unchanged until a matching Release. Called on
	// the caller's goroutine.
	Hold(id int)
	// Release ends one Hold of buffer id; called on a worker's goroutine.
	Release(id int)
}

// SetKeeper makes the decoder queue the frames that lie in k's buffers
// without copying them. Call it before the first frame.
func (p *ParallelStreamDecoder) SetKeeper(k Keeper) {
	if p.StreamDecoder.par != nil {
		p.keeper = k
	}
}

// frame queues a whole frame (called by StreamDecoder.emit, under p.mu).
func (p *ParallelStreamDecoder) frame(raw []byte, lost int64, conflict string, n int, ts time.Time, c *reassembly.Conn, d reassembly.Dir, off int64) {
	if p.cur != nil && p.cur.size > 0 && p.cur.size+len(raw) > p.maxRaw {
		p.flushLocked()
	}
	it := p.item()
	b := p.cur
	it.frame, it.n, it.ts, it.conn, it.dir, it.offset, it.lost, it.conflict = true, n, ts, c, d, off, lost, conflict
	if id, ok := p.own(raw); ok {
		if k := len(b.held); k == 0 || b.held[k-1] != id {
			p.keeper.Hold(id)
			b.held = append(b.held, id)
		}
		it.data = raw
	} else {
		it.start = len(b.raw)
		b.raw = append(b.raw, raw...)
		it.end = len(b.raw)
	}
	b.size += len(raw)
	if len(b.items) >= p.maxItems || b.size >= p.maxRaw {
		p.flushLocked()
	}
}

// own reports which of the Keeper's buffers raw lies in.
func (p *ParallelStreamDecoder) own(raw []byte) (int, bool) {
	if p.keeper == nil {
		return 0, false
	}
	return p.keeper.Owner(raw)
}

// parSink is the embedded StreamDecoder's Sink: events are queued in
// order with the frames (which go through frame, never Frame).
type parSink struct{ p *ParallelStreamDecoder }

func (s parSink) Frame(*Frame)   { panic("decode: parallel frame not queued") }
func (s parSink) Event(e *Event) { s.p.event(e) }

// event queues a stream event (under p.mu).
func (p *ParallelStreamDecoder) event(e *Event) {
	it := p.item()
	if p.opts.Retain {
		it.evp = e
	} else {
		probs := append(it.ev.Problems, e.Problems...)
		it.ev = *e
		it.ev.Problems = probs
		if e.Stats != nil {
			it.stats, it.hasStats = *e.Stats, true
			it.ev.Stats = nil // set at delivery: items move as the batch grows
		}
	}
	if len(p.cur.items) >= p.maxItems {
		p.flushLocked()
	}
}

// flushLocked sends the current batch to the workers. p.mu is held.
func (p *ParallelStreamDecoder) flushLocked() {
	if p.cur == nil || len(p.cur.items) == 0 {
		return
	}
	p.cur.seq = p.seq
	p.seq++
	p.work <- p.cur // never blocks: the channel holds every batch
	p.cur = nil
}

// tick flushes a batch that has waited parMaxDelay (live captures).
func (p *ParallelStreamDecoder) tick() {
	defer p.ticker.Done()
	t := time.NewTicker(parMaxDelay)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			if p.cur != nil && now.Sub(p.cur.start) >= parMaxDelay {
				p.flushLocked()
			}
			p.mu.Unlock()
		}
	}
}

func (p *ParallelStreamDecoder) worker() {
	defer p.workers.Done()
	dec := NewDecoder(p.opts)
	dec.ackPool = &p.acks
	for b := range p.work {
		if p.claim(b) {
			// Its turn has come and no one delivers: decode and deliver
			// frame by frame, into the decoder's own buffers, which stay
			// in this core's cache (docs/architecture.md).
			p.streamed.Add(1)
			if p.panicked == nil {
				p.streamBatch(dec, b)
			}
			p.recycle(b)
			p.deliverPending()
			continue
		}
		p.slotted.Add(1)
		k, used := 0, 0
		for i := range b.items {
			it := &b.items[i]
			if !it.frame {
				continue
			}
			var fb *frameBufs
			if !p.opts.Retain {
				if k == len(b.slots) {
					b.slots = append(b.slots, new(frameBufs))
				}
				fb = b.slots[k]
				dec.fb = fb
				k++
			}
			f := b.decode(dec, it)
			it.f = f
			cost := bufCost(f, fb)
			if used+cost > p.budget {
				if fb != nil {
					// Buffers the frame does not use go first.
					if len(f.Entries) == 0 {
						fb.entries = nil
					}
					if !aliases(f.Uncompressed, fb.dbuf) {
						fb.dbuf = nil
					}
					cost = bufCost(f, fb)
				}
				if used+cost > p.budget {
					it.f, it.deferred = nil, true
					p.deferred.Add(1)
					if fb != nil {
						fb.dbuf, fb.entries = nil, nil
					}
					cost = 0
				}
			}
			used += cost
		}
		dec.fb = &dec.own
		p.finished(b)
	}
}

const entrySize = int(unsafe.Sizeof(Entry{}))

// dropIDs lets go of the message ids an ACK decoded into a batch slot
// holds, once delivered. Slots outnumber ACKs: each would otherwise keep
// its ACK's ids (a hundred allocations each) until another ACK lands in
// it, which on a bulk capture is never (12 MB of 35 MB live on bulk500).
func dropIDs(f *Frame) {
	if a := f.Command.GetAck(); a != nil {
		a.MessageId = nil
	}
}

// bufCost is the memory a decoded frame holds on to: its slot's buffers,
// or with Retain its own decompressed payload and entries.
func bufCost(f *Frame, fb *frameBufs) int {
	if fb != nil {
		return cap(fb.dbuf) + cap(fb.entries)*entrySize
	}
	n := len(f.Entries) * entrySize
	if !aliases(f.Uncompressed, f.Payload) {
		n += len(f.Uncompressed)
	}
	return n
}

// aliases reports whether a starts within b's capacity.
func aliases(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa >= pb && pa < pb+uintptr(cap(b))
}

// finished takes a decoded batch. Unless another worker is delivering,
// it delivers, in order, every finished batch whose turn has come; the
// Sink is so called by one goroutine at a time, in order, and a batch
// finished while one is delivering is delivered by it.
func (p *ParallelStreamDecoder) finished(b *pbatch) {
	p.dmu.Lock()
	p.pending[b.seq] = b
	if p.delivering {
		p.dmu.Unlock()
		return
	}
	p.delivering = true
	p.deliverLocked()
}

// claim reports whether b is the next batch to deliver and no one
// delivers: the caller then delivers it, and the finished batches after
// it (deliverPending).
func (p *ParallelStreamDecoder) claim(b *pbatch) bool {
	p.dmu.Lock()
	defer p.dmu.Unlock()
	if p.noStream || p.delivering || p.next != b.seq {
		return false
	}
	p.delivering = true
	p.next++
	return true
}

// deliverPending delivers, as the delivering worker, the finished batches
// whose turn has come, then stops delivering.
func (p *ParallelStreamDecoder) deliverPending() {
	p.dmu.Lock()
	p.deliverLocked()
}

// deliverLocked is deliverPending with p.dmu held; it returns with it
// released.
func (p *ParallelStreamDecoder) deliverLocked() {
	for {
		nb, ok := p.pending[p.next]
		if !ok {
			break
		}
		delete(p.pending, p.next)
		p.next++
		p.dmu.Unlock()
		if p.panicked == nil {
			p.deliverBatch(nb)
		}
		p.recycle(nb)
		p.dmu.Lock()
	}
	p.delivering = false
	p.dmu.Unlock()
}

// streamBatch decodes the frames of b with dec, into dec's own buffers,
// and hands each to the Sink before decoding the next.
func (p *ParallelStreamDecoder) streamBatch(dec *Decoder, b *pbatch) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked = r
		}
	}()
	dec.fb = &dec.own
	for i := range b.items {
		if it := &b.items[i]; it.frame {
			p.sink.Frame(b.decode(dec, it))
		} else {
			p.deliverEvent(it)
		}
	}
}

func (p *ParallelStreamDecoder) deliverBatch(b *pbatch) {
	defer func() {
		if r := recover(); r != nil {
			p.panicked = r
		}
	}()
	for i := range b.items {
		it := &b.items[i]
		switch {
		case it.deferred:
			if p.late == nil {
				p.late = NewDecoder(p.opts)
			}
			p.sink.Frame(b.decode(p.late, it))
		case it.frame:
			p.sink.Frame(it.f)
		default:
			p.deliverEvent(it)
		}
	}
}

// deliverEvent hands event item it to the Sink.
func (p *ParallelStreamDecoder) deliverEvent(it *pitem) {
	if it.evp != nil {
		p.sink.Event(it.evp)
		return
	}
	if it.hasStats {
		it.ev.Stats = &it.stats
	}
	p.sink.Event(&it.ev)
}

// decode decodes frame item it with dec.
func (b *pbatch) decode(dec *Decoder, it *pitem) *Frame {
	var f *Frame
	if it.lost > 0 {
		f = dec.DecodeDamaged(b.bytes(it), it.lost)
	} else {
		f = dec.Decode(b.bytes(it))
	}
	f.N, f.Time, f.Conn, f.Dir, f.Offset = it.n, it.ts, it.conn, it.dir, it.offset
	if it.conflict != "" {
		f.Problems = append(f.Problems, Problem{Code: CodeRetransmissionConflict, Detail: it.conflict})
	}
	return f
}

// recycle returns a delivered batch to the free list, releasing what
// would keep memory from an exceptional frame.
func (p *ParallelStreamDecoder) recycle(b *pbatch) {
	for i := range b.items {
		it := &b.items[i]
		if it.f != nil && !p.opts.Retain {
			dropIDs(it.f)
		}
		it.f, it.conn, it.evp, it.data = nil, nil, nil, nil
		it.ev.Conn, it.ev.Stats = nil, nil
	}
	b.items = b.items[:0]
	for _, fb := range b.slots {
		fb.giveBackAcks(&p.acks)
	}
	for _, id := range b.held {
		p.keeper.Release(id)
	}
	b.held, b.size = b.held[:0], 0
	if cap(b.raw) > parKeepRaw {
		b.raw = nil
	}
	b.raw = b.raw[:0]
	p.free <- b
	// The send readies the caller when it waits for a free batch, on this
	// goroutine's P (runnext), where an idle P steals it only after a
	// delay: yield, so the caller runs now and this goroutine moves.
	runtime.Gosched()
}
