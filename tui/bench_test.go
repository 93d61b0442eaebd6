package tui

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// The benchmarks run on a bulk capture named by PULSARSCOPE_BENCH_PCAP
// (≥ 1,000,000 frames: tools/trafficgen/capture.sh bulk 700 /tmp/bulk700.pcap):
//
//	PULSARSCOPE_BENCH_PCAP=/tmp/bulk700.pcap go test ./tui -run '^$' -bench 'FirstScreen|Key' -benchtime 200x
//	PULSARSCOPE_BENCH_PCAP=/tmp/bulk700.pcap go test ./tui -run '^$' -bench 'Index|FilterScan' -benchtime 1x
const benchEnv = "PULSARSCOPE_BENCH_PCAP"

func benchPcap(b *testing.B) string {
	p := os.Getenv(benchEnv)
	if p == "" {
		b.Skip(benchEnv + " is not set (a bulk capture, see bench_test.go)")
	}
	return p
}

var bulk struct {
	once sync.Once
	m    *Model
	err  error
}

// bulkModel loads the bulk capture once for the benchmarks that need it.
func bulkModel(b *testing.B) *Model {
	path := benchPcap(b)
	bulk.once.Do(func() {
		src := &fileSource{path: path}
		s, err := newSession(src, Options{})
		if err != nil {
			bulk.err = err
			return
		}
		if err := src.Run(context.Background(), s.collector.sink()); err != nil {
			bulk.err = err
			return
		}
		m := newModel(s, Options{NoColor: true})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		m.Update(loadDoneMsg{})
		bulk.m = m
	})
	if bulk.err != nil {
		b.Fatal(bulk.err)
	}
	return bulk.m
}

// BenchmarkFirstScreen measures the time from opening the capture to the
// first full screen of rows (decoding continues in the background).
func BenchmarkFirstScreen(b *testing.B) {
	path := benchPcap(b)
	for b.Loop() {
		src := &fileSource{path: path}
		s, err := newSession(src, Options{SpillDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { src.Run(ctx, s.collector.sink()); close(done) }()
		m := newModel(s, Options{NoColor: true})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		for s.index.Len() < 40 {
			time.Sleep(50 * time.Microsecond)
		}
		m.refresh()
		_ = m.render()
		cancel()
		<-done
		s.close()
	}
}

// BenchmarkIndex indexes the whole capture and reports the index's heap
// bytes per frame (rows, connection, entity and problem tables, tracker
// state) and frames per second.
func BenchmarkIndex(b *testing.B) {
	path := benchPcap(b)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		src := &fileSource{path: path}
		s, err := newSession(src, Options{SpillDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := src.Run(context.Background(), s.collector.sink()); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := s.index.Len()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heapB/frame")
		b.ReportMetric(float64(n), "frames")
		b.ReportMetric(float64(n)/el.Seconds(), "frames/s")
		b.ReportMetric(float64(s.store.bytes())/float64(n), "spillB/frame")
		runtime.KeepAlive(s)
		s.close()
	}
}

// benchKey measures Update+View for one key press on the loaded bulk capture.
func benchKey(b *testing.B, setup func(m *Model), keys ...string) {
	m := bulkModel(b)
	if n := m.x.Len(); n < 1_000_000 {
		b.Logf("only %d frames in %s (want ≥ 1,000,000)", n, os.Getenv(benchEnv))
	}
	m.setFilter(nil)
	m.detailOpen = false
	m.moveTo(m.view.len() / 2)
	if setup != nil {
		setup(m)
	}
	msgs := make([]tea.Msg, len(keys))
	for i, k := range keys {
		msgs[i] = keyMsg(k)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		m.Update(msgs[i%len(msgs)])
		_ = m.View()
		i++
	}
	b.ReportMetric(float64(m.x.Len()), "frames")
}

func BenchmarkKeyDown(b *testing.B) { benchKey(b, nil, "j") }

// BenchmarkKeyPageDown scrolls a new page of rows in each time (no cache hits).
func BenchmarkKeyPageDown(b *testing.B) { benchKey(b, nil, "pgdown") }

func BenchmarkKeyEnd(b *testing.B) { benchKey(b, nil, "G", "g") }

// BenchmarkKeyDownDetail moves with the detail and hex panes open: each
// key decodes and builds the tree of a new frame.
func BenchmarkKeyDownDetail(b *testing.B) {
	benchKey(b, func(m *Model) { press(m, "enter") }, "j")
}

// BenchmarkFilterScan runs a display filter over every frame.
func BenchmarkFilterScan(b *testing.B) {
	m := bulkModel(b)
	for b.Loop() {
		start := time.Now()
		m.setFilter(nil)
		cmd := m.setFilter(filterExpr(`type == "SEND_RECEIPT" && latency_ms > 1`))
		for cmd != nil {
			_, cmd = m.Update(cmd())
		}
		b.ReportMetric(float64(m.view.len()), "matched")
		b.ReportMetric(time.Since(start).Seconds(), "s/scan")
	}
}
