package track

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestDeliveriesFind checks deliveries against a plain model (the items
// kept, searched one by one) on id sequences in order, in order with
// repeats, out of order from the start and out of order late, with
// evictions.
func TestDeliveriesFind(t *testing.T) {
	tests := []struct {
		name  string
		next  func(r *rand.Rand, i int) msgKey
		limit int
	}{
		{"increasing", func(_ *rand.Rand, i int) msgKey { return msgKey{uint64(i / 50), uint64(i % 50)} }, 1 << 30},
		{"increasing, evicted", func(_ *rand.Rand, i int) msgKey { return msgKey{7, uint64(i)} }, 40},
		{"redeliveries", func(r *rand.Rand, i int) msgKey {
			if i > 20 && r.Intn(5) == 0 {
				return msgKey{1, uint64(r.Intn(i))}
			}
			return msgKey{1, uint64(i)}
		}, 1 << 30},
		{"random", func(r *rand.Rand, _ int) msgKey { return msgKey{uint64(r.Intn(3)), uint64(r.Intn(200))} }, 1 << 30},
		{"late disorder, evicted", func(r *rand.Rand, i int) msgKey {
			if i > 300 {
				return msgKey{2, uint64(r.Intn(400))}
			}
			return msgKey{2, uint64(i)}
		}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(1))
			d := &deliveries{}
			var model []delivery
			found := 0
			for i := 0; i < 3000; i++ { // ids across blocks
				k := tc.next(r, i)
				got, want := findChecked(t, fmt.Sprintf("step %d", i), d, model, k)
				if want >= 0 {
					found++
					got.n, model[want].n = i, i // a redelivery, as onMessage does
					continue
				}
				d.add(k, i)
				model = append(model, delivery{k: k, n: i})
				if d.len() > tc.limit {
					d.evictOldest()
					model = model[1:]
				}
				if d.len() != len(model) {
					t.Fatalf("step %d: %d items, model %d", i, d.len(), len(model))
				}
			}
			if found == 0 && tc.name != "increasing" && tc.name != "increasing, evicted" {
				t.Errorf("no id found again: the sequence tests nothing")
			}
		})
	}
}

// TestDeliveriesAcks checks finding delivered ids as acks do (in delivery
// order, in runs, lagging behind the deliveries, sometimes out of order or
// already evicted) while ids are delivered in order past the cap, against
// the plain model: the ids move back within their array and the hint of
// the next id must follow them.
func TestDeliveriesAcks(t *testing.T) {
	for _, limit := range []int{20, 40, 1000} {
		r := rand.New(rand.NewSource(int64(limit)))
		d := &deliveries{}
		var model []delivery
		next, cursor := 0, 0
		lookup := func(step int, k msgKey) {
			findChecked(t, fmt.Sprintf("limit %d, step %d", limit, step), d, model, k)
		}
		for step := 0; step < 5000; step++ {
			for n := r.Intn(4); n > 0; n-- {
				k := msgKey{3, uint64(next)}
				d.add(k, next)
				model = append(model, delivery{k: k, n: next})
				next++
				if d.len() > limit {
					d.evictOldest()
					model = model[1:]
				}
			}
			switch r.Intn(10) {
			case 0: // an id at random, maybe evicted, maybe not yet delivered
				lookup(step, msgKey{3, uint64(r.Intn(next + 5))})
			case 1: // the cursor falls behind the evictions or jumps ahead
				cursor = max(0, next-r.Intn(2*limit))
			default: // a run of acks in order
				for n := r.Intn(6); n > 0 && cursor < next; n-- {
					lookup(step, msgKey{3, uint64(cursor)})
					cursor++
				}
			}
			if d.len() != len(model) {
				t.Fatalf("limit %d, step %d: %d items, model %d", limit, step, d.len(), len(model))
			}
		}
	}
}

// findChecked finds k in d and checks the result against the plain model
// (the ids kept, searched one by one): the delivery found, and k's index
// in the model (-1: absent).
func findChecked(t *testing.T, where string, d *deliveries, model []delivery, k msgKey) (*delivery, int) {
	t.Helper()
	want := -1
	for j := range model {
		if model[j].k == k {
			want = j
		}
	}
	got := d.find(k)
	switch {
	case want < 0 && got != nil:
		t.Fatalf("%s: %v found (frame %d), not delivered or evicted", where, k, got.n)
	case want >= 0 && (got == nil || got.n != model[want].n):
		t.Fatalf("%s: %v not found or wrong (%v), want frame %d", where, k, got, model[want].n)
	}
	return got, want
}
