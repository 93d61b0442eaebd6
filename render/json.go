package render

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/track"
)

// TimeFormat is RFC 3339 with nanoseconds, as used for "ts" in every record.
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// JSONOptions says what the NDJSON writer includes.
type JSONOptions struct {
	// ShowSecrets prints auth_data and tokens instead of redacting them.
	ShowSecrets bool
	// Payload adds the payload bytes (base64) to payload frames and entries.
	Payload bool
}

// JSON writes one JSON object per line (NDJSON) for every frame and stream
// event; the format is documented in docs/json.md. It implements
// decode.Sink. Call Flush when done.
type JSON struct {
	w    *bufio.Writer
	opts JSONOptions
	pj   protojson.MarshalOptions
	enc  *protoEncoder
	smm  *msgPlan // SingleMessageMetadata
	b    []byte
	err  error
}

// NewJSON returns an NDJSON writer on w.
func NewJSON(w io.Writer, opts JSONOptions) *JSON {
	enc := newProtoEncoder()
	enc.redact = !opts.ShowSecrets
	return &JSON{
		w:    bufio.NewWriterSize(w, 64<<10),
		opts: opts,
		pj:   protojson.MarshalOptions{UseProtoNames: true},
		enc:  enc,
		smm:  planFor((*pulsarapi.SingleMessageMetadata)(nil).ProtoReflect().Descriptor()),
	}
}

func appendKey(b []byte, key string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendString appends s quoted as encoding/json.Marshal quotes it, then
// made safe for a terminal (AppendJSONSafe).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, _ := json.Marshal(s)
			return AppendJSONSafe(b, out)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendAddr appends a quoted "ip:port" (appendString of a.String()).
func appendAddr(b []byte, a netip.AddrPort) []byte {
	start := len(b)
	b = append(b, '"')
	b = a.AppendTo(b)
	for _, c := range b[start+1:] {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendString(b[:start], a.String())
		}
	}
	return append(b, '"')
}

// appendProto appends m as protojson with proto names, compacted: by the
// encoder of protojson.go, or by protojson itself for what that encoder
// leaves to it (including protojson's errors).
func (j *JSON) appendProto(b []byte, m protoreflect.Message) []byte {
	start := len(b)
	if out, ok := j.enc.appendProtoJSON(b, m); ok {
		return out
	}
	return j.appendProtojson(b[:start], m.Interface())
}

// appendProtojson is appendProto through protojson and json.Compact.
func (j *JSON) appendProtojson(b []byte, m proto.Message) []byte {
	out, err := j.pj.Marshal(m)
	if err != nil {
		return appendString(b, "unprintable: "+strings.ReplaceAll(err.Error(), "\u00a0", " "))
	}
	// protojson randomises insignificant spaces; compact them away so the
	// output is byte-stable for golden files and diffs.
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err == nil {
		out = buf.Bytes()
	}
	return AppendJSONSafe(b, out)
}

// appendBase64 appends p as encoding/json.Marshal writes a []byte: quoted
// standard base64, null when p is nil.
func appendBase64(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

func appendProblems(b []byte, ps []decode.Problem, show bool) []byte {
	return appendProblemList(b, "problems", ps, show)
}

// appendProblemList writes ps as a list of {code, detail} under key.
func appendProblemList(b []byte, key string, ps []decode.Problem, show bool) []byte {
	b = appendKey(b, key)
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"code":`...)
		b = appendString(b, p.Code)
		b = append(b, `,"detail":`...)
		b = appendString(b, RedactedDetail(p.Detail, show))
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendWhere(b []byte, ts time.Time, c connLike, dir fmtDir) []byte {
	b = appendKey(b, "ts")
	b = append(b, '"')
	b = ts.UTC().AppendFormat(b, TimeFormat)
	b = append(b, '"')
	b = appendKey(b, "conn")
	b = strconv.AppendInt(b, int64(c.id), 10)
	b = appendKey(b, "src")
	src, dst := c.client, c.server
	if dir.s2c {
		src, dst = dst, src
	}
	b = appendAddr(b, src)
	b = appendKey(b, "dst")
	b = appendAddr(b, dst)
	b = appendKey(b, "dir")
	return appendString(b, dir.name)
}

type connLike struct {
	id             int
	client, server netip.AddrPort
}

type fmtDir struct {
	s2c  bool
	name string
}

// Frame writes one frame record.
func (j *JSON) Frame(f *decode.Frame) { j.FrameInfo(f, nil) }

// FrameInfo writes one frame record with the tracker's annotations (nil:
// none), see docs/json.md.
func (j *JSON) FrameInfo(f *decode.Frame, info *track.Info) {
	b := append(j.b[:0], `{"n":`...)
	b = strconv.AppendInt(b, int64(f.N), 10)
	b = appendWhere(b, f.Time, connLike{f.Conn.ID, f.Conn.Client, f.Conn.Server}, fmtDir{f.Dir != 0, f.Dir.String()})
	b = appendKey(b, "offset")
	b = strconv.AppendInt(b, f.Offset, 10)
	b = appendKey(b, "type")
	b = appendString(b, f.Type.String())
	b = appendKey(b, "size")
	b = strconv.AppendInt(b, int64(f.Size), 10)
	if f.Missing > 0 {
		b = appendKey(b, "missing")
		b = strconv.AppendInt(b, int64(f.Missing), 10)
	}
	if sub := RedactedSub(f.Command, j.opts.ShowSecrets); sub != nil {
		b = appendKey(b, "command")
		b = j.appendProto(b, sub)
	}
	if f.Checksum != nil {
		b = appendKey(b, "checksum")
		b = append(b, `{"ok":`...)
		b = strconv.AppendBool(b, f.Checksum.OK())
		b = append(b, `,"stored":`...)
		b = strconv.AppendUint(b, uint64(f.Checksum.Stored), 10)
		b = append(b, `,"computed":`...)
		b = strconv.AppendUint(b, uint64(f.Checksum.Computed), 10)
		b = append(b, '}')
	}
	if f.BrokerEntryMetadata != nil {
		b = appendKey(b, "broker_entry_metadata")
		b = j.appendProto(b, Redacted(f.BrokerEntryMetadata, j.opts.ShowSecrets).ProtoReflect())
	}
	if f.Metadata != nil {
		b = appendKey(b, "metadata")
		b = j.appendProto(b, Redacted(f.Metadata, j.opts.ShowSecrets).ProtoReflect())
		b = appendKey(b, "payload")
		b = append(b, `{"size":`...)
		b = strconv.AppendInt(b, int64(len(f.Payload)), 10)
		if f.Encrypted() {
			b = append(b, `,"encrypted":true`...)
			if j.opts.Payload {
				b = append(b, `,"data":`...)
				b = appendBase64(b, f.Payload)
			}
		} else {
			b = append(b, `,"uncompressed_size":`...)
			b = strconv.AppendInt(b, int64(len(f.Uncompressed)), 10)
			if j.opts.Payload && len(f.Entries) == 0 {
				b = append(b, `,"data":`...)
				b = appendBase64(b, f.Uncompressed)
			}
		}
		b = append(b, '}')
	}
	if len(f.Entries) > 0 {
		b = appendKey(b, "entries")
		b = append(b, '[')
		for i, e := range f.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			b = j.appendEntryMetadata(b, &f.Entries[i])
			b = append(b, `"size":`...)
			b = strconv.AppendInt(b, int64(len(e.Payload)), 10)
			if j.opts.Payload {
				b = append(b, `,"data":`...)
				b = appendBase64(b, e.Payload)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if info != nil {
		b = appendInfo(b, info, j.opts.ShowSecrets)
	}
	b = appendProblems(b, f.Problems, j.opts.ShowSecrets)
	b = append(b, '}', '\n')
	j.write(b)
}

// appendEntryMetadata writes a batch entry's "metadata": straight from its
// encoding when it has one (decoded eagerly or not), else from Metadata.
func (j *JSON) appendEntryMetadata(b []byte, e *decode.Entry) []byte {
	if e.Metadata == nil && e.RawMetadata == nil {
		return b
	}
	b = append(b, `"metadata":`...)
	start := len(b)
	if e.RawMetadata != nil {
		// The wire path declines secrets and credentials by shape unless
		// they are to be shown (protoEncoder.redact): the reflective path
		// below redacts them.
		if out, ok := j.enc.appendWire(b, e.RawMetadata, j.smm); ok {
			return append(out, ',')
		}
		b = b[:start]
	}
	md, err := e.DecodeMetadata()
	if err != nil || md == nil { // not in a decoded frame: the entry would not exist
		return b[:start-len(`"metadata":`)]
	}
	b = j.appendProto(b, Redacted(md, j.opts.ShowSecrets).ProtoReflect())
	return append(b, ',')
}

// Event writes one stream-event record.
func (j *JSON) Event(e *decode.Event) {
	b := append(j.b[:0], `{"event":`...)
	b = appendString(b, string(e.Kind))
	b = appendWhere(b, e.Time, connLike{e.Conn.ID, e.Conn.Client, e.Conn.Server}, fmtDir{e.Dir != 0, e.Dir.String()})
	b = appendKey(b, "offset")
	b = strconv.AppendInt(b, e.Offset, 10)
	b = appendKey(b, "bytes")
	b = strconv.AppendInt(b, e.Bytes, 10)
	if e.Detail != "" {
		b = appendKey(b, "detail")
		b = appendString(b, RedactedDetail(e.Detail, j.opts.ShowSecrets))
	}
	if e.Stats != nil {
		b = appendKey(b, "accounting")
		b = append(b, `{"c2s":`...)
		b = appendStreamStats(b, e.Stats[0])
		b = append(b, `,"s2c":`...)
		b = appendStreamStats(b, e.Stats[1])
		b = append(b, '}')
	}
	b = appendProblems(b, e.Problems, j.opts.ShowSecrets)
	b = append(b, '}', '\n')
	j.write(b)
}

// appendStreamStats writes one stream's byte accounting: bytes seen equal
// bytes in frames + skipped + truncated + ignored (TLS); lost bytes (gaps)
// were never seen and are counted apart.
func appendStreamStats(b []byte, s decode.StreamStats) []byte {
	for i, kv := range []struct {
		k string
		v int64
	}{{"seen", s.Seen}, {"in_frames", s.InFrames}, {"lost", s.Lost}, {"skipped", s.Skipped},
		{"truncated", s.Truncated}, {"ignored", s.Ignored}, {"frames", s.Frames}, {"gaps", s.Gaps}} {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = appendString(b, kv.k)
		b = append(b, ':')
		b = strconv.AppendInt(b, kv.v, 10)
	}
	return append(b, '}')
}

func (j *JSON) write(b []byte) {
	j.b = b
	if j.err == nil {
		_, j.err = j.w.Write(b)
	}
}

// Flush writes out buffered output and returns the first write error.
func (j *JSON) Flush() error {
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
	return j.err
}
