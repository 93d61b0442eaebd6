package track

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// TestRequestIDTyped checks the typed getters of table.requestID and
// table.serverError against the schema: for every sub-command, with and
// without the sub-command, request_id and error (error_code) set, they
// must agree with a protoreflect reading of the same fields.
func TestRequestIDTyped(t *testing.T) {
	fields := (&pulsarapi.BaseCommand{}).ProtoReflect().Descriptor().Fields()
	seenRID, seenErr := 0, 0
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || int(fd.Number()) >= maxType {
			continue
		}
		typ := cmdType(fd.Number())
		sub := fd.Message().Fields()
		rid := sub.ByName("request_id")
		if rid != nil && rid.Kind() != protoreflect.Uint64Kind {
			rid = nil
		}
		var errFd protoreflect.FieldDescriptor
		for _, name := range []protoreflect.Name{"error", "error_code"} {
			if e := sub.ByName(name); e != nil && e.Kind() == protoreflect.EnumKind {
				errFd = e
			}
		}
		for _, withSub := range []bool{false, true} {
			for _, withRID := range []bool{false, true} {
				for _, errVal := range []int32{-1, int32(pulsarapi.ServerError_ServiceNotReady), 999} {
					cmd := &pulsarapi.BaseCommand{Type: typ.Enum()}
					m := cmd.ProtoReflect()
					if withSub {
						sm := m.NewField(fd).Message()
						if withRID && rid != nil {
							sm.Set(rid, protoreflect.ValueOfUint64(4242))
						}
						if errVal >= 0 && errFd != nil {
							sm.Set(errFd, protoreflect.ValueOfEnum(protoreflect.EnumNumber(errVal)))
						}
						m.Set(fd, protoreflect.ValueOfMessage(sm))
					}
					wantID, wantOK := uint64(0), false
					if withSub && withRID && rid != nil {
						wantID, wantOK = 4242, true
						seenRID++
					}
					id, ok := tables.requestID(cmd, typ)
					if id != wantID || ok != wantOK {
						t.Errorf("%v (sub %v, rid %v): requestID = %d, %v; want %d, %v", typ, withSub, withRID, id, ok, wantID, wantOK)
					}
					if typ == pulsarapi.BaseCommand_LOOKUP_RESPONSE || typ == pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE {
						continue // the response field decides (tested by the vectors)
					}
					want := ""
					if withSub && errVal >= 0 && errFd != nil {
						seenErr++
						if ev := errFd.Enum().Values().ByNumber(protoreflect.EnumNumber(errVal)); ev != nil {
							want = string(ev.Name())
						} else {
							want = "ServerError(" + itoa(int64(errVal)) + ")"
						}
					}
					if got := tables.serverError(cmd, typ); got != want {
						t.Errorf("%v (sub %v, error %d): serverError = %q; want %q", typ, withSub, errVal, got, want)
					}
				}
			}
		}
	}
	if seenRID == 0 || seenErr == 0 {
		t.Fatalf("no request_id (%d) or error (%d) field exercised", seenRID, seenErr)
	}
}
