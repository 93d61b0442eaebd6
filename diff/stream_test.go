package diff

import (
	"strings"
	"testing"
)

// TestInterleaving: responses are placed right after their requests, so
// pipelined requests read the same whatever the timing.
func TestInterleaving(t *testing.T) {
	// Each step: command name and the arrival index of the request it
	// answers (-1: not a response).
	type step struct {
		name   string
		anchor int
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"in order", []step{{"SEND0", -1}, {"R0", 0}, {"SEND1", -1}, {"R1", 2}}, "SEND0 R0 SEND1 R1"},
		{"pipelined", []step{{"SEND0", -1}, {"SEND1", -1}, {"R0", 0}, {"R1", 1}}, "SEND0 R0 SEND1 R1"},
		{"answers reversed", []step{{"L0", -1}, {"L1", -1}, {"R1", 1}, {"R0", 0}}, "L0 R0 L1 R1"},
		{"unpaired kept in place", []step{{"FLOW", -1}, {"MSG", -1}, {"SEEK", -1}, {"MSG2", -1}, {"SUCCESS", 2}}, "FLOW MSG SEEK SUCCESS MSG2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStream("s", "")
			for _, s := range tt.steps {
				st.add(Command{Type: s.name}, s.anchor)
			}
			var got []string
			for _, c := range st.commands() {
				got = append(got, c.Type)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("got %s, want %s", g, tt.want)
			}
		})
	}
}

// TestCompressLabels: acknowledged ids are written as ranges.
func TestCompressLabels(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"m1", "m2", "m3"}, "m1-m3"},
		{[]string{"m3", "m1", "m5", "m4"}, "m1,m3-m5"},
		{[]string{"m2.1", "m2.0", "m1"}, "m1,m2.0,m2.1"},
		{[]string{"7:10", "7:2"}, "7:2,7:10"},
	}
	for _, tt := range tests {
		set := map[string]bool{}
		for _, l := range tt.in {
			set[l] = true
		}
		if got := compressLabels(set); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.in, got, tt.want)
		}
	}
}
