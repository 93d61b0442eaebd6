package decode

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pulsarscope/pulsarscope/reassembly"
)

// TestCommandTypeNewerThanSchema: a command type beyond the schema's
// newest (82, after protocol v21's 81) is one clear problem naming the
// protocol version, and one outside it in a hole of the numbering (69)
// another; either frame is framed and accounted, and the frame after it
// decodes cleanly.
func TestCommandTypeNewerThanSchema(t *testing.T) {
	ack := firstFrame(t, "ACK.frame")
	for _, tc := range []struct {
		typ  uint64
		want string
	}{
		{82, "command type 82: newer than protocol v21, the schema's newest (its types end at 81)"},
		{69, "command type 69 is not in the schema (protocol v21)"},
	} {
		c := protowire.AppendTag(nil, 1, protowire.VarintType)
		c = protowire.AppendVarint(c, tc.typ)
		c = protowire.AppendTag(c, protowire.Number(tc.typ), protowire.BytesType)
		c = protowire.AppendBytes(c, []byte{0x08, 0x01})
		newer := withCommand(ack, c)
		rec := &recorder{}
		sd := NewStreamDecoder(rec, Options{Retain: true})
		conn := testConn(true)
		sd.Open(conn)
		sd.Data(conn, reassembly.ClientToServer, append(append([]byte(nil), newer...), ack...), time.Unix(0, 0))
		sd.Close(conn, reassembly.CloseFIN, time.Unix(0, 0))
		if len(rec.frames) != 2 {
			t.Fatalf("type %d: %d frames", tc.typ, len(rec.frames))
		}
		f := rec.frames[0]
		if len(f.Problems) != 1 || f.Problems[0].Code != CodeUnknownCommandType || !strings.HasPrefix(f.Problems[0].Detail, tc.want) || int64(f.Type) != int64(tc.typ) {
			t.Errorf("type %d: frame type %d, problems %+v", tc.typ, f.Type, f.Problems)
		}
		if len(rec.frames[1].Problems) != 0 {
			t.Errorf("type %d: the ACK after it: %+v", tc.typ, rec.frames[1].Problems)
		}
		st := rec.eventsOf(EventClose)[0].Stats[0]
		if st.InFrames != int64(len(newer)+len(ack)) || st.Skipped != 0 || st.Frames != 2 {
			t.Errorf("type %d: accounting %s", tc.typ, st)
		}
	}
}
