package diff

import (
	"math"
	"slices"
)

// DefaultLatencyMinSamples is the fewest latencies a request type needs on
// each side for a latency regression (Options.LatencyMinSamples).
const DefaultLatencyMinSamples = 20

// LatencyAlpha is the false-positive rate of the latency test: a
// candidate is slower only when a one-sided Mann-Whitney U test says so at
// this level (two runs of the same code are reported slower in about 1 of
// 100 request types compared).
const LatencyAlpha = 0.01

// maxLatencySamples bounds the latencies a transcript keeps per request
// type: beyond it, evenly spaced ranks of the sorted list (the
// distribution, at that resolution).
const maxLatencySamples = 1000

// sampleLatencies returns at most maxLatencySamples of sorted, evenly
// spaced by rank.
func sampleLatencies(sorted []int64) []int64 {
	if len(sorted) <= maxLatencySamples {
		return slices.Clone(sorted)
	}
	out := make([]int64, maxLatencySamples)
	for i := range out {
		out[i] = sorted[i*(len(sorted)-1)/(maxLatencySamples-1)]
	}
	return out
}

// mannWhitneyGreater returns the one-sided p-value of the Mann-Whitney U
// test that values in b tend to be greater than those in a (normal
// approximation with continuity and tie corrections; meant for 20 or more
// values on each side). a and b need not be sorted.
func mannWhitneyGreater(a, b []int64) float64 {
	type obs struct {
		v    int64
		side int
	}
	all := make([]obs, 0, len(a)+len(b))
	for _, v := range a {
		all = append(all, obs{v, 0})
	}
	for _, v := range b {
		all = append(all, obs{v, 1})
	}
	slices.SortFunc(all, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	n1, n2 := float64(len(a)), float64(len(b))
	n := n1 + n2
	var rankB, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j, averaged
		for k := i; k < j; k++ {
			if all[k].side == 1 {
				rankB += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u := rankB - n2*(n2+1)/2 // U of b: pairs where b's value is greater
	mean := n1 * n2 / 2
	sd := math.Sqrt(n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1))))
	if sd == 0 {
		return 1
	}
	z := (u - mean - 0.5) / sd
	return 0.5 * math.Erfc(z/math.Sqrt2)
}
