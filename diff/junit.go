package diff

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"

	"github.com/pulsarscope/pulsarscope/render"
)

// junitSuites is a JUnit XML report, the shape Jenkins, GitLab and
// GitHub's test reporters read: one test suite, one test case per stream,
// outcome, problem and latency compared.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Failure *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// WriteJUnit writes the result as JUnit XML: a test case per stream
// ("streams"), outcome ("outcomes"), problem code ("problems") and
// request type whose latency was compared ("latency"), each difference a
// failure whose text is the difference as the text output shows it.
// Names and texts are escaped for a terminal's sake as in the text
// output, and for XML by encoding/xml.
func (r *Result) WriteJUnit(w io.Writer) error {
	suite := junitSuite{Name: "pulsarscope diff " + render.Safe(orDefault(r.Baseline, "baseline")) + " vs " + render.Safe(orDefault(r.Candidate, "candidate"))}
	add := func(class, name string, f *junitFailure) {
		suite.Cases = append(suite.Cases, junitCase{Class: class, Name: render.Safe(name), Failure: f})
		suite.Tests++
		if f != nil {
			suite.Failures++
		}
	}
	streams := map[string]StreamDiff{}
	for _, s := range r.Streams {
		streams[s.Key] = s
	}
	p := newPainter(false)
	for _, k := range r.Compared.Streams {
		s, differs := streams[k]
		if !differs {
			add("streams", k, nil)
			continue
		}
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		writeStream(bw, p, s)
		bw.Flush()
		var msg string
		switch s.Status {
		case "added":
			msg = "stream only in the candidate"
		case "removed":
			msg = "stream only in the baseline"
		default:
			msg = "commands differ"
		}
		add("streams", k, &junitFailure{Message: msg, Type: "difference", Text: buf.String()})
	}
	counts := func(class string, keys []string, diffs []CountDiff) {
		byKey := map[string]CountDiff{}
		for _, d := range diffs {
			byKey[d.Key] = d
		}
		for _, k := range keys {
			d, differs := byKey[k]
			if !differs {
				add(class, k, nil)
				continue
			}
			text := fmt.Sprintf("-%s: %d\n+%s: %d\n", render.Safe(k), d.Baseline, render.Safe(k), d.Candidate)
			add(class, k, &junitFailure{Message: fmt.Sprintf("%d in the baseline, %d in the candidate", d.Baseline, d.Candidate), Type: "difference", Text: text})
		}
	}
	counts("outcomes", r.Compared.Outcomes, r.Outcomes)
	counts("problems", r.Compared.Problems, r.Problems)
	for _, l := range r.Latency {
		if !l.Regression {
			add("latency", l.Type, nil)
			continue
		}
		text := fmt.Sprintf("%s p99 %s -> %s (%+.0f%%; p50 %s -> %s; %d -> %d requests; p = %.3g)\n",
			render.Safe(l.Type), micros(l.Baseline.P99), micros(l.Candidate.P99), 100*l.Growth,
			micros(l.Baseline.P50), micros(l.Candidate.P50), l.Baseline.Count, l.Candidate.Count, l.PValue)
		add("latency", l.Type, &junitFailure{Message: "latency regression", Type: "latency", Text: text})
	}
	doc := junitSuites{Name: "pulsarscope diff", Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}}
	bw := bufio.NewWriter(w)
	bw.WriteString(xml.Header)
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	bw.WriteString("\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	return nil
}
