package render

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Strings from the wire (topics, names, versions, error messages, problem
// details quoting them) can hold terminal control sequences; a crafted
// capture must not be able to drive the terminal that shows pulsarscope's
// output. This file is the one sanitiser every output uses: a rune is safe
// to print when it is valid UTF-8 and unicode.IsPrint (letters, marks,
// numbers, punctuation, symbols and the ASCII space); everything else — C0
// controls (ESC, BEL), DEL, C1 controls (U+009B is a CSI to some
// terminals), format characters (bidirectional overrides, zero width),
// line and paragraph separators, invalid bytes — is escaped: Go-style
// (\x1b, \u009b) in text by Safe and AppendSafe, as \uXXXX in JSON by the
// JSON writers, AppendJSONSafe and JSONSafeWriter.

// Printable reports whether rune r, decoded from size bytes, may reach a
// terminal as it is.
func Printable(r rune, size int) bool {
	if r < utf8.RuneSelf {
		return r >= 0x20 && r < 0x7f
	}
	return !(r == utf8.RuneError && size == 1) && unicode.IsPrint(r)
}

// needsEscape reports whether s holds a control character, a
// non-printable rune or invalid UTF-8.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return true
		}
		if c >= utf8.RuneSelf {
			for j, w := i, 0; j < len(s); j += w {
				var r rune
				r, w = utf8.DecodeRuneInString(s[j:])
				if !Printable(r, w) {
					return true
				}
			}
			return false
		}
	}
	return false
}

// Safe returns s, or s with its control characters and non-printable
// runes escaped Go-style (\x1b, \u200b) when it holds any.
func Safe(s string) string {
	if !needsEscape(s) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// AppendSafe appends Safe(s) to b.
func AppendSafe(b []byte, s string) []byte {
	if !needsEscape(s) {
		return append(b, s...)
	}
	q := strconv.AppendQuote(b, s)
	// drop the quotes AppendQuote added around the escaped text
	q = q[:len(q)-1]
	return append(q[:len(b)], q[len(b)+1:]...)
}

// AppendJSONEscape appends r as JSON's \uXXXX escape (a surrogate pair
// beyond the BMP): how JSON writers escape what Printable refuses.
func AppendJSONEscape(b []byte, r rune) []byte {
	const hexDigits = "0123456789abcdef"
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		return AppendJSONEscape(AppendJSONEscape(b, r1), r2)
	}
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// AppendJSONSafe appends the JSON text src to b with every raw rune that
// Printable refuses escaped as \uXXXX (invalid bytes as \ufffd), except
// the JSON whitespace between values (space, tab, CR, LF). In valid JSON
// such runes can only stand inside strings, where the escape means the same
// string, so the result is the same JSON value, safe for a terminal.
func AppendJSONSafe(b, src []byte) []byte { return appendEscapedAs(b, src, true) }

// appendEscapedAs copies src to b escaping every rune Printable refuses but
// newlines: as JSON writes them (json: \uXXXX, invalid bytes \ufffd, tab
// and CR kept as the whitespace they are between values) or Go-style
// (\x1b, \u202e, \U0001xxxx, invalid bytes \xff).
func appendEscapedAs(b, src []byte, json bool) []byte {
	const hexDigits = "0123456789abcdef"
	start := 0
	for i := 0; i < len(src); {
		c := src[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || json && (c == '\t' || c == '\r') {
			i++
			continue
		}
		r, w := rune(c), 1
		if c >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(src[i:])
			if Printable(r, w) {
				i += w
				continue
			}
		}
		b = append(b, src[start:i]...)
		invalid := r == utf8.RuneError && w == 1
		switch {
		case json && invalid:
			b = append(b, `\ufffd`...)
		case json:
			b = AppendJSONEscape(b, r)
		case r < utf8.RuneSelf || invalid:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case r > 0xffff:
			b = append(b, '\\', 'U')
			for s := 28; s >= 0; s -= 4 {
				b = append(b, hexDigits[r>>uint(s)&0xf])
			}
		default:
			b = append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		}
		i += w
		start = i
	}
	return append(b, src[start:]...)
}

// JSONSafeWriter returns a writer that passes JSON text to w through
// AppendJSONSafe. Each Write must hold whole runes (JSON encoders write
// whole values).
func JSONSafeWriter(w io.Writer) io.Writer { return &jsonSafe{w: w} }

type jsonSafe struct {
	w   io.Writer
	buf []byte
}

func (j *jsonSafe) Write(p []byte) (int, error) {
	j.buf = AppendJSONSafe(j.buf[:0], p)
	if _, err := j.w.Write(j.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SafeLines is Safe for text of several lines (an error with a caret line
// under it): each line is made safe and the line breaks kept.
func SafeLines(s string) string {
	if !needsEscape(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Safe(l)
	}
	return strings.Join(lines, "\n")
}

// AppendEscaped appends src to b with every rune Printable refuses, but
// newlines, escaped Go-style (\x1b, \u202e, invalid bytes as \xff), and
// everything else as it is: for text that is already quoted the way Go
// and the protobuf text format quote (prototext leaves format characters
// such as bidirectional overrides raw), where such an escape means the
// same character.
func AppendEscaped(b, src []byte) []byte { return appendEscapedAs(b, src, false) }
