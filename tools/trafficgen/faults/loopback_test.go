package faults

import (
	"bytes"
	"os"
	"slices"
	"testing"
)

// TestLoopbackCapture applies the faults of faults.sh to a small capture of
// the real Pulsar Go client talking to the lab broker on loopback
// (testdata/loopback-basic.pcap, one connection, checksums valid).
func TestLoopbackCapture(t *testing.T) {
	in, err := os.ReadFile("testdata/loopback-basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	base := readBytes(t, in)
	if bad := badCRCs(base); len(bad) != 0 {
		t.Fatalf("base has bad CRCs: %v", bad)
	}
	tests := []struct {
		specs    []string
		problems []string
		badCRC   int // frames whose CRC32-C must be wrong afterwards
	}{
		{[]string{"drop:conn=1,dir=c2s,type=SEND,nth=2"}, []string{ProblemBytesLost}, 0},
		{[]string{"reorder:conn=1,dir=c2s,type=FLOW,nth=1"}, []string{}, 0},
		{[]string{"duplicate:conn=1,dir=s2c,type=MESSAGE,nth=1"}, []string{}, 0},
		{[]string{"cut-start:conn=1,dir=c2s,type=SEND,nth=1"}, []string{ProblemBytesSkipped}, 0},
		{[]string{"corrupt-payload:conn=1,dir=c2s,type=SEND,nth=2"}, []string{ProblemChecksumMismatch}, 1},
		{[]string{"corrupt-payload:conn=1,dir=s2c,type=MESSAGE,nth=3,at=payload"}, []string{ProblemChecksumMismatch}, 1},
		{[]string{"bad-totalsize:conn=1,dir=c2s,type=SEND,nth=3"}, []string{ProblemBytesSkipped, ProblemFrameTooLarge}, 0},
		{[]string{"bad-totalsize:type=SEND,nth=3,value=100000"}, []string{ProblemTruncatedFrame}, 0},
		{[]string{"port-rewrite:from=6650,to=16650"}, []string{}, 0},
		{[]string{"ipv6:mode=loopback"}, []string{}, 0},
		{[]string{"vlan:id=100"}, []string{}, 0},
		{[]string{"pcapng"}, []string{}, 0},
		{[]string{"ipv6:mode=ula", "vlan:id=200", "pcapng"}, []string{}, 0},
		{[]string{"duplicate:type=SEND,nth=1", "corrupt-payload:type=SEND,nth=1", "drop:type=SEND,nth=5"}, []string{ProblemBytesLost, ProblemChecksumMismatch}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.specs[0], func(t *testing.T) {
			out, es := applySpecs(t, in, tc.specs...)
			again, _ := applySpecs(t, in, tc.specs...)
			if !bytes.Equal(out, again) {
				t.Error("output is not deterministic")
			}
			oc := readBytes(t, out)
			checkChecksums(t, oc)
			if got := Problems(es); !slices.Equal(got, tc.problems) {
				t.Errorf("problems %v, want %v", got, tc.problems)
			}
			if bad := badCRCs(oc); len(bad) != tc.badCRC {
				t.Errorf("bad CRCs %v, want %d", bad, tc.badCRC)
			}
		})
	}
}
