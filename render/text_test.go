package render

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// TestAppendHead checks the text writer's line head against the fmt
// format it replaced.
func TestAppendHead(t *testing.T) {
	addrs := []string{"127.0.0.1:6650", "10.1.2.3:50066", "[::1]:6650", "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff]:65535"}
	for _, n := range []int{1, 42, 999999, 1234567} {
		for _, rel := range []float64{0, 0.000857, 12.5, 123456.123456789, 1e12} {
			for _, conn := range []int{1, 99, 1000, 123456} {
				for _, s := range addrs {
					for _, d := range addrs {
						src, dst := netip.MustParseAddrPort(s), netip.MustParseAddrPort(d)
						want := fmt.Sprintf("%6d %10.6f #%-3d %21s → %-21s ", n, rel, conn, src, dst)
						b := appendPadInt(nil, int64(n), 6)
						b = append(b, ' ')
						if got := string(appendHead(b, rel, conn, src, dst)); got != want {
							t.Fatalf("got  %q\nwant %q", got, want)
						}
					}
				}
			}
		}
	}
	for _, s := range []string{"", "SEND", "GET_TOPICS_OF_NAMESPACE_RESPONSE_LONGER_THAN_30", "é"} {
		if got, want := string(appendPadRight(nil, s, 30)), fmt.Sprintf("%-30s", s); got != want {
			t.Errorf("appendPadRight(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestStableLine: prototext's random extra space after "name:" is taken
// out; nothing else changes.
func TestStableLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"request_id:  7\n", "request_id: 7\n"},
		{"request_id: 7\n", "request_id: 7\n"},
		{"    topic:  \"a:  b\"\n", "    topic: \"a:  b\"\n"},
		{"    topic: \"a:  b\"\n", "    topic: \"a:  b\"\n"},
		{"send {\n", "send {\n"},
		{"}\n", "}\n"},
		{"[pkg.ext]:  1\n", "[pkg.ext]: 1\n"},
		{"\"quoted:  \"\n", "\"quoted:  \"\n"},
	} {
		if got := string(stableLine([]byte(tc.in))); got != tc.want {
			t.Errorf("stableLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSummaryElidesLongStrings: a string field of 4 MiB is shown in the
// one-line view as its first 64 bytes and its length; a short one whole.
func TestSummaryElidesLongStrings(t *testing.T) {
	long := strings.Repeat("hostile", 4<<20/7)
	for _, c := range []struct{ version, want string }{
		{"Pulsar-Go-v0.19.0", "client_version=Pulsar-Go-v0.19.0 "},
		{long, "client_version=" + long[:64] + "…(" + commas(len(long)) + " bytes) "},
		// cut at a rune boundary: 63 bytes, not into the 32nd é
		{"a" + strings.Repeat("é", 200), "client_version=a" + strings.Repeat("é", 31) + "…(401 bytes) "},
	} {
		f := &decode.Frame{Type: pulsarapi.BaseCommand_CONNECT, Command: &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECT.Enum(),
			Connect: &pulsarapi.CommandConnect{ClientVersion: proto.String(c.version), ProtocolVersion: proto.Int32(20)}}}
		got := string(AppendSummary(nil, f, false))
		if !strings.HasPrefix(got, c.want) || len(got) > 200 {
			t.Errorf("summary %.120q…, want prefix %.120q", got, c.want)
		}
	}
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
