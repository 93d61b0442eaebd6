// Package chunked is a list of values kept in blocks of a fixed size
// instead of one array: it grows without copying what it holds (an array
// grown by append copies it again at every growth, into fresh memory,
// for about five times the values kept), and the oldest values can be
// dropped a block at a time. For the per-message state of a capture's
// long conversations: delivered message ids, latencies.
package chunked

// blockBits sets the values in a block: 1024.
const (
	blockBits = 10
	blockLen  = 1 << blockBits
)

// List is a list of values, the oldest first. The zero List is empty and
// ready to use. A pointer returned by At is valid until the next Push or
// DropFirst (the first block moves while it grows).
type List[T any] struct {
	blocks [][]T // all full but the last; blocks[0] from start
	start  int   // position of the oldest value in blocks[0]
	n      int
	spare  []T // a block emptied by DropFirst, for the next one
}

// Len is the number of values.
func (l *List[T]) Len() int { return l.n }

// At is the i-th value, the oldest first (0 <= i < Len).
func (l *List[T]) At(i int) *T {
	j := l.start + i
	return &l.blocks[j>>blockBits][j&(blockLen-1)]
}

// Push adds v after the newest value. The first block grows by doubling
// from 4 values to a full block, so a short list stays small.
func (l *List[T]) Push(v T) {
	if len(l.blocks) == 0 {
		b := l.spare
		if b == nil {
			b = make([]T, 0, 4)
		}
		l.blocks, l.spare = append(l.blocks, b), nil
	}
	last := &l.blocks[len(l.blocks)-1]
	if len(*last) == cap(*last) {
		if c := cap(*last); c < blockLen {
			// The first block, growing: positions in it stay.
			nb := make([]T, len(*last), min(2*c, blockLen))
			copy(nb, *last)
			*last = nb
		} else {
			b := l.spare
			if b == nil {
				b = make([]T, 0, blockLen)
			}
			l.blocks, l.spare = append(l.blocks, b), nil
			last = &l.blocks[len(l.blocks)-1]
		}
	}
	*last = append(*last, v)
	l.n++
}

// DropFirst drops the oldest value (Len > 0).
func (l *List[T]) DropFirst() {
	var zero T
	*l.At(0) = zero
	l.start++
	l.n--
	if l.start == blockLen {
		l.spare = l.blocks[0][:0]
		l.blocks[0] = nil
		l.blocks = l.blocks[1:]
		l.start = 0
	}
}

// Blocks appends the blocks the values lie in, the oldest first, to dst:
// read them there, without copying. They are valid until the next Push
// or DropFirst.
func (l *List[T]) Blocks(dst [][]T) [][]T {
	for k, b := range l.blocks {
		if k == 0 {
			b = b[l.start:]
		}
		dst = append(dst, b)
	}
	return dst
}
