package tui

import (
	"sync"
	"time"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track/stats"
)

// Row flags.
const (
	flagS2C      uint8 = 1 << iota // server to client
	flagProblem                    // the frame has problems (decode or conformance)
	flagRequest                    // the pair is this frame's response
	flagResponse                   // the pair is this frame's request
	flagNoRaw                      // no bytes were kept (frame too large)
	flagDamaged                    // the bytes kept are the start of a frame cut by a gap
)

// row is the index entry of one frame: 64 bytes, everything the timeline
// needs to place, color, pair and filter a row without decoding it. The
// frame's bytes are in the spill file at [spill, spill+size).
type row struct {
	time    int64 // capture time, Unix nanoseconds
	spill   int64 // offset of the frame's bytes in the spill file
	offset  int64 // Frame.Offset: position in its TCP stream
	latency int64 // request→response time in ns (on both rows of a pair)
	size    uint32
	pair    int32 // index of the paired frame + 1; 0: none
	entity  int32 // entity table index + 1; 0: none
	conn    int32 // reassembly.Conn.ID
	typ     int16 // pulsarapi.BaseCommand_Type
	flags   uint8
	nprob   uint8 // number of problems, saturated at 255
}

func (r row) dir() reassembly.Dir {
	if r.flags&flagS2C != 0 {
		return reassembly.ServerToClient
	}
	return reassembly.ClientToServer
}

func (r row) cmdType() pulsarapi.BaseCommand_Type { return pulsarapi.BaseCommand_Type(r.typ) }

// entityKind says whether an entity is a producer or a consumer.
type entityKind uint8

const (
	entityProducer entityKind = iota + 1
	entityConsumer
)

// entity is a producer or consumer the tracker named.
type entity struct {
	kind         entityKind
	conn         int
	id           uint64
	topic        string
	name         string
	subscription string
	subType      string
	frames       int
}

type entityKey struct {
	kind entityKind
	conn int
	id   uint64
}

// connInfo is what the connections view shows about one connection.
type connInfo struct {
	conn     *reassembly.Conn
	frames   int
	bytes    int64
	problems int
	closed   string // close reason, "" while open
	last     int64  // time of the last frame (ns)
}

// problemRec is one problem for the problems view: on a frame (frame ≥ 0)
// or on a stream (frame is the last frame before it, or -1).
type problemRec struct {
	frame   int32
	conn    int32
	time    int64
	problem decode.Problem
	onFrame bool
}

// Index is the compact, append-only index of every frame of a session. One
// goroutine (the decoding side) appends; any goroutine may read. Frame
// numbers are 1-based and equal the index position + 1.
type Index struct {
	mu       sync.RWMutex
	rows     []row
	conns    []connInfo // by connection ID - 1
	ents     []entity
	entByKey map[entityKey]int32
	problems []problemRec
	// frameProblems holds the problem list of every frame that has one.
	frameProblems map[int32][]decode.Problem
	start         int64 // time of the first frame
	bytes         int64 // bytes in frames
	nprob         int
	store         *spill
	// stats aggregates the statistics view's tables (track/stats), fed
	// under mu like the rest.
	stats *stats.Collector
}

func newIndex(store *spill) *Index {
	return &Index{store: store, entByKey: map[entityKey]int32{}, frameProblems: map[int32][]decode.Problem{}, stats: stats.New()}
}

// report returns the statistics so far (track/stats).
func (x *Index) report() *stats.Report {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats.Report()
}

// Len returns the number of frames indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.rows)
}

// at returns a copy of row i.
func (x *Index) at(i int) row {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rows[i]
}

// copyRows copies rows [from, from+len(dst)) into dst and returns how many.
func (x *Index) copyRows(dst []row, from int) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if from >= len(x.rows) {
		return 0
	}
	return copy(dst, x.rows[from:])
}

// startTime returns the capture time of the first frame.
func (x *Index) startTime() time.Time {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return time.Unix(0, x.start)
}

// totals returns frames, bytes in frames and problems.
func (x *Index) totals() (frames int, bytes int64, problems int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.rows), x.bytes, x.nprob
}

// problemsOf returns the problems of frame index i (a copy of the slice header).
func (x *Index) problemsOf(i int) []decode.Problem {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.frameProblems[int32(i)]
}

// entityAt returns entity e (1-based as stored in rows).
func (x *Index) entityAt(e int32) (entity, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if e <= 0 || int(e) > len(x.ents) {
		return entity{}, false
	}
	return x.ents[e-1], true
}

// connAt returns the connection with this ID.
func (x *Index) connAt(id int32) (connInfo, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if id <= 0 || int(id) > len(x.conns) || x.conns[id-1].conn == nil {
		return connInfo{}, false
	}
	return x.conns[id-1], true
}

// connCount returns the number of connections seen.
func (x *Index) connCount() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	for _, c := range x.conns {
		if c.conn != nil {
			n++
		}
	}
	return n
}

// connRange returns copies of connections [from, to) in order of their
// IDs (IDs with no connection are skipped).
func (x *Index) connRange(from, to int) []connInfo {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []connInfo
	k := 0
	for _, c := range x.conns {
		if c.conn == nil {
			continue
		}
		if k >= from && k < to {
			out = append(out, c)
		}
		k++
	}
	return out
}

// problemCount returns the number of problems listed.
func (x *Index) problemCount() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.problems)
}

// problemRange returns copies of problems [from, to).
func (x *Index) problemRange(from, to int) []problemRec {
	x.mu.RLock()
	defer x.mu.RUnlock()
	to = min(to, len(x.problems))
	if from >= to {
		return nil
	}
	return append([]problemRec(nil), x.problems[from:to]...)
}

// raw reads frame i's bytes into dst.
func (x *Index) raw(dst []byte, i int) ([]byte, error) {
	r := x.at(i)
	if r.flags&flagNoRaw != 0 {
		return dst[:0], nil
	}
	return x.store.read(dst, r.spill, int(r.size))
}
