package diff

import (
	"sort"
	"strconv"
	"strings"
)

// stream is a Stream being recorded, with its renumbering state.
type stream struct {
	key   string
	topic string
	cmds  []Command
	// order holds each command's sort key: the arrival index of the
	// request it answers (or its own), then its own arrival index.
	order [][2]int32
	// msgs and names renumber message ids and names in order of first
	// appearance within the stream.
	msgs  map[[2]uint64]int
	names map[string]map[string]int
	acks  ackSet
}

func newStream(key, topic string) *stream {
	return &stream{key: key, topic: topic, msgs: map[[2]uint64]int{}, names: map[string]map[string]int{}}
}

// add appends a command; anchor is the arrival index of the request it
// answers, or -1.
func (s *stream) add(c Command, anchor int) int {
	i := len(s.cmds)
	if anchor < 0 {
		anchor = i
	}
	s.cmds = append(s.cmds, c)
	s.order = append(s.order, [2]int32{int32(anchor), int32(i)})
	return i
}

// commands returns the commands with responses right after their requests
// (stable otherwise).
func (s *stream) commands() []Command {
	sorted := true
	for i := 1; i < len(s.order); i++ {
		if s.order[i][0] < s.order[i-1][0] {
			sorted = false
			break
		}
	}
	if sorted {
		return s.cmds
	}
	idx := make([]int, len(s.cmds))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		oa, ob := s.order[idx[a]], s.order[idx[b]]
		if oa[0] != ob[0] {
			return oa[0] < ob[0]
		}
		return oa[1] < ob[1]
	})
	out := make([]Command, len(s.cmds))
	for i, j := range idx {
		out[i] = s.cmds[j]
	}
	return out
}

// messageID returns the renumbered label of a message id: m1, m2…
func (s *stream) messageID(ledger, entry uint64) string {
	k := [2]uint64{ledger, entry}
	n, ok := s.msgs[k]
	if !ok {
		n = len(s.msgs) + 1
		s.msgs[k] = n
	}
	return "m" + strconv.Itoa(n)
}

// name returns the renumbered form of a name field's value: <1>, <2>…
func (s *stream) name(field, v string) string {
	m := s.names[field]
	if m == nil {
		m = map[string]int{}
		s.names[field] = m
	}
	n, ok := m[v]
	if !ok {
		n = len(m) + 1
		m[v] = n
	}
	return "<" + strconv.Itoa(n) + ">"
}

// ackSet collects what a consumer's ACK frames acknowledged.
type ackSet struct {
	seen       bool
	individual map[string]bool
	cumulative string
	cumOrder   int
	// hasCumulative is set once a cumulative ack was seen.
	hasCumulative bool
}

func (a *ackSet) add(cumulative bool, label string, order int) {
	a.seen = true
	if cumulative {
		a.hasCumulative = true
		if label != "" && order >= a.cumOrder {
			a.cumulative, a.cumOrder = label, order
		}
		return
	}
	if a.individual == nil {
		a.individual = map[string]bool{}
	}
	if label != "" {
		a.individual[label] = true
	}
}

// summary renders the set as one ACK command's fields: individual acks as
// ranges of renumbered ids ("m1-m10,m12"), the last cumulative ack.
func (a *ackSet) summary() []byte {
	b := []byte(`{"summary":true`)
	if a.individual != nil {
		b = append(b, `,"individual":`...)
		if len(a.individual) == 0 {
			b = append(b, "true"...) // message ids ignored
		} else {
			b = appendString(b, compressLabels(a.individual))
		}
	}
	if a.cumulative != "" {
		b = append(b, `,"cumulative":`...)
		b = appendString(b, a.cumulative)
	} else if a.hasCumulative {
		b = append(b, `,"cumulative":true`...) // message ids ignored
	}
	return append(b, '}')
}

// compressLabels sorts labels (mN, mN.B, L:E) and writes runs of plain mN
// as ranges.
func compressLabels(set map[string]bool) string {
	var nums []int
	var other []string
	for l := range set {
		if n, err := strconv.Atoi(strings.TrimPrefix(l, "m")); err == nil && strings.HasPrefix(l, "m") {
			nums = append(nums, n)
		} else {
			other = append(other, l)
		}
	}
	sort.Ints(nums)
	sort.Slice(other, func(i, j int) bool { return labelLess(other[i], other[j]) })
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, "m"+strconv.Itoa(nums[i])+"-m"+strconv.Itoa(nums[j]))
		} else {
			parts = append(parts, "m"+strconv.Itoa(nums[i]))
		}
		i = j + 1
	}
	return strings.Join(append(parts, other...), ",")
}

// labelLess orders labels naturally: runs of digits by value ("7:2"
// before "7:10"), the rest as text.
func labelLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digitRun returns the length of s's leading run of digits.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func leadingNumber(s string) int {
	s = strings.TrimPrefix(s, "m")
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(s[:end])
	return n
}
