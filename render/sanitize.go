package render

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Strings from the wire (topics, names, versions, error messages, problem
// details quoting them) can hold terminal control sequences; a crafted
// capture must not be able to drive the terminal that shows pulsarscope's
// text output. Safe and AppendSafe escape them.

// needsEscape reports whether s holds a control character, a
// non-printable rune or invalid UTF-8.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return true
		}
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if r == utf8.RuneError || !unicode.IsPrint(r) {
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
