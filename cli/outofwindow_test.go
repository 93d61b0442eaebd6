package cli

import (
	"strings"
	"testing"
)

// TestSegmentOutOfWindow: a client segment whose sequence number is 2^31
// (then 2^30 + 1) away from the stream's, in the middle of a real
// conversation, is named (segment-out-of-window, with its size) and
// ignored: every real frame decoded, no byte reported lost.
func TestSegmentOutOfWindow(t *testing.T) {
	for _, jump := range []uint32{1 << 31, 1<<30 + 1, 1<<32 - (1<<30 + 1)} { // the last: 2^30 + 1 behind
		v, fr := baseConv(t, 1000)
		seq := v.cseq
		v.cseq += jump
		v.send(0, fr[0][1])
		v.cseq = seq
		v.rest(fr)
		v.fin()
		name := writeTemp(t, "jump.pcap", writePcap(t, v.recs, 262144))
		out, errOut, code := run(t, "read", "-o", "json", "--events", name)
		if code != ExitOK {
			t.Fatalf("jump %d: exit %d: %s", jump, code, errOut)
		}
		if n := strings.Count("\n"+out, "\n{\"n\":"); n != realFrameCount(fr) {
			t.Errorf("jump %d: %d frames, want %d", jump, n, realFrameCount(fr))
		}
		want := `"event":"out-of-window"`
		if strings.Count(out, want) != 1 || !strings.Contains(out, `"code":"segment-out-of-window","detail":"segment of `+itoa(len(fr[0][1]))+` bytes`) {
			t.Errorf("jump %d: no out-of-window event for the %d-byte segment", jump, len(fr[0][1]))
		}
		if strings.Contains(out, `"bytes-lost"`) {
			t.Errorf("jump %d: bytes reported lost", jump)
		}
	}
}
