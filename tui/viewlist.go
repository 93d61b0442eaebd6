package tui

import "sort"

// viewList maps timeline positions to frame indexes: every frame (no
// filter) or the matching frames in order.
type viewList struct {
	filtered bool
	n        int     // frames shown when not filtered
	idx      []int32 // matching frame indexes when filtered (append-only)
}

func (v *viewList) len() int {
	if v.filtered {
		return len(v.idx)
	}
	return v.n
}

// at returns the frame index at position pos.
func (v *viewList) at(pos int) int {
	if v.filtered {
		return int(v.idx[pos])
	}
	return pos
}

func (v *viewList) setAll(n int) { *v = viewList{n: n} }

// find returns the position of frame i, or of the first frame after it
// (len when none), and whether i itself is in the view.
func (v *viewList) find(i int) (int, bool) {
	if !v.filtered {
		if i < v.n {
			return i, true
		}
		return v.n, false
	}
	p := sort.Search(len(v.idx), func(k int) bool { return int(v.idx[k]) >= i })
	return p, p < len(v.idx) && int(v.idx[p]) == i
}
