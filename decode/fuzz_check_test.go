package decode

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/pulsarscope/pulsarscope/internal/fuzzseed"
	"github.com/pulsarscope/pulsarscope/reassembly"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// FuzzCheckFrame checks the plausibility check that resynchronisation and
// --detect rely on, and redaction, on arbitrary bytes:
//   - Plausible agrees with CheckFrame under the default limit;
//   - NeedMore asks for more than it was given, within the limit;
//   - Likely means a whole frame that the decoder delimits without a
//     framing problem;
//   - the verdict is monotonic: a prefix of bytes that start a Likely
//     frame is never Implausible (else a resync would skip a real frame
//     that arrives in pieces);
//   - Redact never modifies its input and leaves no secret behind.
func FuzzCheckFrame(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, 0)
		f.Add(s, len(s))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit %= 1 << 24
		if limit > 0 && limit < 64 {
			limit = 64 // a limit below the smallest frame only makes everything need more
		}
		v, need := CheckFrame(data, limit)
		if Plausible(data) != (func() bool { d, _ := CheckFrame(data, DefaultMaxFrameSize); return d == Likely })() {
			t.Fatal("Plausible disagrees with CheckFrame")
		}
		max := limit
		if max <= 0 {
			max = DefaultMaxFrameSize
		}
		switch v {
		case NeedMore:
			if need <= len(data) || need > max {
				t.Fatalf("NeedMore with need %d for %d bytes (limit %d)", need, len(data), max)
			}
		case Likely:
			size := 4 + int(be32(data))
			if size > len(data) || size > max {
				t.Fatalf("Likely frame of %d bytes in %d (limit %d)", size, len(data), max)
			}
			fr := Decode(data[:size], Options{MaxFrameSize: max})
			for _, c := range []string{CodeFrameTooLarge, CodeBadCommandSize, CodeTruncatedFrame, CodeDecoderPanic} {
				if HasProblem(fr.Problems, c) {
					t.Fatalf("Likely frame decodes with %v", fr.Problems)
				}
			}
			for _, cut := range []int{1, 4, 8, size / 2, size - 1} {
				if cut > 0 && cut < size {
					if pv, _ := CheckFrame(data[:cut], limit); pv == Implausible {
						t.Fatalf("prefix of %d bytes of a Likely frame of %d is implausible", cut, size)
					}
				}
			}
		}
		fr := Decode(data, Options{Retain: true})
		if fr.Command == nil {
			return
		}
		before, _ := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(fr.Command)
		r := secret.Redact(fr.Command)
		after, _ := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(fr.Command)
		if !bytes.Equal(before, after) {
			t.Fatal("Redact modified its input")
		}
		if left := unredacted(r.ProtoReflect()); left != "" {
			t.Fatalf("secret.Redact left %s", left)
		}
	})
}

// FuzzParallelStream: the ParallelStreamDecoder (tiny batches, a tiny
// decode budget, two workers) hands the Sink exactly what the
// StreamDecoder does, on arbitrary streams cut in arbitrary pieces with
// gaps (FuzzStream's input format).
func FuzzParallelStream(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, []byte{byte(i), 7, 200, 3, 0, 90})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		feed := func(h reassembly.Handler) { feedFuzz(h, data, cuts) }
		opts := Options{MaxFrameSize: 1 << 16, MaxDecompressed: 1 << 16}
		seq := &fullDigestSink{}
		feed(NewStreamDecoder(seq, opts))
		par := &fullDigestSink{}
		pd := NewParallelStreamDecoder(par, opts, 2)
		pd.maxItems, pd.maxRaw, pd.budget = 2, 100, 200
		feed(pd)
		pd.Wait()
		if strings.Join(seq.lines, "\n") != strings.Join(par.lines, "\n") {
			t.Fatalf("parallel differs:\n%s\n---\n%s", strings.Join(seq.lines, "\n"), strings.Join(par.lines, "\n"))
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzCheckFrame and
// FuzzParallelStream from the frame vectors
// (PULSARSCOPE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus).
func TestWriteFuzzCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("PULSARSCOPE_WRITE_CORPUS not set")
	}
	vs := vectorStreams(t)
	for i, s := range fuzzSeeds(t) {
		if err := fuzzseed.Write("testdata/fuzz/FuzzCheckFrame", s, 0); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if err := fuzzseed.Write("testdata/fuzz/FuzzParallelStream", s, []byte{byte(i), 7, 200, 3, 0, 90}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fuzzseed.Write("testdata/fuzz/FuzzParallelStream", append(append([]byte(nil), vs[0]...), vs[1]...), []byte{1, 2, 3, 250, 100}); err != nil {
		t.Fatal(err)
	}
}

// unredacted names a secret field of m, at any depth, whose value is not a
// redaction marker, or a string holding a credential by shape; "" when
// there is none.
func unredacted(m protoreflect.Message) (left string) {
	marker := regexp.MustCompile(`^<redacted [0-9]+ bytes>$`)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		vals := []protoreflect.Value{v}
		if fd.IsList() {
			vals = vals[:0]
			for i := 0; i < v.List().Len(); i++ {
				vals = append(vals, v.List().Get(i))
			}
		}
		for _, v := range vals {
			switch {
			case secret.Field(fd):
				s := v.String()
				if fd.Kind() == protoreflect.BytesKind {
					s = string(v.Bytes())
				}
				if !marker.MatchString(s) {
					return record(&left, string(fd.FullName()))
				}
			case fd.Kind() == protoreflect.StringKind && secret.HasCredential(v.String()),
				fd.Kind() == protoreflect.BytesKind && secret.HasCredentialBytes(v.Bytes()):
				return record(&left, string(fd.FullName())+" (credential by shape)")
			case fd.Kind() == protoreflect.MessageKind:
				if l := unredacted(v.Message()); l != "" {
					return record(&left, l)
				}
			}
		}
		return true
	})
	return left
}

func record(dst *string, s string) bool { *dst = s; return false }
