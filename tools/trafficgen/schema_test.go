package trafficgen_test

import (
	"fmt"
	"testing"

	_ "github.com/apache/pulsar-client-go/pulsar" // registers the real client's PulsarApi descriptors
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// TestSchemaMatchesRealClient compares pulsarscope's own schema with the
// PulsarApi descriptors that the real Go client registers, message by message
// and field by field: names, numbers, cardinality, kinds, types, defaults,
// packing and enum values must all be equal, and neither side may have a
// message, enum or field that the other lacks.
func TestSchemaMatchesRealClient(t *testing.T) {
	ref, err := protoregistry.GlobalFiles.FindFileByPath("PulsarApi.proto")
	if err != nil {
		t.Fatalf("the real client's PulsarApi.proto is not registered: %v", err)
	}
	ours := pulsarapi.File_pulsar_api_proto
	var diffs []string
	compareMessages(&diffs, "", ref.Messages(), ours.Messages())
	compareEnums(&diffs, "", ref.Enums(), ours.Enums())
	for _, d := range diffs {
		t.Error(d)
	}
	if ref.Messages().Len() < 70 {
		t.Fatalf("reference has only %d top-level messages; wrong file?", ref.Messages().Len())
	}
}

func compareMessages(diffs *[]string, scope string, ref, ours protoreflect.MessageDescriptors) {
	if ref.Len() != ours.Len() {
		*diffs = append(*diffs, fmt.Sprintf("%s: %d messages in the reference, %d in ours", scope, ref.Len(), ours.Len()))
	}
	for i := 0; i < ref.Len(); i++ {
		rm := ref.Get(i)
		om := ours.ByName(rm.Name())
		if om == nil {
			*diffs = append(*diffs, fmt.Sprintf("message %s%s missing", scope, rm.Name()))
			continue
		}
		name := scope + string(rm.Name())
		compareFields(diffs, name, rm.Fields(), om.Fields())
		compareMessages(diffs, name+".", rm.Messages(), om.Messages())
		compareEnums(diffs, name+".", rm.Enums(), om.Enums())
	}
}

func compareFields(diffs *[]string, msg string, ref, ours protoreflect.FieldDescriptors) {
	if ref.Len() != ours.Len() {
		*diffs = append(*diffs, fmt.Sprintf("%s: %d fields in the reference, %d in ours", msg, ref.Len(), ours.Len()))
	}
	for i := 0; i < ref.Len(); i++ {
		rf := ref.Get(i)
		of := ours.ByNumber(rf.Number())
		if of == nil {
			*diffs = append(*diffs, fmt.Sprintf("%s: field %d (%s) missing", msg, rf.Number(), rf.Name()))
			continue
		}
		where := fmt.Sprintf("%s.%s (%d)", msg, rf.Name(), rf.Number())
		check := func(what string, a, b any) {
			if a != b {
				*diffs = append(*diffs, fmt.Sprintf("%s: %s is %v in the reference, %v in ours", where, what, a, b))
			}
		}
		check("name", rf.Name(), of.Name())
		check("cardinality", rf.Cardinality(), of.Cardinality())
		check("kind", rf.Kind(), of.Kind())
		check("packed", rf.IsPacked(), of.IsPacked())
		check("has default", rf.HasDefault(), of.HasDefault())
		if rf.HasDefault() {
			check("default", fmt.Sprint(rf.Default().Interface()), fmt.Sprint(of.Default().Interface()))
		}
		if rf.Message() != nil {
			check("message type", relName(rf.Message().FullName()), relName(of.Message().FullName()))
		}
		if rf.Enum() != nil {
			check("enum type", relName(rf.Enum().FullName()), relName(of.Enum().FullName()))
		}
	}
}

func compareEnums(diffs *[]string, scope string, ref, ours protoreflect.EnumDescriptors) {
	if ref.Len() != ours.Len() {
		*diffs = append(*diffs, fmt.Sprintf("%s: %d enums in the reference, %d in ours", scope, ref.Len(), ours.Len()))
	}
	for i := 0; i < ref.Len(); i++ {
		re := ref.Get(i)
		oe := ours.ByName(re.Name())
		if oe == nil {
			*diffs = append(*diffs, fmt.Sprintf("enum %s%s missing", scope, re.Name()))
			continue
		}
		rv, ov := re.Values(), oe.Values()
		if rv.Len() != ov.Len() {
			*diffs = append(*diffs, fmt.Sprintf("enum %s%s: %d values in the reference, %d in ours", scope, re.Name(), rv.Len(), ov.Len()))
		}
		for j := 0; j < rv.Len(); j++ {
			v := rv.Get(j)
			o := ov.ByName(v.Name())
			if o == nil || o.Number() != v.Number() {
				*diffs = append(*diffs, fmt.Sprintf("enum %s%s: value %s = %d differs or is missing", scope, re.Name(), v.Name(), v.Number()))
			}
		}
	}
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
