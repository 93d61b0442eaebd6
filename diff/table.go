package diff

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// maxType bounds the command type numbers kept in the table.
const maxType = 128

// fieldTable holds, per command type, the BaseCommand field of its
// sub-command and the sub-command's fields that place a frame in a stream.
type fieldTable struct {
	sub                                     [maxType]protoreflect.FieldDescriptor
	request, producer, consumer             [maxType]protoreflect.FieldDescriptor
	topic, subscription, prodName, consName [maxType]protoreflect.FieldDescriptor
}

func newFieldTable() *fieldTable {
	tb := &fieldTable{}
	fields := (&pulsarapi.BaseCommand{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		n := int(fd.Number())
		if fd.Kind() != protoreflect.MessageKind || n >= maxType {
			continue
		}
		// The sub-command of type T is BaseCommand field number T.
		tb.sub[n] = fd
		sub := fd.Message().Fields()
		pick := func(name string, kind protoreflect.Kind) protoreflect.FieldDescriptor {
			if f := sub.ByName(protoreflect.Name(name)); f != nil && f.Kind() == kind && !f.IsList() {
				return f
			}
			return nil
		}
		tb.request[n] = pick("request_id", protoreflect.Uint64Kind)
		tb.producer[n] = pick("producer_id", protoreflect.Uint64Kind)
		tb.consumer[n] = pick("consumer_id", protoreflect.Uint64Kind)
		tb.topic[n] = pick("topic", protoreflect.StringKind)
		tb.subscription[n] = pick("subscription", protoreflect.StringKind)
		tb.prodName[n] = pick("producer_name", protoreflect.StringKind)
		tb.consName[n] = pick("consumer_name", protoreflect.StringKind)
	}
	return tb
}

// subCommand returns the frame's sub-command message, or nil.
func (tb *fieldTable) subCommand(cmd *pulsarapi.BaseCommand) protoreflect.Message {
	if cmd == nil {
		return nil
	}
	t := int(cmd.GetType())
	if t < 0 || t >= maxType || tb.sub[t] == nil {
		return nil
	}
	m := cmd.ProtoReflect()
	if !m.Has(tb.sub[t]) {
		return nil
	}
	return m.Get(tb.sub[t]).Message()
}

// uintField returns a set uint64 field of sub.
func uintField(sub protoreflect.Message, fd protoreflect.FieldDescriptor) (uint64, bool) {
	if sub == nil || fd == nil || !sub.Has(fd) {
		return 0, false
	}
	return sub.Get(fd).Uint(), true
}

// stringField returns a string field of sub ("" when unset).
func stringField(sub protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if sub == nil || fd == nil || !sub.Has(fd) {
		return ""
	}
	return sub.Get(fd).String()
}
