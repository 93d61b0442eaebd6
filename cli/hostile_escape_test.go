package cli

import (
	"os"
	"testing"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// TestHostileTerminalEscapes: strings from the wire (a topic, a producer
// name, an error message) carrying terminal control sequences (color,
// OSC title, BEL) never reach a text output raw: they are escaped (\x1b).
func TestHostileTerminalEscapes(t *testing.T) {
	const evil = "\x1b[31mRED\x1b]0;pwned\x07\x9b"
	v, _ := baseConv(t, 1000)
	v.send(0, frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_LOOKUP.Enum(),
		LookupTopic: &pulsarapi.CommandLookupTopic{Topic: ptr("persistent://a/b/" + evil), RequestId: ptr(uint64(100))}}))
	v.send(0, frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_PRODUCER.Enum(),
		Producer: &pulsarapi.CommandProducer{Topic: ptr("persistent://a/b/" + evil), ProducerId: ptr(uint64(1)), RequestId: ptr(uint64(101)), ProducerName: ptr(evil)}}))
	v.send(1, frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ERROR.Enum(),
		Error: &pulsarapi.CommandError{RequestId: ptr(uint64(101)), Error: pulsarapi.ServerError_UnknownError.Enum(), Message: ptr(evil)}}))
	v.fin()
	name := writeTemp(t, "esc.pcap", writePcap(t, v.recs, 262144))
	if dir := os.Getenv("PULSARSCOPE_KEEP_HOSTILE"); dir != "" {
		_ = os.WriteFile(dir+"/esc2.pcap", writePcap(t, v.recs, 262144), 0o644)
	}
	for _, args := range [][]string{{"read"}, {"read", "-V", "-x", "--events"}, {"read", "-2", "-V"}, {"stats"}} {
		code, out, _, _ := runMain(t, append(args, "--color", "never", name), "\x1b", "\x07", "\\x1b")
		if args[0] == "stats" {
			code, out, _, _ = runMain(t, append(args, name), "\x1b", "\x07", "\\x1b")
		}
		if code != ExitOK || out.found["\x1b"] > 0 || out.found["\x07"] > 0 {
			t.Errorf("%v: exit %d, raw ESC %d, BEL %d", args, code, out.found["\x1b"], out.found["\x07"])
		}
		if out.found["\\x1b"] == 0 {
			t.Errorf("%v: the escaped string is not shown", args)
		}
	}
}
