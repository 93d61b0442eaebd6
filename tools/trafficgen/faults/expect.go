package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
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
	// its frame and connection counts are carried over, and its pairs
	// (which frame the broker answered with which), renumbered.
	BaseExpect []byte
	// InConns and OutConns are the connections of the input and of the
	// output (Connections), to carry the base's pairs over.
	InConns, OutConns []ConnInfo
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
// take away, plus what the added frames (and connections) bring, and
// false when that cannot be known.
func adjustCount(key string, val any, destroyed, added []FrameRef, addedConns int) (any, bool) {
	if m, ok := val.(map[string]any); ok && key == "frames" {
		return adjustFrames(m, destroyed, added)
	}
	num, ok := val.(json.Number)
	if !ok {
		return nil, false
	}
	n, err := num.Int64()
	if err != nil {
		return nil, false
	}
	if key == "connections" {
		return n + int64(addedConns), true
	}
	gone, ok := countOf(key, destroyed)
	if !ok {
		return nil, false
	}
	more, _ := countOf(key, added)
	return n - gone + more, true
}

// countOf returns what frames refs count for in the count key, and false
// for a key that is not a frame count.
func countOf(key string, refs []FrameRef) (int64, bool) {
	var pred func(FrameRef) int64
	switch key {
	case "frames", "frames_total":
		pred = func(FrameRef) int64 { return 1 }
	case "payload_frames":
		pred = func(d FrameRef) int64 { return boolCount(d.payload) }
	case "checksummed_payload_frames":
		pred = func(d FrameRef) int64 { return boolCount(d.checksum) }
	case "broker_entry_metadata_frames":
		pred = func(d FrameRef) int64 { return boolCount(d.bem) }
	case "chunk_frames":
		pred = func(d FrameRef) int64 { return boolCount(d.chunk) }
	case "batch_entries":
		pred = func(d FrameRef) int64 { return int64(d.batch) }
	default:
		return 0, false
	}
	var n int64
	for _, d := range refs {
		n += pred(d)
	}
	return n, true
}

func boolCount(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// adjustFrames subtracts the destroyed frames from a frame count by type,
// either flat ({"SEND": n}) or by direction ({"c2s": {"SEND": n}}).
func adjustFrames(m map[string]any, destroyed, added []FrameRef) (any, bool) {
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
	// countsFor returns the counts d's type is kept in (by direction or flat).
	countsFor := func(d FrameRef) (map[string]any, bool) {
		if !byDir {
			return out, true
		}
		inner, ok := out[d.Dir].(map[string]any)
		return inner, ok
	}
	for _, d := range destroyed {
		counts, ok := countsFor(d)
		if !ok {
			return nil, false
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
	for _, d := range added {
		counts, ok := countsFor(d)
		if !ok {
			return nil, false
		}
		n, _ := counts[d.Type].(int64)
		counts[d.Type] = n + 1
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
	var destroyed, damaged, added []FrameRef
	addedConns := 0
	for _, e := range x.Entries {
		flags = append(flags, e.NeedsFlags...)
		for _, d := range e.FramesDestroyed {
			if d.Lost == "damaged" {
				damaged = append(damaged, d)
			} else {
				destroyed = append(destroyed, d)
			}
		}
		added = append(added, e.FramesAdded...)
		addedConns += e.ConnectionsAdded
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
		changed := len(destroyed) > 0 || len(added) > 0 || len(damaged) > 0
		var notCopied []string
		for _, f := range base {
			if f.key == "pairs" {
				if pairs, ok := x.carryPairs(f.val, destroyed); ok {
					fields = append(fields, kv{"pairs", pairs})
				} else {
					notCopied = append(notCopied, f.key)
				}
				continue
			}
			if !isCountKey(f.key) {
				continue
			}
			if !changed {
				fields = append(fields, f)
				continue
			}
			gone := destroyed
			if f.key != "frames" && f.key != "frames_total" && f.key != "connections" {
				// A damaged frame is still a frame, without its payload.
				gone = append(slices.Clone(destroyed), damaged...)
			}
			if v, ok := adjustCount(f.key, f.val, gone, added, addedConns); ok {
				fields = append(fields, kv{f.key, v})
			} else {
				notCopied = append(notCopied, f.key)
			}
		}
		if len(destroyed) > 0 {
			fields = append(fields, kv{"frames_destroyed_total", len(destroyed)})
		}
		if len(damaged) > 0 {
			fields = append(fields, kv{"frames_damaged_total", len(damaged)})
		}
		if len(added) > 0 {
			fields = append(fields, kv{"frames_added_total", len(added)})
		}
		if changed || len(notCopied) > 0 {
			note := "counts of the base minus the frames_destroyed of the faults"
			switch {
			case len(added) > 0 && len(destroyed) > 0:
				note = "counts of the base minus the frames_destroyed, plus the frames_added, of the faults"
			case len(added) > 0:
				note = "counts of the base plus the frames_added of the faults"
			}
			if len(damaged) > 0 {
				note += " (a damaged frame counts as a frame of its type, not as a payload frame)"
			}
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

// Pair is one request/response pair the lab's broker logged: frames
// numbered 1-based per connection and direction, the connection named by
// its client address and, when several connections share it (port
// reuse), Instance (1-based, in order; 0 means 1).
type Pair struct {
	Client   string `json:"client"`
	Instance int    `json:"instance,omitempty"`
	Request  int    `json:"request"`
	Response int    `json:"response"`
}

// carryPairs returns the base's pairs as they are in the output: pairs
// whose request or response frame the faults destroyed are left out, the
// other frames of those streams renumbered, clients renamed to the
// output's addresses, and the pairs of every copied connection (reuse)
// added for its copy. It returns false when the connections cannot be
// matched.
func (x *Expect) carryPairs(val any, destroyed []FrameRef) ([]Pair, bool) {
	raw, err := json.Marshal(val)
	if err != nil {
		return nil, false
	}
	var pairs []Pair
	if err := json.Unmarshal(raw, &pairs); err != nil || len(x.InConns) == 0 || len(x.OutConns) < len(x.InConns) {
		return nil, false
	}
	connOf := map[string]int{}
	for _, c := range x.InConns {
		connOf[c.Client] = c.ID
	}
	gone := map[[3]int]bool{}
	for _, d := range destroyed {
		gone[[3]int{d.Conn, dirIndex(d.Dir), d.Index}] = true
	}
	renumber := func(conn, dir, index int) (int, bool) {
		if gone[[3]int{conn, dir, index}] {
			return 0, false
		}
		n := index
		for k := range gone {
			if k[0] == conn && k[1] == dir && k[2] < index {
				n--
			}
		}
		return n, true
	}
	out := []Pair{}
	for _, p := range pairs {
		id, ok := connOf[p.Client]
		if !ok {
			return nil, false
		}
		req, ok1 := renumber(id, 0, p.Request)
		resp, ok2 := renumber(id, 1, p.Response)
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, Pair{Client: x.OutConns[id-1].Client, Request: req, Response: resp})
	}
	// Copies of connections (reuse): the same pairs, for the copy.
	instances := map[string]int{}
	for _, c := range x.OutConns {
		instances[c.Client]++
		if c.ID <= len(x.InConns) || instances[c.Client] < 2 {
			continue
		}
		for _, e := range x.Entries {
			if e.ConnectionsAdded == 0 {
				continue
			}
			orig := x.OutConns[e.Conn-1].Client
			if orig != c.Client {
				continue
			}
			for _, p := range out {
				if p.Client == orig && p.Instance == 0 {
					out = append(out, Pair{Client: c.Client, Instance: instances[c.Client], Request: p.Request, Response: p.Response})
				}
			}
		}
	}
	return out, true
}

// dirIndex is 0 for "c2s", 1 for "s2c".
func dirIndex(d string) int {
	if d == "s2c" {
		return 1
	}
	return 0
}
