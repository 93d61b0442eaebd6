package diff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pulsarscope/pulsarscope/render"
)

// WriteJSON writes the result as one indented JSON document, the Result's
// fields with "same" added (docs/diff.md). It is written piece by piece, so
// that the diff of large captures does not have to fit in memory twice.
func (r *Result) WriteJSON(w io.Writer) error {
	jw := &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}
	jw.raw("{\n")
	jw.member(1, "same", r.Same(), true)
	jw.member(1, "baseline", r.Baseline, true)
	jw.member(1, "candidate", r.Candidate, true)
	jw.raw(`  "streams": [`)
	for i, s := range r.Streams {
		if i > 0 {
			jw.raw(",")
		}
		jw.raw("\n    {\n")
		jw.member(3, "key", s.Key, true)
		jw.member(3, "status", s.Status, true)
		if s.Approximate {
			jw.member(3, "approximate", true, true)
		}
		if len(s.Fields) > 0 {
			jw.member(3, "fields", s.Fields, true)
		}
		jw.raw(`      "hunks": [`)
		for j, h := range s.Hunks {
			if j > 0 {
				jw.raw(",")
			}
			jw.raw("\n        {\n")
			jw.member(5, "base_start", h.BaseStart, true)
			jw.member(5, "base_count", h.BaseCount, true)
			jw.member(5, "cand_start", h.CandStart, true)
			jw.member(5, "cand_count", h.CandCount, true)
			jw.raw(`          "lines": [`)
			for k, l := range h.Lines {
				if k > 0 {
					jw.raw(",")
				}
				jw.raw("\n            ")
				jw.value(6, l)
			}
			jw.raw("\n          ]\n        }")
		}
		jw.raw("\n      ]\n    }")
	}
	jw.raw("\n  ],\n")
	jw.member(1, "outcomes", r.Outcomes, true)
	jw.member(1, "problems", r.Problems, true)
	jw.member(1, "latency", r.Latency, true)
	jw.member(1, "summary", r.Summary, false)
	jw.raw("}\n")
	if err := jw.w.Flush(); err != nil && jw.err == nil {
		jw.err = err
	}
	if jw.err != nil {
		return fmt.Errorf("writing diff: %w", jw.err)
	}
	return nil
}

// jsonWriter writes indented JSON pieces, keeping the first error.
type jsonWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	err error
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

// value writes v indented as if at depth (two spaces a level).
func (j *jsonWriter) value(depth int, v any) {
	j.buf.Reset()
	enc := json.NewEncoder(&j.buf)
	enc.SetEscapeHTML(false)
	prefix := ""
	for i := 0; i < depth; i++ {
		prefix += "  "
	}
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		if j.err == nil {
			j.err = err
		}
		return
	}
	if j.err == nil {
		_, j.err = j.w.Write(render.AppendJSONSafe(nil, bytes.TrimSuffix(j.buf.Bytes(), []byte("\n"))))
	}
}

// member writes one object member on its own line.
func (j *jsonWriter) member(depth int, key string, v any, comma bool) {
	for i := 0; i < depth; i++ {
		j.raw("  ")
	}
	j.value(depth, key)
	j.raw(": ")
	j.value(depth, v)
	if comma {
		j.raw(",")
	}
	j.raw("\n")
}
