package diff

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
)

// transcriptSeeds: the committed golden transcript and the transcripts of
// a few lab captures.
func transcriptSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	if b, err := os.ReadFile("../testdata/diff/basic.golden.json"); err == nil {
		seeds = append(seeds, b)
	}
	for _, name := range []string{"basic-producer-error.pcap", "basic-batching.pcap", "basic-slow-lookup.pcap"} {
		t, err := ReadCapture(context.Background(), filepath.Join("../testdata/diff", name), DefaultRules(), false)
		if err != nil {
			tb.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := t.WriteTo(&buf); err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, buf.Bytes())
	}
	return seeds
}

// FuzzReadTranscript feeds arbitrary JSON to the transcript loader (the
// untrusted input of 'diff BASELINE CANDIDATE'): no panic; whatever loads
// writes back stably, compares equal to itself, and renders.
func FuzzReadTranscript(f *testing.F) {
	for _, s := range transcriptSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"format":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTranscript(bytes.NewReader(data))
		if err != nil {
			return
		}
		var first, second bytes.Buffer
		if _, err := tr.WriteTo(&first); err != nil {
			t.Fatal(err)
		}
		back, err := ReadTranscript(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("written transcript does not load: %v\n%s", err, first.String())
		}
		if _, err := back.WriteTo(&second); err != nil {
			t.Fatal(err)
		}
		if first.String() != second.String() {
			t.Fatalf("not stable:\n%s\n---\n%s", first.String(), second.String())
		}
		res, err := Compare(tr, back, Options{LatencyThreshold: 0.5})
		if err != nil {
			return
		}
		if !res.Same() {
			t.Fatalf("transcript differs from its own round trip")
		}
		_ = res.WriteJSON(io.Discard)
		_ = res.WriteText(io.Discard, TextOptions{})
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzReadTranscript
// (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	for _, s := range transcriptSeeds(t) {
		if err := fuzzseed.Write("testdata/fuzz/FuzzReadTranscript", s); err != nil {
			t.Fatal(err)
		}
	}
}
