package diff

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// Load reads one side of a comparison: a transcript (JSON) or a capture
// (pcap, pcapng, gzip), told apart by content. A capture is decoded with
// default pipeline settings (port 6650) and recorded under opts's rules.
func Load(ctx context.Context, path string, opts Options) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if IsTranscript(br) {
		t, err := ReadTranscript(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t, nil
	}
	rules, err := Resolve(opts.Ignore, opts.Keep)
	if err != nil {
		return nil, err
	}
	t, err := ReadCapture(ctx, path, rules, opts.ShowSecrets)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// IsTranscript reports whether r (not consumed) starts like a JSON
// document rather than a capture.
func IsTranscript(r *bufio.Reader) bool {
	head, _ := r.Peek(64)
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '{'
}

// ReadCapture decodes a capture file and records its transcript under
// rules: capture → reassembly (port 6650) → decode → track → Recorder,
// the stages 'pulsarscope read' uses with default settings.
func ReadCapture(ctx context.Context, path string, rules map[string]Mode, showSecrets bool) (*Transcript, error) {
	src, err := capture.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer src.Close()
	rec := NewRecorder(rules, showSecrets)
	// Summarised batch entries need no entry metadata decoded.
	opts := decode.Options{LazyEntryMetadata: rules[PseudoEntries] == Summarise}
	sd := decode.NewStreamDecoder(track.New(rec, track.Options{}), opts)
	if err := reassembly.New(sd, reassembly.Options{}).Run(ctx, src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec.Transcript(), nil
}

// WriteFile writes t to path atomically (a temporary file renamed over it),
// mode 0644, or 0600 when t holds credentials (SecretsShown).
func WriteFile(path string, t *Transcript) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".transcript-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := t.WriteTo(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// A baseline is shared like any file; one holding credentials
	// (--show-secrets) is readable by its owner only.
	mode := os.FileMode(0o644)
	if t.SecretsShown {
		mode = 0o600
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
