package chunked

import (
	"math/rand"
	"slices"
	"testing"
)

// TestList compares a List with a plain slice through pushes and drops
// that cross many blocks, for lists that stay short, grow long, or are
// kept at a length by dropping.
func TestList(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps int
		keep  int // drop the oldest beyond this length
		drop  int // also drop at random, one step in drop (0: never)
	}{
		{"short", 10, 1 << 30, 0},
		{"first block", blockLen, 1 << 30, 0},
		{"long", 5*blockLen + 17, 1 << 30, 0},
		{"capped", 6 * blockLen, blockLen + 3, 0},
		{"capped small", 4 * blockLen, 5, 0},
		{"random drops", 8 * blockLen, 1 << 30, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(tc.steps)))
			var l List[int]
			var model []int
			for i := 0; i < tc.steps; i++ {
				l.Push(i)
				model = append(model, i)
				for l.Len() > tc.keep || tc.drop > 0 && l.Len() > 0 && r.Intn(tc.drop) == 0 {
					l.DropFirst()
					model = model[1:]
				}
				if l.Len() != len(model) {
					t.Fatalf("step %d: Len %d, want %d", i, l.Len(), len(model))
				}
				if len(model) > 0 {
					for _, j := range []int{0, len(model) / 2, len(model) - 1, r.Intn(len(model))} {
						if got := *l.At(j); got != model[j] {
							t.Fatalf("step %d: At(%d) = %d, want %d", i, j, got, model[j])
						}
					}
				}
			}
			if got := slices.Concat(l.Blocks(nil)...); !slices.Equal(got, model) {
				t.Fatalf("Blocks: %d values, want %d", len(got), len(model))
			}
			if len(l.blocks) > 1 && cap(l.blocks[0]) != blockLen {
				t.Errorf("the first of %d blocks holds %d values, not a block", len(l.blocks), cap(l.blocks[0]))
			}
		})
	}
}

// TestListFullBlocks: once the first block is full, values stay where
// they are while the list grows.
func TestListFullBlocks(t *testing.T) {
	var l List[int]
	for i := 0; i < blockLen; i++ {
		l.Push(i)
	}
	p := l.At(7)
	for i := 0; i < 3*blockLen; i++ {
		l.Push(i)
	}
	if p != l.At(7) || *p != 7 {
		t.Fatalf("a value of a full block moved or changed: %d", *p)
	}
}
