package cli

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	pb "google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// lookupFrame is a Pulsar LOOKUP request frame.
func lookupFrame(t *testing.T, requestID uint64) []byte {
	t.Helper()
	cmd, err := pb.Marshal(&pulsarapi.BaseCommand{
		Type:        pulsarapi.BaseCommand_LOOKUP.Enum(),
		LookupTopic: &pulsarapi.CommandLookupTopic{Topic: pb.String("persistent://public/default/idle"), RequestId: pb.Uint64(requestID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cmd)))
	return append(b, cmd...)
}

// TestCaptureIdleTimeout: a connection silent for longer than
// --idle-timeout is closed (reason idle) and its unanswered request
// reported while the capture goes on, without waiting for a packet or
// the end of the capture.
func TestCaptureIdleTimeout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	port := freePort(t)
	p := fmt.Sprint(port)
	// A server that reads and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 4096)
				for {
					if _, err := c.Read(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	dial := func(id uint64) net.Conn {
		c, err := net.Dial("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(lookupFrame(t, id)); err != nil {
			t.Fatal(err)
		}
		return c
	}

	res := startCapture(t, "capture", "-i", "lo", "--port", p, "-f", "port "+p, "-o", "json",
		"--idle-timeout", "1s", "-a", "duration:2.6")
	a := dial(1) // then silent: idle after 1 s
	defer a.Close()
	time.Sleep(2 * time.Second)
	b := dial(2) // open until the end of the capture, 0.6 s later
	defer b.Close()
	r := waitCapture(t, res, 6*time.Second)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}

	// In output order: conn 1's close (idle) and its unanswered request
	// come before conn 2's LOOKUP, which was sent after the idle timeout.
	var (
		order         []string
		idleAt, open2 time.Time
	)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec struct {
			Event, Type, Detail string
			Conn                int
			TS                  time.Time
			Problems            []struct{ Code string }
			Conformance         []struct{ Code string }
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		what := rec.Type
		if rec.Event != "" {
			what = rec.Event
			if rec.Event == "close" {
				what += ":" + rec.Detail
			}
		}
		switch what {
		case "close:idle":
			if rec.Conn == 1 {
				idleAt = rec.TS
			}
		case "open":
			if rec.Conn == 2 {
				open2 = rec.TS
			}
		}
		s := fmt.Sprintf("%d %s", rec.Conn, what)
		for _, pr := range append(rec.Problems, rec.Conformance...) {
			s += " [" + pr.Code + "]"
		}
		order = append(order, s)
	}
	got := strings.Join(order, "\n")
	idx := func(s string) int { return strings.Index(got, s) }
	closeIdle, unanswered, lookup2, close2 := idx("1 close:idle"), idx("[request-unanswered]"), idx("2 LOOKUP"), idx("2 close:end-of-capture")
	if closeIdle < 0 || unanswered < 0 || lookup2 < 0 || close2 < 0 || unanswered > lookup2 || closeIdle > lookup2 {
		t.Errorf("want conn 1 closed as idle with its request unanswered before conn 2's LOOKUP, conn 2 closed at the end:\n%s\n%s", got, r.stdout)
	}
	// Closed by the clock (about 1.25 s after its last packet), not by
	// conn 2's first packet 2 s after it.
	if d := open2.Sub(idleAt); d < 300*time.Millisecond {
		t.Errorf("conn 1 closed at %v, only %v before conn 2 opened: not closed while no packets arrived", idleAt, d)
	}
}
