package decode

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestVectors decodes every real frame: no problems, valid checksums and
// the command counts of the vectors' README.
func TestVectors(t *testing.T) {
	counts := map[string]int{}
	sums := 0
	frames := 0
	for _, v := range loadVectors(t) {
		b := v.data
		for len(b) > 0 {
			f := Decode(b, Options{KeepRaw: true})
			if len(f.Problems) > 0 {
				t.Errorf("%s: problems %v", v.name, f.Problems)
			}
			if f.Size > len(b) || f.Size < 8 {
				t.Fatalf("%s: bad size %d", v.name, f.Size)
			}
			if f.Checksum != nil {
				if !f.Checksum.OK() {
					t.Errorf("%s: checksum %+v", v.name, *f.Checksum)
				}
				sums++
			}
			if IsPayloadCommand(f.Type) && (f.Metadata == nil || f.Checksum == nil || f.Uncompressed == nil) {
				t.Errorf("%s: payload frame not fully decoded", v.name)
			}
			if end := f.Regions[len(f.Regions)-1].End; end != f.Size {
				t.Errorf("%s: regions end at %d, frame is %d", v.name, end, f.Size)
			}
			counts[f.Type.String()]++
			frames++
			b = b[f.Size:]
		}
	}
	want := map[string]int{
		"SEND": 18, "SEND_RECEIPT": 18, "ACK": 10, "CONNECT": 7, "CONNECTED": 7, "LOOKUP": 7,
		"LOOKUP_RESPONSE": 7, "PARTITIONED_METADATA": 7, "PARTITIONED_METADATA_RESPONSE": 7,
		"SUCCESS": 7, "MESSAGE": 10, "PRODUCER": 4, "PRODUCER_SUCCESS": 4, "CLOSE_PRODUCER": 4,
		"SUBSCRIBE": 3, "FLOW": 3, "CLOSE_CONSUMER": 1,
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts\n got %v\nwant %v", counts, want)
	}
	if sums != 28 {
		t.Errorf("%d checksums, want 28", sums)
	}
	t.Logf("%d frames, %d checksums", frames, sums)
}

var listingField = regexp.MustCompile(`(\w+): ("[^"]*"|-?[0-9]+|true|false|[A-Z][A-Za-z_]*)\b`)

// TestVectorsListing compares each frame with the independent listing: the
// type, and every scalar field the listing shows.
func TestVectorsListing(t *testing.T) {
	fh, err := os.Open("../testdata/vectors/java-client-1.22.listing.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var lines []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "type: ") {
			lines = append(lines, l)
		}
	}
	i := 0
	checked := 0
	for _, v := range loadVectors(t) {
		for b := v.data; len(b) > 0; {
			f := Decode(b, Options{})
			b = b[f.Size:]
			if i >= len(lines) {
				t.Fatalf("listing has fewer frames than the vectors")
			}
			l := lines[i]
			i++
			if want := "type: " + f.Type.String() + " "; !strings.HasPrefix(l, want) {
				t.Errorf("%s: listing %q, decoded %s", v.name, l, f.Type)
				continue
			}
			sub := subCommand(f)
			for _, m := range listingField.FindAllStringSubmatch(l, -1) {
				if m[1] == "type" {
					continue
				}
				if !hasFieldValue(sub, protoreflect.Name(m[1]), strings.Trim(m[2], `"`)) {
					t.Errorf("%s: field %s=%s not found in %v", v.name, m[1], m[2], sub)
				}
				checked++
			}
		}
	}
	if i != len(lines) {
		t.Errorf("decoded %d frames, listing has %d", i, len(lines))
	}
	t.Logf("%d listed fields checked", checked)
}

func subCommand(f *Frame) protoreflect.Message {
	m := f.Command.ProtoReflect()
	return m.Get(m.Descriptor().Fields().ByNumber(protoreflect.FieldNumber(f.Type))).Message()
}

// hasFieldValue looks for a field name with the given value anywhere in m.
func hasFieldValue(m protoreflect.Message, name protoreflect.Name, want string) bool {
	found := false
	fs := m.Descriptor().Fields()
	for i := 0; i < fs.Len() && !found; i++ {
		fd := fs.Get(i)
		v := m.Get(fd)
		switch {
		case fd.IsMap():
		case fd.IsList():
			if fd.Message() != nil {
				for j := 0; j < v.List().Len() && !found; j++ {
					found = hasFieldValue(v.List().Get(j).Message(), name, want)
				}
			}
		case fd.Message() != nil:
			if m.Has(fd) {
				found = hasFieldValue(v.Message(), name, want)
			}
		case fd.Name() == name:
			got := fmt.Sprint(v.Interface())
			if fd.Enum() != nil {
				got = string(fd.Enum().Values().ByNumber(v.Enum()).Name())
			}
			if b, ok := v.Interface().([]byte); ok {
				got = string(b)
			}
			found = got == want
		}
	}
	return found
}
