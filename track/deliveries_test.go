package track

import (
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
			for i := 0; i < 600; i++ {
				k := tc.next(r, i)
				want := -1
				for j := range model {
					if model[j].k == k {
						want = j
					}
				}
				got := d.find(k)
				switch {
				case want < 0 && got != nil:
					t.Fatalf("step %d: %v found (frame %d), not delivered", i, k, got.n)
				case want >= 0 && (got == nil || got.n != model[want].n):
					t.Fatalf("step %d: %v not found or wrong (%v), want frame %d", i, k, got, model[want].n)
				case want >= 0:
					found++
					got.n, model[want].n = i, i // a redelivery, as onMessage does
					continue
				}
				d.add(k, i)
				model = append(model, delivery{k: k, n: i})
				if len(d.items) > tc.limit {
					d.evictOldest()
					model = model[1:]
				}
				if len(d.items) != len(model) {
					t.Fatalf("step %d: %d items, model %d", i, len(d.items), len(model))
				}
			}
			if found == 0 && tc.name != "increasing" && tc.name != "increasing, evicted" {
				t.Errorf("no id found again: the sequence tests nothing")
			}
		})
	}
}
