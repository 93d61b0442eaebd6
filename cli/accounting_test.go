package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// The accounting invariant: per stream, bytes in decoded frames + bytes
// lost in gaps + bytes skipped while resynchronising + truncated tail
// (+ ignored TLS bytes) = the TCP payload bytes the reassembler counted
// for it (reassembly.Conn.Payload), on every lab capture, fault variant
// and hostile capture, with default and with tight limits.

type closeRecorder struct {
	t      *testing.T
	name   string
	closed []decode.Event
	conns  []*reassembly.Conn
}

func (r *closeRecorder) Frame(*decode.Frame) {}
func (r *closeRecorder) Event(e *decode.Event) {
	if e.Kind == decode.EventClose {
		ev := *e
		st := *e.Stats
		ev.Stats = &st
		r.closed = append(r.closed, ev)
		r.conns = append(r.conns, e.Conn)
	}
}

func hostileVariants(t *testing.T) map[string][]byte {
	out := map[string][]byte{}
	v, fr := baseConv(t, 1000)
	junk := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
	v.send(0, append(junk, bytes.Repeat([]byte{0xA5}, 5000)...))
	v.rest(fr)
	v.fin()
	out["hostile-4gib"] = writePcap(t, v.recs, 262144)

	v, fr = baseConv(t, 0xFFFFFFFF-300)
	v.mss = 100
	v.rest(fr)
	v.fin()
	out["hostile-wrap"] = writePcap(t, v.recs, 262144)

	v, fr = baseConv(t, 1000)
	md := &pulsarapi.MessageMetadata{ProducerName: ptr("big"), SequenceId: ptr(uint64(1)), PublishTime: ptr(uint64(1764400000000))}
	first := len(v.recs)
	v.send(0, payloadFrame(t, md, bytes.Repeat([]byte("y"), 100<<10)))
	v.rest(fr)
	v.fin()
	v.recs = append(v.recs[:first+1], v.recs[first+2:]...)
	out["hostile-hole"] = writePcap(t, v.recs, 262144)

	v, fr = baseConv(t, 1000)
	v.rest(fr)
	v.fin()
	for i := range v.recs {
		if len(v.recs[i].data) > 96 {
			v.recs[i].origLen, v.recs[i].data = len(v.recs[i].data), v.recs[i].data[:96]
		}
	}
	out["hostile-snaplen"] = writePcap(t, v.recs, 96)

	v, _ = baseConv(t, 1000)
	v.send(0, payloadFrame(t, md, bytes.Repeat([]byte("x"), 20000)))
	data := writePcap(t, v.recs, 262144)
	out["hostile-cut"] = data[:len(data)-5000]

	v, fr = baseConv(t, 1000)
	v.rest(fr)
	for i := len(v.recs) / 2; i < len(v.recs); i++ {
		v.recs[i].ts = v.recs[i].ts.Add(-time.Hour)
	}
	out["hostile-backwards"] = writePcap(t, v.recs, 262144)
	return out
}

func TestAccountingInvariant(t *testing.T) {
	var files []string
	for _, g := range []string{"../testdata/pcaps/*.pcap*", "../testdata/diff/*.pcap", "../capture/testdata/*.pcap*"} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			if filepath.Ext(f) != ".json" {
				files = append(files, f)
			}
		}
	}
	dir := t.TempDir()
	for name, data := range hostileVariants(t) {
		p := filepath.Join(dir, name+".pcap")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	limits := map[string]reassembly.Options{
		"default": {},
		"tight":   {MaxConns: 1, MaxBufferedBytesPerConn: 1, MaxBufferedBytesTotal: 1, GapTimeout: time.Millisecond, IdleTimeout: 100 * time.Millisecond, TLSPorts: []uint16{6651, 6650}},
		"detect":  {Detect: func(b []byte) bool { v, _ := decode.CheckFrame(b, 0); return v == decode.Likely }, Ports: []uint16{1}},
	}
	streams := 0
	for _, f := range files {
		for ln, lo := range limits {
			for _, parallel := range []bool{false, true} {
				src, err := capture.Open(f)
				if err != nil {
					t.Fatal(err)
				}
				r := &closeRecorder{t: t, name: f}
				var h reassembly.Handler
				var wait func()
				if parallel {
					p := decode.NewParallelStreamDecoder(r, decode.Options{}, 2)
					h, wait = p, p.Wait
				} else {
					h, wait = decode.NewStreamDecoder(r, decode.Options{}), func() {}
				}
				asm := reassembly.New(h, lo)
				_ = asm.Run(context.Background(), src) // the cut capture ends in an error, after flushing
				wait()
				src.Close()
				st := asm.Stats()
				var sum int64
				for i, e := range r.closed {
					c := r.conns[i]
					for d, s := range e.Stats {
						streams++
						got := s.InFrames + s.Lost + s.Skipped + s.Truncated + s.Ignored
						if !s.Balanced() || got != c.Payload[d] {
							t.Errorf("%s (%s, parallel=%v) conn %d %s: %s; frames+lost+skipped+truncated+ignored = %d, TCP payload %d",
								filepath.Base(f), ln, parallel, c.ID, reassembly.Dir(d), s, got, c.Payload[d])
						}
						sum += c.Payload[d]
					}
				}
				if want := st.BytesDelivered + st.LostBytes + st.TLSBytes; sum != want {
					t.Errorf("%s (%s): streams' TCP payload %d, reassembler delivered+lost+tls %d", filepath.Base(f), ln, sum, want)
				}
			}
		}
	}
	t.Logf("%d captures, %d stream checks", len(files), streams)
}

// TestStatsAccountingColumn: 'stats' shows the TCP payload column and a
// check mark for every stream of every lab capture.
func TestStatsAccountingColumn(t *testing.T) {
	files := shippedCaptures(t)
	for _, f := range files {
		var out, errb bytes.Buffer
		if code := Main([]string{"stats", f}, nil, &out, &errb); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", f, code, errb.String())
		}
		s := out.String()
		if !bytes.Contains(out.Bytes(), []byte("tcp payload")) || bytes.Contains(out.Bytes(), []byte("✗")) || (bytes.Contains(out.Bytes(), []byte("\n#1 ")) && !bytes.Contains(out.Bytes(), []byte("✓"))) {
			i := bytes.Index(out.Bytes(), []byte("== Byte accounting"))
			t.Errorf("%s: byte accounting:\n%s", f, s[max(i, 0):])
		}
	}
}
