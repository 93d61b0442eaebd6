package diff

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/pulsarscope/pulsarscope/render"
)

// Format identifies a transcript document and its version.
const Format = "pulsarscope-transcript/1"

// Transcript is the normalised, stable form of a capture: what Compare
// compares. Its JSON form (WriteTo, ReadTranscript) is sorted and laid out
// one command per line, meant to be committed as a golden file.
type Transcript struct {
	// Format is the document's format and version (Format).
	Format string `json:"format"`
	// Rules are the normalisation rules the transcript was recorded with:
	// field or pseudo-field name → mode; names not listed were kept.
	Rules map[string]Mode `json:"rules"`
	// SecretsShown is true when credentials were recorded unredacted.
	SecretsShown bool `json:"secrets_shown,omitempty"`
	// Streams are the command sequences, sorted by key.
	Streams []Stream `json:"streams"`
	// Outcomes count request outcomes: "REQUEST -> RESPONSE[ ERROR]", or
	// "REQUEST -> (no response)".
	Outcomes map[string]int `json:"outcomes"`
	// Problems count problem codes: the decoder's and the tracker's.
	Problems map[string]int `json:"problems"`
	// Latency is the request→response latency per request type.
	Latency map[string]Latency `json:"latency"`
}

// Stream is one connection's, producer's or consumer's command sequence.
type Stream struct {
	// Key names the stream: "connection #1 127.0.0.1:6650",
	// "producer TOPIC #1", "consumer TOPIC sub=SUB #1" (names are added
	// when kept; #N counts streams with the same key in order of creation).
	Key      string    `json:"key"`
	Commands []Command `json:"commands"`
}

// Command is one frame after normalisation.
type Command struct {
	// Dir is "c2s" or "s2c".
	Dir string `json:"dir"`
	// Type is the command type (e.g. "SEND").
	Type string `json:"type"`
	// Fields is the normalised sub-command (and for SEND and MESSAGE the
	// message metadata, payload digest and batch entries) as compact JSON
	// with fields in schema order.
	Fields json.RawMessage `json:"fields,omitempty"`
	// Problems are the codes of the problems found on the frame.
	Problems []string `json:"problems,omitempty"`
}

// String renders the command as one line, as the text diff shows it.
func (c Command) String() string {
	var b strings.Builder
	b.WriteString(c.Dir)
	b.WriteByte(' ')
	b.WriteString(c.Type)
	if len(c.Fields) > 0 && string(c.Fields) != "{}" {
		b.WriteByte(' ')
		b.Write(c.Fields)
	}
	if len(c.Problems) > 0 {
		b.WriteString(" problems=")
		b.WriteString(strings.Join(c.Problems, ","))
	}
	return b.String()
}

// Equal reports whether two commands are the same after normalisation.
func (c Command) Equal(o Command) bool {
	if c.Dir != o.Dir || c.Type != o.Type || !bytes.Equal(c.Fields, o.Fields) || len(c.Problems) != len(o.Problems) {
		return false
	}
	for i := range c.Problems {
		if c.Problems[i] != o.Problems[i] {
			return false
		}
	}
	return true
}

// digest identifies a command by a 128-bit hash of what Equal compares.
func (c Command) digest() [16]byte {
	h := sha256.New()
	h.Write([]byte(c.Dir))
	h.Write([]byte{0})
	h.Write([]byte(c.Type))
	h.Write([]byte{0})
	h.Write(c.Fields)
	for _, p := range c.Problems {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	var d [16]byte
	copy(d[:], h.Sum(nil))
	return d
}

// Latency summarises the latencies of one request type, in microseconds.
type Latency struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50_us"`
	P90   int64 `json:"p90_us"`
	P99   int64 `json:"p99_us"`
	Max   int64 `json:"max_us"`
	// Samples are the latencies (at most 1,000, evenly spaced by rank
	// when there were more), sorted: what the significance test of a
	// latency regression compares.
	Samples []int64 `json:"samples_us,omitempty"`
}

// WriteTo writes the transcript as indented JSON with one command per line.
func (t *Transcript) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriter(w)}
	fmt.Fprintf(cw, "{\n  \"format\": %s,\n", mustJSON(t.Format))
	fmt.Fprintf(cw, "  \"rules\": %s,\n", mustJSON(t.Rules))
	if t.SecretsShown {
		fmt.Fprintf(cw, "  \"secrets_shown\": true,\n")
	}
	cw.WriteString("  \"streams\": [")
	for i, s := range t.Streams {
		if i > 0 {
			cw.WriteString(",")
		}
		fmt.Fprintf(cw, "\n    {\n      \"key\": %s,\n      \"commands\": [", mustJSON(s.Key))
		for j, c := range s.Commands {
			if j > 0 {
				cw.WriteString(",")
			}
			cw.WriteString("\n        ")
			cw.Write(mustJSON(c))
		}
		if len(s.Commands) > 0 {
			cw.WriteString("\n      ")
		}
		cw.WriteString("]\n    }")
	}
	if len(t.Streams) > 0 {
		cw.WriteString("\n  ")
	}
	cw.WriteString("],\n")
	writeMap(cw, "outcomes", t.Outcomes, ",")
	writeMap(cw, "problems", t.Problems, ",")
	writeMap(cw, "latency", t.Latency, "")
	cw.WriteString("}\n")
	if err := cw.w.(*bufio.Writer).Flush(); err != nil && cw.err == nil {
		cw.err = err
	}
	if cw.err != nil {
		return cw.n, fmt.Errorf("writing transcript: %w", cw.err)
	}
	return cw.n, nil
}

// writeMap writes a map one entry per line, keys sorted.
func writeMap[V any](cw *countWriter, name string, m map[string]V, after string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(cw, "  %q: {", name)
	for i, k := range keys {
		if i > 0 {
			cw.WriteString(",")
		}
		fmt.Fprintf(cw, "\n    %s: %s", mustJSON(k), mustJSON(m[k]))
	}
	if len(keys) > 0 {
		cw.WriteString("\n  ")
	}
	cw.WriteString("}" + after + "\n")
}

// mustJSON marshals plain values (no HTML escaping, so that "<1>" stays
// readable in golden files), safe for a terminal (render.AppendJSONSafe).
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only plain values are marshalled here; this cannot happen.
		panic(fmt.Sprintf("diff: marshal %T: %v", v, err))
	}
	return render.AppendJSONSafe(nil, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

func (c *countWriter) WriteString(s string) { _, _ = c.Write([]byte(s)) }

// ReadTranscript reads a transcript written by WriteTo.
func ReadTranscript(r io.Reader) (*Transcript, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var t Transcript
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("reading transcript: %w (transcripts are written by 'pulsarscope read -o transcript')", err)
	}
	if t.Format != Format {
		return nil, fmt.Errorf("reading transcript: format %q, want %q (transcripts are written by 'pulsarscope read -o transcript')", t.Format, Format)
	}
	for i := range t.Streams {
		for j := range t.Streams[i].Commands {
			c := &t.Streams[i].Commands[j]
			if len(c.Fields) > 0 {
				var buf bytes.Buffer
				if err := json.Compact(&buf, c.Fields); err != nil {
					return nil, fmt.Errorf("reading transcript: stream %q command %d: %w", t.Streams[i].Key, j+1, err)
				}
				// in the form transcripts are written in (mustJSON): runes
				// unsafe for a terminal escaped, so a loaded transcript
				// equals the one it writes
				c.Fields = render.AppendJSONSafe(nil, buf.Bytes())
			}
		}
	}
	t.fill()
	return &t, nil
}

// fill makes nil maps empty, so that written documents are uniform.
func (t *Transcript) fill() {
	if t.Rules == nil {
		t.Rules = map[string]Mode{}
	}
	if t.Outcomes == nil {
		t.Outcomes = map[string]int{}
	}
	if t.Problems == nil {
		t.Problems = map[string]int{}
	}
	if t.Latency == nil {
		t.Latency = map[string]Latency{}
	}
}
