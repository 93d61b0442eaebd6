// Package render writes decoded frames and stream events for people (text)
// and machines (NDJSON).
package render

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/track"
)

// TextOptions says what the text writer shows.
type TextOptions struct {
	// Color turns on ANSI colors (the caller decides: --color, NO_COLOR, tty).
	Color bool
	// Verbose prints each frame's full decoded tree, like tshark -V.
	Verbose bool
	// Hex adds a hex dump of the frame (needs decode.Options.KeepRaw).
	Hex bool
	// Payload prints message payloads: text when printable, else hex.
	Payload bool
	// ShowSecrets prints auth_data and tokens instead of redacting them.
	ShowSecrets bool
	// Events prints stream events (open, close, gap...) as lines of their own.
	Events bool
}

// Text writes one line per frame, tshark style. It implements decode.Sink.
// Call Flush when done.
type Text struct {
	w     *bufio.Writer
	opts  TextOptions
	start time.Time
	line  []byte
	sum   []byte

	problem, event, dim paint
	family              map[Family]paint
}

// paint is a color as its Fprintf writes it: pre, the text, post (both
// empty without color).
type paint struct {
	*color.Color
	pre, post string
}

func newPaint(c *color.Color) paint {
	var buf bytes.Buffer
	c.Fprintf(&buf, "%s", "\x00")
	pre, post, _ := strings.Cut(buf.String(), "\x00")
	return paint{c, pre, post}
}

// NewText returns a text writer on w.
func NewText(w io.Writer, opts TextOptions) *Text {
	mk := func(attrs ...color.Attribute) paint {
		c := color.New(attrs...)
		if opts.Color {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
		return newPaint(c)
	}
	return &Text{
		w:       bufio.NewWriterSize(w, 64<<10),
		opts:    opts,
		problem: mk(color.FgRed, color.Bold),
		event:   mk(color.FgYellow),
		dim:     mk(color.Faint),
		family: map[Family]paint{
			FamilyConnection:  mk(color.FgCyan),
			FamilyProducer:    mk(color.FgGreen),
			FamilyConsumer:    mk(color.FgBlue, color.Bold),
			FamilyLookup:      mk(color.FgMagenta),
			FamilyTransaction: mk(color.FgYellow),
			FamilyError:       mk(color.FgRed),
		},
	}
}

func (t *Text) rel(ts time.Time) float64 {
	if t.start.IsZero() {
		t.start = ts
	}
	return ts.Sub(t.start).Seconds()
}

// Frame writes one frame.
func (t *Text) Frame(f *decode.Frame) { t.FrameInfo(f, nil) }

// FrameInfo writes one frame with the tracker's annotations (nil: none):
// conformance problems on the line, the pairing in -V.
func (t *Text) FrameInfo(f *decode.Frame, info *track.Info) {
	src, dst := f.Conn.Client, f.Conn.Server
	if f.Dir != 0 {
		src, dst = dst, src
	}
	// The line is built without fmt: what fmt.Fprintf("%6d %10.6f #%-3d
	// %21s → %-21s ", ...) and the colors' Fprintf("%-30s ") wrote.
	b := t.line[:0]
	b = appendPadInt(b, int64(f.N), 6)
	b = append(b, ' ')
	b = appendHead(b, t.rel(f.Time), f.Conn.ID, src, dst)
	fam := t.family[FamilyOf(f.Type)]
	b = append(b, fam.pre...)
	b = appendPadRight(b, f.Type.String(), 30)
	b = append(b, ' ')
	b = append(b, fam.post...)
	// The summary separates fields from what it appended before: alone.
	t.sum = AppendSummary(t.sum[:0], f, t.opts.ShowSecrets)
	b = append(b, t.sum...)
	for _, p := range f.Problems {
		b = t.appendProblem(b, p)
	}
	if info != nil {
		for _, p := range info.Problems {
			b = t.appendProblem(b, p)
		}
	}
	b = append(b, '\n')
	t.w.Write(b)
	t.line = b
	if t.opts.Verbose {
		t.tree(f)
		if info != nil {
			t.w.Write(appendTrackLine(t.line[:0], info, t.opts.ShowSecrets))
		}
	}
	if t.opts.Payload {
		t.payloads(f)
	}
	if t.opts.Hex && len(f.Raw) > 0 {
		t.w.WriteString(hex.Dump(MaskedRaw(f, t.opts.ShowSecrets)))
	}
}

// appendProblem appends " [code: detail]" in the problem color.
func (t *Text) appendProblem(b []byte, p decode.Problem) []byte {
	b = append(b, ' ')
	b = append(b, t.problem.pre...)
	b = append(b, '[')
	b = append(b, p.Code...)
	b = append(b, ": "...)
	b = AppendSafe(b, RedactedDetail(p.Detail, t.opts.ShowSecrets))
	b = append(b, ']')
	return append(b, t.problem.post...)
}

// appendHead appends "%10.6f #%-3d %21s → %-21s " (time, connection,
// endpoints), the part of a line after the frame number.
func appendHead(b []byte, rel float64, conn int, src, dst netip.AddrPort) []byte {
	n := len(b)
	b = strconv.AppendFloat(b, rel, 'f', 6, 64)
	b = padLeft(b, n, 10)
	b = append(b, " #"...)
	n = len(b)
	b = strconv.AppendInt(b, int64(conn), 10)
	b = padRight(b, n, 3)
	b = append(b, ' ')
	n = len(b)
	b = appendAddrPort(b, src)
	b = padLeft(b, n, 21)
	b = append(b, " → "...)
	n = len(b)
	b = appendAddrPort(b, dst)
	b = padRight(b, n, 21)
	return append(b, ' ')
}

func appendAddrPort(b []byte, a netip.AddrPort) []byte {
	if !a.IsValid() {
		return append(b, a.String()...)
	}
	return a.AppendTo(b)
}

// appendPadInt appends v right-aligned in width (fmt's %<width>d).
func appendPadInt(b []byte, v int64, width int) []byte {
	n := len(b)
	b = strconv.AppendInt(b, v, 10)
	return padLeft(b, n, width)
}

// appendPadRight appends s left-aligned in width (fmt's %-<width>s).
func appendPadRight(b []byte, s string, width int) []byte {
	n := len(b)
	b = append(b, s...)
	return padRight(b, n, width)
}

// padLeft right-aligns b[n:] in width runes, as fmt pads.
func padLeft(b []byte, n, width int) []byte {
	pad := width - utf8.RuneCount(b[n:])
	if pad <= 0 {
		return b
	}
	b = append(b, spaces[:pad]...)
	copy(b[n+pad:], b[n:len(b)-pad])
	copy(b[n:n+pad], spaces)
	return b
}

// padRight left-aligns b[n:] in width runes, as fmt pads.
func padRight(b []byte, n, width int) []byte {
	if pad := width - utf8.RuneCount(b[n:]); pad > 0 {
		b = append(b, spaces[:pad]...)
	}
	return b
}

const spaces = "                                                                "

// tree prints the frame's decoded structure, one field per line.
func (t *Text) tree(f *decode.Frame) {
	pt := prototext.MarshalOptions{Multiline: true, Indent: "    "}
	section := func(name string, m proto.Message) {
		if m == nil {
			return
		}
		fmt.Fprintf(t.w, "    %s:\n", name)
		out, err := pt.Marshal(m)
		if err != nil {
			fmt.Fprintf(t.w, "        (not printable: %v)\n", err)
			return
		}
		indent(t.w, out, "        ")
	}
	fmt.Fprintf(t.w, "    frame: conn=%d dir=%s offset=%d size=%d total_size=%d command_size=%d\n",
		f.Conn.ID, f.Dir, f.Offset, f.Size, f.TotalSize, f.CommandSize)
	if f.Command != nil {
		section("command", Redacted(f.Command, t.opts.ShowSecrets))
	}
	if f.BrokerEntryMetadata != nil {
		section("broker_entry_metadata", Redacted(f.BrokerEntryMetadata, t.opts.ShowSecrets))
	}
	if f.Checksum != nil {
		fmt.Fprintf(t.w, "    checksum: stored=0x%08x computed=0x%08x ok=%t\n", f.Checksum.Stored, f.Checksum.Computed, f.Checksum.OK())
	}
	if f.Metadata != nil && f.Encrypted() {
		// The data keys and the IV as names, sizes and hex, not as
		// escaped strings of binary.
		md := proto.Clone(f.Metadata).(*pulsarapi.MessageMetadata)
		keys, param := md.EncryptionKeys, md.EncryptionParam
		md.EncryptionKeys, md.EncryptionParam = nil, nil
		section("metadata", Redacted(md, t.opts.ShowSecrets))
		for _, k := range keys {
			fmt.Fprintf(t.w, "    encryption key %s: %d bytes %x", strconv.Quote(t.clean(k.GetKey())), len(k.GetValue()), k.GetValue())
			for _, kv := range k.GetMetadata() {
				fmt.Fprintf(t.w, " %s=%s", strconv.Quote(t.clean(kv.GetKey())), strconv.Quote(t.clean(kv.GetValue())))
			}
			t.w.WriteByte('\n')
		}
		fmt.Fprintf(t.w, "    encryption: param=%x", param)
		if md.EncryptionAlgo != nil {
			fmt.Fprintf(t.w, " algo=%s", strconv.Quote(t.clean(md.GetEncryptionAlgo())))
		}
		t.w.WriteByte('\n')
		fmt.Fprintf(t.w, "    payload: size=%d encrypted (uncompressed_size %d is the plaintext's)\n", len(f.Payload), md.GetUncompressedSize())
	} else if f.Metadata != nil {
		section("metadata", Redacted(f.Metadata, t.opts.ShowSecrets))
		fmt.Fprintf(t.w, "    payload: size=%d uncompressed_size=%d\n", len(f.Payload), len(f.Uncompressed))
	}
	for i, e := range f.Entries {
		fmt.Fprintf(t.w, "    entry %d: size=%d\n", i, len(e.Payload))
		if md, _ := e.DecodeMetadata(); md != nil {
			out, _ := pt.Marshal(Redacted(md, t.opts.ShowSecrets))
			indent(t.w, out, "        ")
		}
	}
	for _, p := range f.Problems {
		t.problem.Fprintf(t.w, "    problem %s: %s\n", p.Code, t.clean(p.Detail))
	}
}

func (t *Text) payloads(f *decode.Frame) {
	if f.Metadata == nil {
		return
	}
	if f.Encrypted() {
		t.w.WriteString("    payload: (encrypted, hex)\n")
		t.w.WriteString(hex.Dump(f.Payload))
		return
	}
	if len(f.Entries) == 0 {
		writePayload(t.w, "    payload: ", f.Uncompressed)
		return
	}
	for i, e := range f.Entries {
		writePayload(t.w, "    entry "+strconv.Itoa(i)+" payload: ", e.Payload)
	}
}

func writePayload(w *bufio.Writer, prefix string, p []byte) {
	w.WriteString(prefix)
	if isText(p) {
		w.WriteString(strconv.Quote(string(p)))
		w.WriteByte('\n')
		return
	}
	w.WriteString("(hex)\n")
	w.WriteString(hex.Dump(p))
}

// isText reports whether p is valid UTF-8 without control bytes other than
// tab and newline.
func isText(p []byte) bool {
	for _, r := range string(p) {
		// C0 controls but tab and line ends, DEL and the C1 controls
		// (U+009B is a CSI to some terminals) make it binary: hex.
		if r == 0xFFFD || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r < 0xa0) {
			return false
		}
	}
	return true
}

func indent(w *bufio.Writer, text []byte, prefix string) {
	start := 0
	for i, c := range text {
		if c == '\n' {
			w.WriteString(prefix)
			w.Write(AppendEscaped(nil, stableLine(text[start:i+1])))
			start = i + 1
		}
	}
	if start < len(text) {
		w.WriteString(prefix)
		w.Write(AppendEscaped(nil, stableLine(text[start:])))
		w.WriteByte('\n')
	}
}

// stableLine undoes prototext's deliberate instability on one line of its
// multi-line output: after "name:" it writes one space or, in some builds,
// two (internal/detrand), which would make -V differ between two builds of
// the same code. A name is letters, digits, '_', or an extension's
// [full.name]; a value after the colon never starts with a space.
func stableLine(l []byte) []byte {
	i := 0
	for i < len(l) && l[i] == ' ' {
		i++
	}
	j := i
	for j < len(l) && (l[j] == '_' || l[j] == '.' || l[j] == '[' || l[j] == ']' || l[j] == '/' ||
		'a' <= l[j] && l[j] <= 'z' || 'A' <= l[j] && l[j] <= 'Z' || '0' <= l[j] && l[j] <= '9') {
		j++
	}
	if j > i && j+2 < len(l) && l[j] == ':' && l[j+1] == ' ' && l[j+2] == ' ' {
		return append(l[:j+2:j+2], l[j+3:]...)
	}
	return l
}

// Event writes a stream event when events are shown, and always when it
// carries a problem.
func (t *Text) Event(e *decode.Event) {
	if !t.opts.Events && len(e.Problems) == 0 {
		return
	}
	src, dst := e.Conn.Client, e.Conn.Server
	if e.Dir != 0 {
		src, dst = dst, src
	}
	fmt.Fprintf(t.w, "%6s %10.6f #%-3d %21s → %-21s ", "-", t.rel(e.Time), e.Conn.ID, src, dst)
	t.event.Fprintf(t.w, "%-30s ", "("+string(e.Kind)+")")
	if e.Bytes != 0 {
		fmt.Fprintf(t.w, "bytes=%d ", e.Bytes)
	}
	if e.Detail != "" && (len(e.Problems) == 0 || e.Problems[0].Detail != e.Detail) {
		t.w.WriteString(t.clean(e.Detail))
	}
	if e.Stats != nil {
		fmt.Fprintf(t.w, " c2s{%s} s2c{%s}", e.Stats[0], e.Stats[1])
	}
	for _, p := range e.Problems {
		t.w.WriteByte(' ')
		t.problem.Fprintf(t.w, "[%s: %s]", p.Code, t.clean(p.Detail))
	}
	t.w.WriteByte('\n')
}

// clean is a string from the wire (a problem detail, a name) as the text
// output shows it: credentials by shape redacted unless ShowSecrets,
// control characters escaped.
func (t *Text) clean(s string) string { return Safe(RedactedDetail(s, t.opts.ShowSecrets)) }

// Flush writes out buffered output.
func (t *Text) Flush() error { return t.w.Flush() }
