package render

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net/netip"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// secretPaths lists, for every secret field of the schema that a command
// can carry, the field numbers from BaseCommand down to it.
func secretPaths() [][]protowire.Number {
	var out [][]protowire.Number
	var walk func(md protoreflect.MessageDescriptor, path []protowire.Number, depth int)
	walk = func(md protoreflect.MessageDescriptor, path []protowire.Number, depth int) {
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			f := fs.Get(i)
			p := append(append([]protowire.Number{}, path...), f.Number())
			switch {
			case secret.Field(f):
				out = append(out, p)
			case f.Message() != nil && depth < 3:
				walk(f.Message(), p, depth+1)
			}
		}
	}
	walk((*pulsarapi.BaseCommand)(nil).ProtoReflect().Descriptor(), nil, 0)
	return out
}

// wholeFields reports whether b is a sequence of complete protobuf fields.
func wholeFields(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// secretFrame builds a frame whose command carries sec in the secret field
// at path, after the fields of other (arbitrary, but whole) in the same
// message.
func secretFrame(path []protowire.Number, other, sec []byte) []byte {
	inner := append([]byte{}, other...)
	inner = protowire.AppendTag(inner, path[len(path)-1], protowire.BytesType)
	inner = protowire.AppendBytes(inner, sec)
	for i := len(path) - 2; i >= 0; i-- {
		var outer []byte
		outer = protowire.AppendTag(outer, path[i], protowire.BytesType)
		inner = protowire.AppendBytes(outer, inner)
	}
	var cmd []byte
	cmd = protowire.AppendTag(cmd, 1, protowire.VarintType)
	cmd = protowire.AppendVarint(cmd, uint64(path[0])) // a sub-command's number is its type
	cmd = append(cmd, inner...)
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cmd)))
	return append(b, cmd...)
}

// outputs renders frame raw in every form the writers have: text with -V
// and -x (hex.Dump of MaskedRaw) and NDJSON; masked is MaskedRaw itself.
func outputs(raw []byte) (text, masked []byte) {
	f := decode.Decode(raw, decode.Options{Retain: true, KeepRaw: true})
	f.N, f.Conn = 1, &reassembly.Conn{ID: 1, Client: netip.MustParseAddrPort("127.0.0.1:1"), Server: netip.MustParseAddrPort("127.0.0.1:6650")}
	var out bytes.Buffer
	tw := NewText(&out, TextOptions{Verbose: true, Hex: true, Payload: true})
	tw.Frame(f)
	_ = tw.Flush()
	jw := NewJSON(&out, JSONOptions{Payload: true})
	jw.Frame(f)
	_ = jw.Flush()
	return out.Bytes(), MaskedRaw(f, false)
}

// FuzzSecretsNeverShown: a command carrying a secret field, after any whole
// fields (known or not, of any wire type, strings that are not UTF-8,
// required fields missing: whether or not the command unmarshals), never
// shows the secret's bytes in the text, -V, hex dump or JSON output: not as
// text, not as base64, not in the masked bytes of the dump. (A secret that
// the output of the same frame shows anyway, such as a field
// name or a hex dump's offset, is not a leak: the same frame with a decoy
// secret of the same length tells.)
func FuzzSecretsNeverShown(f *testing.F) {
	paths := secretPaths()
	if len(paths) < 5 {
		f.Fatalf("only %d secret paths in the schema", len(paths))
	}
	f.Add(uint8(0), []byte{0x0a, 0x01, 'v'}, []byte("token-abcdef"))
	f.Add(uint8(1), []byte{0x0a, 0x02, 0xff, 0xfe}, []byte("token-abcdef")) // client_version not UTF-8
	f.Add(uint8(2), []byte{0xa0, 0x06, 0x01}, []byte("secret\x00\x01\xff"))
	f.Add(uint8(4), []byte(nil), []byte("eyJhbGciOiJIUzI1NiJ9"))
	// connect.feature_flags holding a broken message: the command does not
	// unmarshal, only the wire walk finds the secret
	f.Add(uint8(0), []byte{0x52, 0x01, 0xff}, []byte("token-abcdef"))
	f.Fuzz(func(t *testing.T, which uint8, other, sec []byte) {
		if len(sec) < 6 || len(other) > 4096 || !wholeFields(other) || bytes.Contains(other, sec) {
			return
		}
		path := paths[int(which)%len(paths)]
		// The same frame with another secret of the same length: what
		// the output shows of the frame anyway (offsets, sizes, names).
		decoy := bytes.Repeat([]byte{'Q'}, len(sec))
		if bytes.Equal(decoy, sec) {
			return
		}
		base, _ := outputs(secretFrame(path, other, decoy))
		b64 := []byte(base64.StdEncoding.EncodeToString(sec))
		if bytes.Contains(base, sec) || bytes.Contains(base, b64) {
			return
		}
		text, masked := outputs(secretFrame(path, other, sec))
		if bytes.Contains(text, sec) || bytes.Contains(text, b64) {
			t.Fatalf("path %v: the secret %q is in the output:\n%s", path, sec, text)
		}
		if bytes.Contains(masked, sec) {
			t.Fatalf("path %v: the secret %q is in the hex dump's bytes", path, sec)
		}
	})
}

// TestMaskedRawEverywhere: a secret's bytes are masked wherever they lie in
// the frame, in its field and elsewhere (here also inside an unknown field
// of the command), and nothing else is.
func TestMaskedRawEverywhere(t *testing.T) {
	paths := secretPaths()
	other := protowire.AppendTag(nil, 200, protowire.BytesType) // an unknown field of CommandConnect
	other = protowire.AppendBytes(other, []byte("copy:tok-123456"))
	raw := secretFrame(paths[0], other, []byte("tok-123456"))
	_, masked := outputs(raw)
	want := bytes.ReplaceAll(raw, []byte("tok-123456"), []byte("**********"))
	if !bytes.Equal(masked, want) {
		t.Errorf("masked\n%q\nwant\n%q", masked, want)
	}
}
