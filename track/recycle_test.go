package track

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestRecycleEquivalence checks that recycling pendings changes nothing:
// every capture, tracked with recycling on and off, with small limits
// (eviction paths), a request timeout (expiry paths) and in two passes,
// gives the same frames, annotations and findings.
func TestRecycleEquivalence(t *testing.T) {
	files, _ := filepath.Glob("../testdata/pcaps/*.pcap")
	ng, _ := filepath.Glob("../testdata/pcaps/*.pcapng")
	files = append(files, ng...)
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	defer func() { recycle = true }()
	variants := []Options{
		{},
		{MaxPending: 3, MaxDelivered: 4},
		{RequestTimeout: time.Millisecond, KeepAlive: time.Millisecond},
	}
	for _, path := range files {
		name := filepath.Base(path)
		for i, opts := range variants {
			var dumps [2]string
			for j, on := range []bool{true, false} {
				recycle = on
				first := opts
				first.Record = true
				_, tr1 := runPcap(t, name, first)
				second := opts
				second.Results = tr1.Results()
				col, _ := runPcap(t, name, second)
				one, _ := runPcap(t, name, opts)
				dumps[j] = dump(col) + dump(one)
			}
			if dumps[0] != dumps[1] {
				t.Errorf("%s, options %d: recycling changes the result", name, i)
			}
		}
	}
}

func dump(c *collector) string {
	s := ""
	for _, f := range c.frames {
		s += fmt.Sprintf("%d %d %v %s %v %v %s %v %v %d %v\n", f.n, f.conn, f.dir, f.typ, deref(f.request), deref(f.response),
			f.topic, f.acks, f.ackedBy, f.redeliv, f.problems)
	}
	for _, fd := range c.findings {
		s += fmt.Sprintf("finding %v %d %v %d %v %v\n", fd.Time, fd.Conn.ID, fd.Dir, fd.Frame, fd.Type, fd.Problem)
	}
	return s
}

func deref(l *Link) any {
	if l == nil {
		return nil
	}
	return *l
}
