package diff

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// FieldChange says how one field differs between paired commands of a
// stream (the k-th removed and k-th added command of a run of changes),
// aggregated over the stream: "SEND metadata.compression: (absent) -> LZ4,
// 10 commands".
type FieldChange struct {
	// Type is the command type ("SEND"; "SEND->SEND_ERROR" when the paired
	// commands' types differ).
	Type string `json:"type"`
	// Path is the field's path in the command's fields ("metadata.compression",
	// "entries[0].size"); "" when the whole command differs.
	Path string `json:"path"`
	// Baseline and Candidate are compact JSON values ("(absent)" when the
	// field is missing), or "" when they vary between the paired commands.
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Count is the number of command pairs with this change.
	Count int `json:"count"`
}

// absent marks a field a command does not have.
const absent = "(absent)"

// maxValue bounds the length of a value shown in a FieldChange.
const maxValue = 80

// fieldChanges aggregates the field differences of paired commands.
type fieldChanges struct {
	byKey map[string]*FieldChange
}

func (fc *fieldChanges) add(b, c Command) {
	typ := b.Type
	if b.Type != c.Type || b.Dir != c.Dir {
		fc.note(b.Dir+" "+b.Type+" -> "+c.Dir+" "+c.Type, "", "", "")
		return
	}
	var bv, cv any
	if decodeFields(b.Fields, &bv) != nil || decodeFields(c.Fields, &cv) != nil {
		fc.note(typ, "", string(b.Fields), string(c.Fields))
		return
	}
	fc.compare(typ, "", bv, cv)
	bp, cp := problemsValue(b.Problems), problemsValue(c.Problems)
	if bp != cp {
		fc.note(typ, "problems", bp, cp)
	}
}

func problemsValue(ps []string) string {
	if len(ps) == 0 {
		return absent
	}
	return string(mustJSON(ps))
}

func decodeFields(raw json.RawMessage, v *any) error {
	if len(raw) == 0 {
		*v = map[string]any{}
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// compare walks two decoded values and notes the highest paths that differ.
func (fc *fieldChanges) compare(typ, path string, b, c any) {
	bo, bok := b.(map[string]any)
	co, cok := c.(map[string]any)
	if bok && cok {
		keys := map[string]bool{}
		for k := range bo {
			keys[k] = true
		}
		for k := range co {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			bv, inB := bo[k]
			cv, inC := co[k]
			switch {
			case !inB:
				fc.note(typ, p, absent, show(cv))
			case !inC:
				fc.note(typ, p, show(bv), absent)
			default:
				fc.compare(typ, p, bv, cv)
			}
		}
		return
	}
	ba, bok := b.([]any)
	ca, cok := c.([]any)
	if bok && cok && len(ba) == len(ca) {
		for i := range ba {
			fc.compare(typ, path+"["+strconv.Itoa(i)+"]", ba[i], ca[i])
		}
		return
	}
	if sb, sc := show(b), show(c); sb != sc {
		fc.note(typ, path, sb, sc)
	}
}

func show(v any) string {
	s := string(mustJSON(v))
	if len(s) > maxValue {
		s = s[:maxValue-3] + "..."
	}
	return s
}

// note counts one difference; values that vary between pairs are blanked.
func (fc *fieldChanges) note(typ, path, b, c string) {
	if fc.byKey == nil {
		fc.byKey = map[string]*FieldChange{}
	}
	k := typ + "\x00" + path
	ch := fc.byKey[k]
	if ch == nil {
		fc.byKey[k] = &FieldChange{Type: typ, Path: path, Baseline: b, Candidate: c, Count: 1}
		return
	}
	ch.Count++
	if ch.Baseline != b || ch.Candidate != c {
		ch.Baseline, ch.Candidate = "", ""
	}
}

// list returns the changes sorted by type and path.
func (fc *fieldChanges) list() []FieldChange {
	out := make([]FieldChange, 0, len(fc.byKey))
	for _, ch := range fc.byKey {
		out = append(out, *ch)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Path < out[j].Path
	})
	return out
}
