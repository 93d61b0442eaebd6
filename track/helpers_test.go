package track

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// seen is what the test sink keeps of one tracked frame.
type seen struct {
	n        int
	conn     int
	dir      reassembly.Dir
	typ      string
	request  *Link
	response *Link
	topic    string
	acks     []int
	ackedBy  []int
	redeliv  int
	problems []decode.Problem
}

// collector is a Sink that copies what it is given.
type collector struct {
	frames   []seen
	findings []Finding
	events   int
}

func (c *collector) Frame(f *decode.Frame, info *Info) {
	s := seen{n: f.N, conn: f.Conn.ID, dir: f.Dir, typ: f.Type.String(), topic: info.Topic(),
		acks: append([]int(nil), info.Acks...), ackedBy: append([]int(nil), info.AckedBy...),
		redeliv: info.RedeliveryOf, problems: append([]decode.Problem(nil), info.Problems...)}
	if info.Request != nil {
		l := *info.Request
		s.request = &l
	}
	if info.Response != nil {
		l := *info.Response
		s.response = &l
	}
	c.frames = append(c.frames, s)
}

func (c *collector) Event(e *decode.Event) { c.events++ }

func (c *collector) Finding(fd *Finding) { c.findings = append(c.findings, *fd) }

// codes counts the conformance problems by code, on frames and findings.
func (c *collector) codes() map[string]int {
	m := map[string]int{}
	for _, f := range c.frames {
		for _, p := range f.problems {
			m[p.Code]++
		}
	}
	for _, f := range c.findings {
		m[f.Problem.Code]++
	}
	return m
}

// runPcap decodes and tracks one capture of testdata/pcaps.
func runPcap(t testing.TB, name string, opts Options, extraPorts ...uint16) (*collector, *Tracker) {
	t.Helper()
	src, err := capture.Open(filepath.Join("../testdata/pcaps", name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	col := &collector{}
	tr := New(col, opts)
	sd := decode.NewStreamDecoder(tr, decode.Options{})
	asm := reassembly.New(sd, reassembly.Options{Ports: append([]uint16{6650}, extraPorts...)})
	if err := asm.Run(context.Background(), src); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return col, tr
}

// expectation is the part of a *.expect.json file tracking is checked against.
type expectation struct {
	File           string                    `json:"file"`
	Base           string                    `json:"base"`
	Frames         map[string]map[string]int `json:"frames"`
	Answered       map[string]int            `json:"answered"`
	ExpectProblems []string                  `json:"expect_problems"`
	NeedsFlags     []string                  `json:"needs_flags"`
	Faults         []struct {
		Kind string `json:"kind"`
	} `json:"faults"`
	Notes []string `json:"notes"`
}

func loadExpectations(t testing.TB) []expectation {
	t.Helper()
	paths, err := filepath.Glob("../testdata/pcaps/*.expect.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no expectations: %v", err)
	}
	var out []expectation
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var e expectation
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, e)
	}
	return out
}
