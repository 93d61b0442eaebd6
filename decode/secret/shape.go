package secret

import (
	"bytes"
	"strings"
)

// Credentials by shape. A JSON Web Token is three base64url parts joined
// by '.', the first starting "eyJ" (the base64url of `{"`); the third (the
// signature) may be empty (alg "none"). A bearer token is the run of
// non-space characters after "Bearer ", "bearer " or "BEARER " (the
// spellings clients send; the check for "earer" or "EARER" is also what
// lets HasCredential skip a string without a scan of its own).

const jwtStart = "eyJ"

func isB64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '='
}

// run returns the length of the run of base64url characters at s[i:].
func run[T string | []byte](s T, i int) int {
	j := i
	for j < len(s) && isB64URL(s[j]) {
		j++
	}
	return j - i
}

// jwtAt returns the length of the JWT starting at s[i:], or 0.
func jwtAt[T string | []byte](s T, i int) int {
	j := i + run(s, i)
	if j-i < len(jwtStart)+1 || j >= len(s) || s[j] != '.' {
		return 0
	}
	j++
	k := j + run(s, j)
	if k == j || k >= len(s) || s[k] != '.' {
		return 0
	}
	k++
	return k + run(s, k) - i
}

// bearerAt returns, for "Bearer " at s[i:], where its value starts and how
// long it is (0: no value).
func bearerAt[T string | []byte](s T, i int) (start, n int) {
	start = i + len("Bearer ")
	for start < len(s) && s[start] == ' ' {
		start++
	}
	if hasPrefixAt(s, start, "<redacted ") { // redacted already
		return start, 0
	}
	j := start
	for j < len(s) && s[j] > ' ' && s[j] != '"' && s[j] != '\'' && s[j] != ',' && s[j] != ';' && s[j] < 0x7f {
		j++
	}
	return start, j - start
}

// Spans appends to dst the byte ranges [start, end) of s that are
// credentials by shape, in order and not overlapping.
func Spans[T string | []byte](dst [][2]int, s T) [][2]int {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 'e' && hasPrefixAt(s, i, jwtStart) && (i == 0 || !isB64URL(s[i-1])):
			if n := jwtAt(s, i); n > 0 {
				dst = append(dst, [2]int{i, i + n})
				i += n
				continue
			}
		case (c == 'B' || c == 'b') && (hasPrefixAt(s, i+1, "earer ") || hasPrefixAt(s, i+1, "EARER ")):
			if start, n := bearerAt(s, i); n > 0 {
				dst = append(dst, [2]int{start, start + n})
				i = start + n
				continue
			}
		}
		i++
	}
	return dst
}

func hasPrefixAt[T string | []byte](s T, i int, p string) bool {
	return len(s)-i >= len(p) && string(s[i:i+len(p)]) == p
}

// HasCredential reports whether s holds a credential by shape (a JWT or a
// bearer token). It allocates nothing and costs a scan for "eyJ" and
// "earer" when s holds neither.
func HasCredential(s string) bool {
	if !strings.Contains(s, jwtStart) && !strings.Contains(s, "earer") && !strings.Contains(s, "EARER") {
		return false
	}
	return len(Spans(nil, s)) > 0
}

// HasCredentialBytes is HasCredential of string(b), without the copy.
func HasCredentialBytes(b []byte) bool {
	if !bytes.Contains(b, []byte(jwtStart)) && !bytes.Contains(b, []byte("earer")) && !bytes.Contains(b, []byte("EARER")) {
		return false
	}
	return len(Spans(nil, b)) > 0
}

// Scrub returns s with every credential by shape replaced by Marker(n); s
// itself when it holds none.
func Scrub(s string) string {
	if !HasCredential(s) {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range Spans(nil, s) {
		b.WriteString(s[last:sp[0]])
		b.WriteString(Marker(sp[1] - sp[0]))
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
