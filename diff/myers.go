package diff

// opKind is one step of an edit script.
type opKind byte

const (
	opEqual  opKind = '='
	opDelete opKind = '-'
	opInsert opKind = '+'
)

// edit is one line of an edit script: a[A] kept or deleted, b[B] inserted.
type edit struct {
	kind opKind
	a, b int
}

// workLimit bounds (N+M)·D, the work of the Myers search, so that diffs of
// very different long sequences stay fast; past it the differing middle is
// reported as replaced wholesale.
const workLimit = 200_000_000

// diffSeq returns an edit script turning a into b: a shortest one (Myers'
// O(ND) algorithm) after stripping the common prefix and suffix, or, when
// that would take more than work steps, one that replaces the differing
// middle wholesale (approx is then true). eq compares elements; key gives
// equal elements equal keys (used only for the differing middle).
func diffSeq[T any, K comparable](a, b []T, eq func(x, y T) bool, key func(T) K, work int) (script []edit, approx bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && eq(a[pre], b[pre]) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && eq(a[len(a)-1-suf], b[len(b)-1-suf]) {
		suf++
	}
	script = make([]edit, 0, pre+suf)
	for i := 0; i < pre; i++ {
		script = append(script, edit{opEqual, i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(intern(ma, mb, key), work)
	if !ok {
		mid = mid[:0]
		for i := range ma {
			mid = append(mid, edit{opDelete, i, 0})
		}
		for j := range mb {
			mid = append(mid, edit{opInsert, len(ma), j})
		}
	}
	for _, e := range mid {
		script = append(script, edit{e.kind, e.a + pre, e.b + pre})
	}
	for i := 0; i < suf; i++ {
		script = append(script, edit{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return script, !ok
}

// interned holds two sequences with equal lines mapped to equal numbers.
type interned struct{ a, b []int32 }

func intern[T any, K comparable](a, b []T, key func(T) K) interned {
	ids := map[K]int32{}
	conv := func(s []T) []int32 {
		out := make([]int32, len(s))
		for i, x := range s {
			l := key(x)
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return interned{conv(a), conv(b)}
}

// myers finds a shortest edit script, keeping for backtracking the part of
// the furthest-reaching array each step used (O(D²) memory). It gives up
// (false) when (N+M)·D would exceed work (D is allowed at least 64).
func myers(in interned, work int) ([]edit, bool) {
	a, b := in.a, in.b
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		// Nothing in common: delete all of a, insert all of b.
		var script []edit
		for i := 0; i < n; i++ {
			script = append(script, edit{opDelete, i, 0})
		}
		for j := 0; j < m; j++ {
			script = append(script, edit{opInsert, n, j})
		}
		return script, true
	}
	limit := n + m
	if work/(n+m) < limit {
		limit = min(limit, max(work/(n+m), 64))
	}
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[off-d-1:off+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
	}
	return nil, false
}

// backtrack walks the snapshots back from (n, m) to (0, 0).
func backtrack(trace [][]int, n, m int) []edit {
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		snap := trace[d]
		at := func(k int) int { return snap[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{opEqual, x, y})
		}
		if d > 0 {
			if x == px {
				rev = append(rev, edit{opInsert, x, py})
			} else {
				rev = append(rev, edit{opDelete, px, y})
			}
		}
		x, y = px, py
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
