package tui

import (
	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// marshalMeta encodes a batch entry's metadata again, to walk it like the
// frame's own fields (entries are inside the uncompressed payload, so
// their bytes have no place in the frame).
func marshalMeta(m *pulsarapi.SingleMessageMetadata) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}
