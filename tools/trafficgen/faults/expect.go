package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Expect is the content of a fault variant's NAME.expect.json: what the
// variant is, how it was made and what pulsarscope must report on it.
type Expect struct {
	File    string
	Base    string
	Command string
	Entries []*Entry
	// BaseExpect is the base capture's .expect.json (nil when absent);
	// its frame and connection counts are carried over.
	BaseExpect []byte
}

// isCountKey reports whether a key of the base's expect file is a count of
// what the capture holds (frames, connections), carried over to variants.
func isCountKey(k string) bool {
	switch k {
	case "frames", "frames_total", "connections", "payload_frames", "checksummed_payload_frames",
		"broker_entry_metadata_frames", "batch_entries", "chunk_frames":
		return true
	}
	return false
}

// adjustCount returns the base's count key minus what the destroyed frames
// take away, and false when that cannot be known.
func adjustCount(key string, val any, destroyed []FrameRef) (any, bool) {
	count := func(pred func(FrameRef) bool) int64 {
		var n int64
		for _, d := range destroyed {
			if pred(d) {
				n++
			}
		}
		return n
	}
	if m, ok := val.(map[string]any); ok && key == "frames" {
		return adjustFrames(m, destroyed)
	}
	num, ok := val.(json.Number)
	if !ok {
		return nil, false
	}
	n, err := num.Int64()
	if err != nil {
		return nil, false
	}
	switch key {
	case "connections":
		return n, true
	case "frames", "frames_total":
		return n - int64(len(destroyed)), true
	case "payload_frames":
		return n - count(func(d FrameRef) bool { return d.payload }), true
	case "checksummed_payload_frames":
		return n - count(func(d FrameRef) bool { return d.checksum }), true
	case "broker_entry_metadata_frames":
		return n - count(func(d FrameRef) bool { return d.bem }), true
	case "chunk_frames":
		return n - count(func(d FrameRef) bool { return d.chunk }), true
	case "batch_entries":
		for _, d := range destroyed {
			n -= int64(d.batch)
		}
		return n, true
	}
	return nil, false
}

// adjustFrames subtracts the destroyed frames from a frame count by type,
// either flat ({"SEND": n}) or by direction ({"c2s": {"SEND": n}}).
func adjustFrames(m map[string]any, destroyed []FrameRef) (any, bool) {
	out := map[string]any{}
	byDir := false
	for k, v := range m {
		switch v := v.(type) {
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return nil, false
			}
			out[k] = n
		case map[string]any:
			byDir = true
			inner := map[string]any{}
			for t, c := range v {
				num, ok := c.(json.Number)
				if !ok {
					return nil, false
				}
				n, err := num.Int64()
				if err != nil {
					return nil, false
				}
				inner[t] = n
			}
			out[k] = inner
		default:
			return nil, false
		}
	}
	for _, d := range destroyed {
		counts := out
		if byDir {
			inner, ok := out[d.Dir].(map[string]any)
			if !ok {
				return nil, false
			}
			counts = inner
		}
		n, ok := counts[d.Type].(int64)
		if !ok || n < 1 {
			return nil, false
		}
		if n == 1 {
			delete(counts, d.Type)
		} else {
			counts[d.Type] = n - 1
		}
	}
	return out, true
}

// kv is one key of a JSON object, in order.
type kv struct {
	key string
	val any
}

// orderedKeys decodes the top-level keys of a JSON object in order.
func orderedKeys(b []byte) ([]kv, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("base expect: not a JSON object")
	}
	var out []kv
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("base expect: %w", err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("base expect key %v: %w", t, err)
		}
		out = append(out, kv{t.(string), v})
	}
	return out, nil
}

// MarshalJSON writes the expect file with a stable key order: file, base,
// command, needs_flags, expect_problems, faults, then the carried-over counts.
func (x *Expect) MarshalJSON() ([]byte, error) {
	fields := []kv{{"file", x.File}, {"base", x.Base}, {"command", x.Command}}
	var flags []string
	var destroyed []FrameRef
	for _, e := range x.Entries {
		flags = append(flags, e.NeedsFlags...)
		destroyed = append(destroyed, e.FramesDestroyed...)
	}
	if len(flags) > 0 {
		fields = append(fields, kv{"needs_flags", flags})
	}
	fields = append(fields, kv{"expect_problems", Problems(x.Entries)}, kv{"faults", x.Entries})
	if x.BaseExpect != nil {
		base, err := orderedKeys(x.BaseExpect)
		if err != nil {
			return nil, err
		}
		var notCopied []string
		for _, f := range base {
			if !isCountKey(f.key) {
				continue
			}
			if len(destroyed) == 0 {
				fields = append(fields, f)
				continue
			}
			if v, ok := adjustCount(f.key, f.val, destroyed); ok {
				fields = append(fields, kv{f.key, v})
			} else {
				notCopied = append(notCopied, f.key)
			}
		}
		if len(destroyed) > 0 {
			fields = append(fields, kv{"frames_destroyed_total", len(destroyed)})
			note := "counts of the base minus the frames_destroyed of the faults"
			if len(notCopied) > 0 {
				note += "; not carried over (they change): " + strings.Join(notCopied, ", ")
			}
			fields = append(fields, kv{"counts_note", note})
		}
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		k, _ := json.Marshal(f.key)
		v, err := marshalPlain(f.val)
		if err != nil {
			return nil, fmt.Errorf("expect key %s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteString(":")
		b.Write(v)
	}
	b.WriteString("}")
	return b.Bytes(), nil
}

// marshalPlain is json.Marshal without HTML escaping.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WriteJSON writes v as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
