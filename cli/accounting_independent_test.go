package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// eachSegment calls fn for every TCP segment of the capture at path (pcap
// or pcapng), decoded with pcapgo and gopacket's layers alone (not the code
// under test), with its direction as "src>dst" and its capture time.
func eachSegment(tb testing.TB, path string, fn func(key string, tcp *layers.TCP, ts time.Time)) {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var next func() ([]byte, gopacket.CaptureInfo, error)
	var lt layers.LinkType
	if strings.HasSuffix(path, ".pcapng") {
		r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			tb.Fatal(err)
		}
		next, lt = r.ReadPacketData, r.LinkType()
	} else {
		r, err := pcapgo.NewReader(f)
		if err != nil {
			tb.Fatal(err)
		}
		next, lt = r.ReadPacketData, r.LinkType()
	}
	for {
		data, ci, err := next()
		if err == io.EOF {
			return
		}
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		p := gopacket.NewPacket(data, lt, gopacket.NoCopy)
		tcp, ok := p.TransportLayer().(*layers.TCP)
		if !ok || p.NetworkLayer() == nil {
			continue
		}
		src, dst := p.NetworkLayer().NetworkFlow().Endpoints()
		sa, _ := netip.AddrFromSlice(src.Raw())
		da, _ := netip.AddrFromSlice(dst.Raw())
		key := netip.AddrPortFrom(sa.Unmap(), uint16(tcp.SrcPort)).String() + ">" + netip.AddrPortFrom(da.Unmap(), uint16(tcp.DstPort)).String()
		fn(key, tcp, ci.Timestamp)
	}
}

// capturedPayload counts the TCP payload bytes a capture holds per
// connection direction ("src>dst"): the union of the sequence ranges its
// segments carry (a retransmission or duplicate counted once), with
// eachSegment.
func capturedPayload(tb testing.TB, path string) map[string]int64 {
	type span struct{ start, end uint32 } // relative to the direction's first sequence number
	type dir struct {
		base  uint32
		spans []span
	}
	dirs := map[string]*dir{}
	eachSegment(tb, path, func(key string, tcp *layers.TCP, _ time.Time) {
		d := dirs[key]
		seq := tcp.Seq
		if tcp.SYN {
			seq++ // the SYN takes a sequence number, not a payload byte
		}
		if d == nil {
			d = &dir{base: seq}
			dirs[key] = d
		}
		if n := uint32(len(tcp.Payload)); n > 0 {
			s := seq - d.base
			if int32(s) < 0 { // before the first segment seen (reordered): rebase
				for i := range d.spans {
					d.spans[i].start += -s
					d.spans[i].end += -s
				}
				d.base, s = seq, 0
			}
			d.spans = append(d.spans, span{s, s + n})
		}
	})
	out := map[string]int64{}
	for key, d := range dirs {
		sort.Slice(d.spans, func(i, j int) bool { return d.spans[i].start < d.spans[j].start })
		var total int64
		var end uint32
		for _, s := range d.spans {
			if s.start < end {
				s.start = end
			}
			if s.end > s.start {
				total += int64(s.end - s.start)
				end = s.end
			}
		}
		out[key] = total
	}
	return out
}

// TestAccountingIndependent: on every committed capture, the TCP payload
// pulsarscope reports per connection direction (bytes seen, on the close
// event) equals what the capture holds, counted without pulsarscope's
// reader or reassembler: a reassembler that dropped bytes (a second
// connection on the same 4-tuple, fragments, a conflicting copy) would fail
// it, where the balance against its own count would not.
func TestAccountingIndependent(t *testing.T) {
	files := shippedCaptures(t)
	n := 0
	for _, f := range files {
		n++
		checkAccountingIndependent(t, f)
	}
	if n < 20 {
		t.Fatalf("only %d captures", n)
	}
}

// checkAccountingIndependent compares, for capture f, the payload bytes
// pulsarscope saw per connection direction with capturedPayload.
func checkAccountingIndependent(t *testing.T, f string) {
	t.Helper()
	want := capturedPayload(t, f)
	out, errOut, code := run(t, "read", "-o", "json", "--events", "--port", "16650", f)
	if code != ExitOK && code != ExitProblems && code != ExitInput { // a cut capture ends in an input error
		t.Fatalf("%s: exit %d: %s", f, code, errOut)
	}
	got := map[string]int64{}
	for _, line := range ndjsonLines(out) {
		var r struct {
			Event      string `json:"event"`
			Src        string `json:"src"`
			Dst        string `json:"dst"`
			Accounting map[string]struct {
				Seen int64 `json:"seen"`
			} `json:"accounting"`
		}
		if json.Unmarshal(line, &r) != nil || r.Event != "close" {
			continue
		}
		got[r.Src+">"+r.Dst] += r.Accounting["c2s"].Seen
		got[r.Dst+">"+r.Src] += r.Accounting["s2c"].Seen
	}
	for key, w := range want {
		if w > 0 && got[key] != w {
			t.Errorf("%s: %s: pulsarscope saw %d payload bytes, the capture holds %d", filepath.Base(f), key, got[key], w)
		}
	}
	for key, g := range got {
		if g != want[key] {
			t.Errorf("%s: %s: pulsarscope saw %d payload bytes, the capture holds %d", filepath.Base(f), key, g, want[key])
		}
	}
}

// segmentTimes returns, per direction ("src>dst") and per connection on
// it in order (a new SYN with another sequence number starts the next:
// port reuse), the captured segments' payload ranges relative to the
// connection's first sequence number (after the SYN) and their capture
// times, with eachSegment.
func segmentTimes(tb testing.TB, path string) map[string][][]segTime {
	type inst struct {
		base uint32
		syn  bool
	}
	cur := map[string]*inst{}
	out := map[string][][]segTime{}
	pkt := -1
	eachSegment(tb, path, func(key string, tcp *layers.TCP, ts time.Time) {
		pkt++
		seq := tcp.Seq
		if tcp.SYN {
			seq++
		}
		in := cur[key]
		if in == nil || tcp.SYN && (!in.syn || in.base != seq) {
			in = &inst{base: seq, syn: tcp.SYN}
			cur[key] = in
			out[key] = append(out[key], nil)
		}
		if n := len(tcp.Payload); n > 0 {
			start := int64(seq - in.base)
			k := len(out[key]) - 1
			out[key][k] = append(out[key][k], segTime{start, start + int64(n), ts.UnixNano(), pkt})
		}
	})
	return out
}

type segTime struct {
	start, end int64
	ts         int64 // ns
	pkt        int   // the segment's place in the capture (0-based)
}

// TestFrameTimesAfterLoss: in every committed capture and fault variant
// (lost, moved, duplicated, conflicting and cut segments, reused ports),
// every frame carries the capture time of the packet that brought its
// last byte (the first copy of it), found with pcapgo alone: frames after
// a hole keep their own packets' times, not the time the hole was given
// up. A frame cut by a gap carries the time of its last captured byte.
// And frames are numbered in capture order: the packets that complete
// them come in the order of their numbers.
func TestFrameTimesAfterLoss(t *testing.T) {
	checkedFiles := 0
	for _, exp := range loadExpectations(t) {
		f := filepath.Join("../testdata/pcaps", exp.File)
		segs := segmentTimes(t, f)
		args := exp.args("json")
		out, errOut, code := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", f, code, errOut)
		}
		instance := map[int]int{} // conn → its index among those on its 4-tuple
		perKey := map[string]int{}
		checked := 0
		lastPkt, lastN := -1, 0 // the packet that completed the frame before
		// A frame is complete once the frames before it in its stream
		// are: the packet completing it is the latest of theirs and its own.
		streamPkt := map[string]int{}
		for _, line := range ndjsonLines(out) {
			var r struct {
				N       int       `json:"n"`
				Event   string    `json:"event"`
				Conn    int       `json:"conn"`
				Ts      time.Time `json:"ts"`
				Src     string    `json:"src"`
				Dst     string    `json:"dst"`
				Offset  int64     `json:"offset"`
				Size    int64     `json:"size"`
				Missing int64     `json:"missing"`
			}
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			if r.Event == "open" {
				instance[r.Conn] = perKey[r.Src+">"+r.Dst]
				perKey[r.Src+">"+r.Dst]++
				continue
			}
			if r.N == 0 {
				continue
			}
			key := r.Src + ">" + r.Dst
			if _, ok := instance[r.Conn]; !ok {
				t.Fatalf("%s: frame %d of connection %d before its open event", exp.File, r.N, r.Conn)
			}
			var conn []segTime
			if i := instance[r.Conn]; i < len(segs[key]) {
				conn = segs[key][i]
			}
			last := r.Offset + r.Size - 1
			var want int64 = -1
			pkt := -1
			var latest segTime
			for _, sg := range conn {
				if sg.start <= last && last < sg.end {
					want, pkt = sg.ts, sg.pkt
					break
				}
				if r.Missing > 0 && sg.start < last && sg.end > r.Offset && sg.end > latest.end {
					latest = sg
				}
			}
			if want < 0 && r.Missing > 0 && latest.end > 0 {
				want, pkt = latest.ts, latest.pkt // its last byte was not captured: its last captured one
			}
			sk := fmt.Sprint(r.Conn, key)
			pkt = max(pkt, streamPkt[sk])
			streamPkt[sk] = pkt
			if pkt < lastPkt {
				t.Errorf("%s: frame %d, completed by packet %d, is numbered after frame %d, completed by packet %d: not in capture order", exp.File, r.N, pkt+1, lastN, lastPkt+1)
			}
			lastPkt, lastN = max(lastPkt, pkt), r.N
			if want < 0 {
				t.Fatalf("%s: frame %d: no captured segment holds byte %d", exp.File, r.N, last)
			}
			if r.Ts.UnixNano() != want {
				t.Errorf("%s: frame %d at %s, its last byte came at %s", exp.File, r.N, r.Ts.Format(time.RFC3339Nano), time.Unix(0, want).UTC().Format(time.RFC3339Nano))
			}
			checked++
		}
		if checked == 0 {
			t.Errorf("%s: no frames checked", exp.File)
		}
		checkedFiles++
	}
	if checkedFiles < 35 {
		t.Errorf("only %d captures checked", checkedFiles)
	}
}
