package diff

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// TestJUnit: the JUnit report has a test case per stream, outcome and
// problem compared (and latency type), the differing ones failures whose
// text is the difference; it parses back as XML; a second run of the
// same scenario has no failure.
func TestJUnit(t *testing.T) {
	var c transcripts
	base := c.get(t, testdata("basic.pcap"))
	for _, tc := range []struct {
		cand     string
		failures []string // classname/name of the failing cases
	}{
		{"basic-b.pcap", nil},
		{"basic-producer-error.pcap", []string{
			"streams/lookup persistent://public/default/basic #1",
			"streams/producer persistent://public/default/basic #1",
			"outcomes/LOOKUP -> LOOKUP_RESPONSE",
			"outcomes/PARTITIONED_METADATA -> PARTITIONED_METADATA_RESPONSE",
			"outcomes/PRODUCER -> ERROR ServiceNotReady",
			"problems/error-response",
		}},
	} {
		res, err := Compare(base, c.get(t, testdata(tc.cand)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := res.WriteJUnit(&buf); err != nil {
			t.Fatal(err)
		}
		var doc junitSuites
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("%s: not XML: %v\n%s", tc.cand, err, buf.String())
		}
		want := len(res.Compared.Streams) + len(res.Compared.Outcomes) + len(res.Compared.Problems) + len(res.Latency)
		if len(doc.Suites) != 1 || doc.Tests != want || len(doc.Suites[0].Cases) != want {
			t.Fatalf("%s: %d suites, %d tests, want %d", tc.cand, len(doc.Suites), doc.Tests, want)
		}
		var failed []string
		for _, k := range doc.Suites[0].Cases {
			if k.Failure != nil {
				failed = append(failed, k.Class+"/"+k.Name)
				if k.Class == "streams" && !strings.Contains(k.Failure.Text, "@@ ") {
					t.Errorf("%s: %s: failure text %q", tc.cand, k.Name, k.Failure.Text)
				}
			}
		}
		if strings.Join(failed, "\n") != strings.Join(tc.failures, "\n") || doc.Failures != len(tc.failures) {
			t.Errorf("%s: failures %q (%d), want %q", tc.cand, failed, doc.Failures, tc.failures)
		}
		if strings.Contains(buf.String(), "producer persistent://public/default/basic #1") &&
			!strings.Contains(buf.String(), "<![CDATA[") && len(tc.failures) > 0 {
			t.Errorf("%s: failure texts not in CDATA", tc.cand)
		}
	}
}
