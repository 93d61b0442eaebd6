package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// oneDirection rewrites a classic pcap file keeping only the TCP packets
// sent to (toServer) or from the Pulsar port 6650, as a capture filter on
// one direction or asymmetric routing would leave them. It decodes with
// gopacket's own layers, not the code under test.
func oneDirection(tb testing.TB, data []byte, toServer bool) []byte {
	r, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	w := pcapgo.NewWriter(&out)
	if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
		tb.Fatal(err)
	}
	for {
		pkt, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		p := gopacket.NewPacket(pkt, r.LinkType(), gopacket.NoCopy)
		tcp, ok := p.TransportLayer().(*layers.TCP)
		if !ok || (tcp.DstPort == 6650) != toServer {
			continue
		}
		if err := w.WritePacket(ci, pkt); err != nil {
			tb.Fatal(err)
		}
	}
	return out.Bytes()
}

// TestOneDirectionCaptured: each real-client lab capture cut down to one
// direction decodes to exactly that direction's frames as the broker
// logged them, with no conformance problem (the rules that need both
// directions are not applied), and every connection's close says which
// direction was not captured.
func TestOneDirectionCaptured(t *testing.T) {
	checked := 0
	for _, exp := range loadExpectations(t) {
		if exp.Base != "" || len(exp.ExpectProblems) > 0 || !strings.HasSuffix(exp.File, ".pcap") || exp.File == "any.pcap" {
			continue // fault variants, and captures with problems of their own
		}
		data, err := os.ReadFile(filepath.Join("../testdata/pcaps", exp.File))
		if err != nil {
			t.Fatal(err)
		}
		// The conformance problems of the whole capture (error answers,
		// say): the one-sided captures may have those, never others.
		full, _, _ := run(t, "read", "-o", "json", filepath.Join("../testdata/pcaps", exp.File))
		allowed := conformanceCodes(t, full)
		for _, toServer := range []bool{true, false} {
			kept, missing := "c2s", "s2c"
			if !toServer {
				kept, missing = "s2c", "c2s"
			}
			name := writeTemp(t, "one.pcap", oneDirection(t, data, toServer))
			out, errOut, code := run(t, "read", "-o", "json", "--events", name)
			if code != ExitOK {
				t.Fatalf("%s %s only: exit %d: %s", exp.File, kept, code, errOut)
			}
			got := map[string]int{}
			closes := 0
			for _, line := range ndjsonLines(out) {
				var r struct {
					record
					Detail      string `json:"detail"`
					Conformance []struct {
						Code string `json:"code"`
					} `json:"conformance"`
				}
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				for _, c := range r.Conformance {
					if !allowed[c.Code] {
						t.Errorf("%s %s only: %s, which the whole capture does not have: %.200s", exp.File, kept, c.Code, string(line))
					}
				}
				switch r.Event {
				case "close":
					closes++
					if !strings.Contains(r.Detail, missing+" not captured") {
						t.Errorf("%s %s only: close of #%d says %q", exp.File, kept, r.Conn, r.Detail)
					}
				case "":
					got[r.Type]++
				}
			}
			want := exp.Frames[kept]
			for typ, n := range want {
				if got[typ] != n {
					t.Errorf("%s %s only: %d %s frames, the broker logged %d", exp.File, kept, got[typ], typ, n)
				}
			}
			if len(got) != len(want) || closes != exp.Connections {
				t.Errorf("%s %s only: frame types %v (want %v), %d closes (want %d)", exp.File, kept, got, want, closes, exp.Connections)
			}
			checked++
		}
	}
	if checked < 16 {
		t.Fatalf("only %d one-direction captures checked", checked)
	}
}

// conformanceCodes returns the conformance codes of a 'read -o json' output.
func conformanceCodes(t *testing.T, out string) map[string]bool {
	codes := map[string]bool{}
	for _, line := range ndjsonLines(out) {
		var r struct {
			Conformance []struct {
				Code string `json:"code"`
			} `json:"conformance"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Conformance {
			codes[c.Code] = true
		}
	}
	return codes
}
