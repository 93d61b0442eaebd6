package diff

import (
	"math/rand"
	"strings"
	"testing"
)

// apply checks that script turns a into b and returns its edit count.
func apply(t *testing.T, a, b []string, script []edit) int {
	t.Helper()
	var out []string
	edits, ai := 0, 0
	for _, e := range script {
		switch e.kind {
		case opEqual:
			if e.a != ai || a[e.a] != b[e.b] {
				t.Fatalf("bad equal step %+v", e)
			}
			out = append(out, a[e.a])
			ai++
		case opDelete:
			if e.a != ai {
				t.Fatalf("delete out of order %+v (at %d)", e, ai)
			}
			ai++
			edits++
		case opInsert:
			out = append(out, b[e.b])
			edits++
		}
	}
	if ai != len(a) || strings.Join(out, "\n") != strings.Join(b, "\n") {
		t.Fatalf("script does not turn %q into %q: got %q", a, b, out)
	}
	return edits
}

func strEq(x, y string) bool { return x == y }

func strKey(x string) string { return x }

func TestDiffSeq(t *testing.T) {
	tests := []struct {
		name      string
		a, b      string
		wantEdits int
	}{
		{"equal", "abc", "abc", 0},
		{"empty", "", "", 0},
		{"insert-all", "", "abc", 3},
		{"delete-all", "abc", "", 3},
		{"insert-middle", "abcd", "abXcd", 1},
		{"replace", "abcd", "aXYd", 4},
		{"myers-paper", "abcabba", "cbabac", 5},
		{"move", "abcdef", "bcdefa", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := split(tt.a), split(tt.b)
			script, approx := diffSeq(a, b, strEq, strKey, workLimit)
			if approx {
				t.Fatal("approximate on a small input")
			}
			if got := apply(t, a, b, script); got != tt.wantEdits {
				t.Errorf("edits = %d, want %d", got, tt.wantEdits)
			}
		})
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "")
}

// TestDiffSeqRandom checks scripts on random sequences, and the wholesale
// fallback when the work limit is hit.
func TestDiffSeqRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		a := make([]string, r.Intn(40))
		b := make([]string, r.Intn(40))
		for j := range a {
			a[j] = string(rune('a' + r.Intn(4)))
		}
		for j := range b {
			b[j] = string(rune('a' + r.Intn(4)))
		}
		script, _ := diffSeq(a, b, strEq, strKey, workLimit)
		apply(t, a, b, script)
		script, _ = diffSeq(a, b, strEq, strKey, 1)
		apply(t, a, b, script)
	}
	long := make([]string, 5000)
	other := make([]string, 5000)
	for j := range long {
		long[j], other[j] = "x"+string(rune(j)), "y"+string(rune(j))
	}
	script, approx := diffSeq(long, other, strEq, strKey, 1000)
	if !approx {
		t.Error("no fallback past the work limit")
	}
	if got := apply(t, long, other, script); got != 10000 {
		t.Errorf("fallback edits = %d, want 10000", got)
	}
}
