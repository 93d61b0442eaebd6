package filter

import (
	"context"
	"testing"

	"github.com/pulsarscope/pulsarscope/capture"
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
	"github.com/pulsarscope/pulsarscope/reassembly"
	"github.com/pulsarscope/pulsarscope/track"
)

// fuzzFilters are the documented examples and the tests' filters.
var fuzzFilters = []string{
	`type == "SEND" && latency_ms > 5`,
	`type == "SEND_RECEIPT" && latency_ms > 5`,
	`"checksum-mismatch" in problems`,
	`len(problems) > 0`,
	`topic contains "orders"`,
	`request == "LOOKUP" && latency_us > 1000`,
	`type in ["ERROR", "SEND_ERROR"] || error != ""`,
	`cmd.partitions > 0`,
	`cmd.message_id == "1:2"`,
	`type == "(gap)" || type == "(close)"`,
	`dir == "c2s" && conn == 1 && n < 10 && size > 100`,
	`sub_type == "Shared" && subscription startsWith "s"`,
	`producer_id >= 0 && consumer_id == -1 && sequence_id != 3 && request_id > 0`,
	`entries > 1 && producer matches "^p" && consumer == ""`,
	`response == "PRODUCER_SUCCESS"`,
	`type = "SEND"`,
	`nosuch == 1`,
	`type`,
}

// collected is what a real capture gives a filter: tracked frames,
// events and findings (retained).
type collected struct {
	frames   []*decode.Frame
	infos    []*track.Info
	events   []*decode.Event
	findings []*track.Finding
}

func (c *collected) Frame(f *decode.Frame, info *track.Info) {
	c.frames = append(c.frames, f)
	c.infos = append(c.infos, info)
}
func (c *collected) Event(e *decode.Event)     { c.events = append(c.events, e) }
func (c *collected) Finding(fd *track.Finding) { c.findings = append(c.findings, fd) }

func collect(tb testing.TB, names ...string) *collected {
	c := &collected{}
	for _, name := range names {
		src, err := capture.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		sd := decode.NewStreamDecoder(track.New(c, track.Options{}), decode.Options{Retain: true})
		_ = reassembly.New(sd, reassembly.Options{}).Run(context.Background(), src)
		src.Close()
	}
	return c
}

// FuzzCompile compiles arbitrary filter sources; whatever compiles is run
// on every frame, event and finding of real captures: no panic, and
// run-time errors are returned, not raised.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzFilters {
		f.Add(s)
	}
	c := collect(f, "../../testdata/pcaps/subscriptions.pcap", "../../testdata/pcaps/errors.pcap", "../../testdata/pcaps/basic-drop.pcap")
	f.Fuzz(func(t *testing.T, src string) {
		flt, err := Compile(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error of type %T", err)
			}
			_ = err.Error()
			return
		}
		if flt.String() != src {
			t.Fatalf("String() = %q", flt.String())
		}
		for i, fr := range c.frames {
			_, _ = flt.Match(fr, c.infos[i])
		}
		for _, e := range c.events {
			_, _ = flt.MatchEvent(e)
		}
		for _, fd := range c.findings {
			_, _ = flt.MatchFinding(fd)
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzCompile
// (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	for _, s := range fuzzFilters {
		if err := fuzzseed.Write("testdata/fuzz/FuzzCompile", s); err != nil {
			t.Fatal(err)
		}
	}
}
