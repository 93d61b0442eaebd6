package trafficgen_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/apache/pulsar-client-go/pulsar" // registers the real client's PulsarApi descriptors
	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// The newest public PulsarApi.proto, beside the project (../shared/reference,
// see its README); not part of the repository. Its wire facts are kept in
// testdata/reference-schema.facts, made from it with -update-reference.
const referenceProto = "../../../shared/reference/PulsarApi.proto"

var updateReference = flag.Bool("update-reference", false, "rewrite testdata/reference-schema.facts from "+referenceProto)

// TestSchemaMatchesReference holds pulsarscope's schema to the newest
// public PulsarApi.proto, parsed with a real proto parser (protocompile):
// every message, field (name, number, label, type, message or enum type,
// default, packing, oneof), enum and enum value, in order, with nothing
// missing or extra. Three listings of those facts must be equal: the
// reference's (testdata/reference-schema.facts, made from the reference
// .proto; compared with it again when it is beside the project), that of
// decode/pulsarapi/pulsar_api.proto parsed the same way, and that of the
// generated Go code (so the committed code is what the .proto generates).
func TestSchemaMatchesReference(t *testing.T) {
	factsPath := filepath.Join("testdata", "reference-schema.facts")
	if *updateReference {
		ref := compileProto(t, referenceProto)
		if err := os.WriteFile(factsPath, []byte(strings.Join(schemaFacts(ref), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(factsPath)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(want) < 700 {
		t.Fatalf("%s has only %d lines; wrong file?", factsPath, len(want))
	}
	if _, err := os.Stat(referenceProto); err == nil {
		compareFacts(t, "the reference .proto", schemaFacts(compileProto(t, referenceProto)), "testdata/reference-schema.facts", want)
	} else {
		t.Logf("%s not here (it is beside the project on a development machine): compared with %s only", referenceProto, factsPath)
	}
	compareFacts(t, "the reference", want, "decode/pulsarapi/pulsar_api.proto", schemaFacts(compileProto(t, "../../decode/pulsarapi/pulsar_api.proto")))
	compareFacts(t, "the reference", want, "the generated Go code", schemaFacts(pulsarapi.File_pulsar_api_proto))
}

// TestSchemaMatchesRealClient: the real Go client's PulsarApi descriptors
// (pulsar-client-go v0.19.0, older than the reference) are part of
// pulsarscope's schema: every message, field and enum value it has is in
// ours with the same facts, except for the one field the newer schema
// renamed (CommandNewTxn field 2, txn_ttl_seconds, now txn_ttl_millis:
// the same number and type, so the same bytes on the wire).
func TestSchemaMatchesRealClient(t *testing.T) {
	ref, err := protoregistry.GlobalFiles.FindFileByPath("PulsarApi.proto")
	if err != nil {
		t.Fatalf("the real client's PulsarApi.proto is not registered: %v", err)
	}
	ours := map[string]bool{}
	for _, f := range schemaFacts(pulsarapi.File_pulsar_api_proto) {
		ours[f] = true
	}
	renamed := map[string]string{
		"field CommandNewTxn.txn_ttl_seconds = 2 optional uint64 default=0": "field CommandNewTxn.txn_ttl_millis = 2 optional uint64 default=0",
	}
	client := schemaFacts(ref)
	for _, f := range client {
		if r, ok := renamed[f]; ok {
			f = r
		}
		if !ours[f] && !strings.HasPrefix(f, "message ") && !strings.HasPrefix(f, "enum ") {
			t.Errorf("the client has %q; pulsarscope's schema has not", f)
		}
	}
	if len(client) < 600 {
		t.Fatalf("the client's schema has only %d facts; wrong file?", len(client))
	}
}

// compileProto parses a .proto file with protocompile.
func compileProto(t *testing.T, path string) protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: &protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(path)}}}
	fs, err := c.Compile(context.Background(), filepath.Base(path))
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return fs[0]
}

// compareFacts reports every line of one listing missing from the other.
func compareFacts(t *testing.T, aName string, a []string, bName string, b []string) {
	t.Helper()
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range list {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	for _, l := range a {
		if !inb[l] {
			t.Errorf("%s has %q, %s has not", aName, l, bName)
		}
	}
	for _, l := range b {
		if !ina[l] {
			t.Errorf("%s has %q, %s has not", bName, l, aName)
		}
	}
	if t.Failed() {
		return
	}
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("%s and %s hold the same facts in another order", aName, bName)
	}
}

// schemaFacts lists the wire facts of a schema, one a line, in declaration
// order: messages, their fields (number, label, kind, message or enum type,
// default, packing, oneof), nested messages and enums, and enums with their
// values. Names are relative to the protobuf package, the one thing allowed
// to differ (it never travels on the wire).
func schemaFacts(fd protoreflect.FileDescriptor) []string {
	var out []string
	var msgs func(protoreflect.MessageDescriptors)
	enums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			e := es.Get(i)
			out = append(out, "enum "+relName(e.FullName()))
			for j := 0; j < e.Values().Len(); j++ {
				v := e.Values().Get(j)
				out = append(out, fmt.Sprintf("value %s.%s = %d", relName(e.FullName()), v.Name(), v.Number()))
			}
		}
	}
	msgs = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			out = append(out, "message "+relName(m.FullName()))
			for j := 0; j < m.Fields().Len(); j++ {
				f := m.Fields().Get(j)
				s := fmt.Sprintf("field %s.%s = %d %s %s", relName(m.FullName()), f.Name(), f.Number(), f.Cardinality(), f.Kind())
				switch {
				case f.Message() != nil:
					s += " " + relName(f.Message().FullName())
				case f.Enum() != nil:
					s += " " + relName(f.Enum().FullName())
				}
				if f.HasDefault() {
					d := f.Default().Interface()
					if f.Enum() != nil {
						d = f.DefaultEnumValue().Name()
					}
					s += fmt.Sprintf(" default=%v", d)
				}
				if f.IsPacked() {
					s += " packed"
				}
				if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
					s += " oneof=" + string(o.Name())
				}
				out = append(out, s)
			}
			msgs(m.Messages())
			enums(m.Enums())
		}
	}
	msgs(fd.Messages())
	enums(fd.Enums())
	return out
}

// relName drops the protobuf package, which is the one thing allowed to differ.
func relName(n protoreflect.FullName) string {
	s := string(n)
	for _, pkg := range []string{"pulsar.proto.", "pulsarscope.pulsarapi."} {
		if len(s) > len(pkg) && s[:len(pkg)] == pkg {
			return s[len(pkg):]
		}
	}
	return s
}
