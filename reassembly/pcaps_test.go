package reassembly

import (
	"context"
	"encoding/json"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
)

// countingHandler totals bytes and gaps per connection and direction.
type countingHandler struct {
	conns  []*Conn
	data   map[int]*[2]int64
	lost   map[int]*[2]int64
	reason map[int]CloseReason
}

func (h *countingHandler) Open(c *Conn) {
	h.conns = append(h.conns, c)
	h.data[c.ID], h.lost[c.ID] = &[2]int64{}, &[2]int64{}
}
func (h *countingHandler) Data(c *Conn, d Dir, b []byte, _ time_) { h.data[c.ID][d] += int64(len(b)) }
func (h *countingHandler) Gap(c *Conn, d Dir, n int64, _ time_)   { h.lost[c.ID][d] += n }
func (h *countingHandler) Close(c *Conn, r CloseReason, _ time_)  { h.reason[c.ID] = r }

// halfFlow is an independent account of one direction: the byte ranges
// its segments cover, relative to the stream start.
type halfFlow struct {
	start   uint32
	started bool
	covered map[uint32]bool // byte offsets (small captures only)
	maxEnd  uint32
}

// TestSharedPcaps runs capture → reassembly over the project's real Pulsar
// captures (testdata/pcaps, made by another stage's tools) and checks, per
// connection and direction, that delivered bytes equal the distinct bytes
// captured and that delivered + lost equals the sequence span.
func TestSharedPcaps(t *testing.T) {
	files, _ := filepath.Glob("../testdata/pcaps/*.pcap*")
	if len(files) == 0 {
		t.Skip("no shared captures")
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".json") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			h := &countingHandler{data: map[int]*[2]int64{}, lost: map[int]*[2]int64{}, reason: map[int]CloseReason{}}
			a := New(h, Options{Detect: plausible})
			src, err := capture.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			flows := map[[2]netip.AddrPort]*halfFlow{}
			for {
				p, err := src.Next(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				k := [2]netip.AddrPort{addrPort(p.NetFlow.Src(), p.TCP.SrcPort), addrPort(p.NetFlow.Dst(), p.TCP.DstPort)}
				hf := flows[k]
				if hf == nil {
					hf = &halfFlow{covered: map[uint32]bool{}}
					flows[k] = hf
				}
				if !hf.started && (p.TCP.SYN || len(p.TCP.Payload) > 0) {
					hf.started, hf.start = true, p.TCP.Seq
					if p.TCP.SYN {
						hf.start++
					}
				}
				for i := range p.TCP.Payload {
					off := p.TCP.Seq + uint32(i) - hf.start
					if off < 1<<30 {
						hf.covered[off] = true
						if off+1 > hf.maxEnd {
							hf.maxEnd = off + 1
						}
					}
				}
				a.Assemble(p.NetFlow, p.TCP, p.Time)
			}
			a.FlushAll()
			var exp struct{ Connections int }
			if data, err := os.ReadFile(strings.TrimSuffix(f, ".pcap") + ".expect.json"); err == nil {
				json.Unmarshal(data, &exp)
			} else if data, err := os.ReadFile(f + ".expect.json"); err == nil {
				json.Unmarshal(data, &exp)
			}
			if exp.Connections != 0 && len(h.conns) != exp.Connections {
				t.Errorf("%d connections, expect.json says %d", len(h.conns), exp.Connections)
			}
			var lines []string
			for _, c := range h.conns {
				for d, k := range [][2]netip.AddrPort{{c.Client, c.Server}, {c.Server, c.Client}} {
					hf := flows[k]
					if hf == nil {
						continue
					}
					got, lost := h.data[c.ID][d], h.lost[c.ID][d]
					if got != int64(len(hf.covered)) || got+lost != int64(hf.maxEnd) {
						t.Errorf("conn %d %s: delivered %d + lost %d; captured %d distinct bytes over %d", c.ID, Dir(d), got, lost, len(hf.covered), hf.maxEnd)
					}
					lines = append(lines, sprintf("conn %d %s: %d bytes, %d lost, close %s", c.ID, Dir(d), got, lost, h.reason[c.ID]))
				}
			}
			sort.Strings(lines)
			t.Log(strings.Join(lines, "\n"))
		})
	}
}
