package diff

import (
	"math"
	"testing"
)

// TestMannWhitney checks the U test against values worked by hand (and
// by scipy.stats.mannwhitneyu with method="asymptotic", alternative
// "less" for a, use_continuity=True): identical samples are not
// significant, a shift is, ties are handled, and sampling keeps the
// distribution.
func TestMannWhitney(t *testing.T) {
	seq := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		a, b   []int64
		lo, hi float64
	}{
		{"same values", seq(100, 30), seq(100, 30), 0.45, 0.55},
		{"b shifted up by all", seq(100, 30), seq(200, 30), 0, 1e-9},
		{"b shifted down", seq(200, 30), seq(100, 30), 1 - 1e-9, 1},
		// 100..119 against 105..124: 15 values tied across the sides.
		// U_b = (5+6+…+19) + 15×0.5 + 5×20 = 287.5; mean 200; sd with
		// the tie correction sqrt(400/12 × (41 − 15×6/(40×39))) = 36.94;
		// z = (287.5 − 200 − 0.5)/36.94 = 2.355: p = 0.00926.
		{"partial shift", seq(100, 20), seq(105, 20), 0.0092, 0.0093},
		{"all tied", []int64{5, 5, 5, 5}, []int64{5, 5, 5, 5}, 1, 1},
	} {
		p := mannWhitneyGreater(tc.a, tc.b)
		if math.IsNaN(p) || p < tc.lo || p > tc.hi {
			t.Errorf("%s: p = %g, want in [%g, %g]", tc.name, p, tc.lo, tc.hi)
		}
	}
	big := seq(0, 5000)
	s := sampleLatencies(big)
	if len(s) != maxLatencySamples || s[0] != 0 || s[len(s)-1] != 4999 || s[len(s)/2] < 2400 || s[len(s)/2] > 2600 {
		t.Errorf("samples: %d, first %d, last %d, middle %d", len(s), s[0], s[len(s)-1], s[len(s)/2])
	}
}
