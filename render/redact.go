package render

import (
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Redacted returns cmd itself when showSecrets is set or cmd carries no
// secret, else a copy whose auth_data and original_auth_data fields (at any
// depth) are replaced by the text "<redacted N bytes>".
func Redacted(cmd *pulsarapi.BaseCommand, showSecrets bool) *pulsarapi.BaseCommand {
	if showSecrets || cmd == nil || !hasSecret(cmd.ProtoReflect()) {
		return cmd
	}
	c := proto.Clone(cmd).(*pulsarapi.BaseCommand)
	redact(c.ProtoReflect())
	return c
}

func hasSecret(m protoreflect.Message) bool {
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() == protoreflect.BytesKind && IsSecretField(fd) && !fd.IsList():
			found = len(v.Bytes()) > 0
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
			found = hasSecret(v.Message())
		}
		return !found
	})
	return found
}

func redact(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() == protoreflect.BytesKind && IsSecretField(fd) && !fd.IsList():
			if n := len(v.Bytes()); n > 0 {
				m.Set(fd, protoreflect.ValueOfBytes([]byte("<redacted "+strconv.Itoa(n)+" bytes>")))
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
			redact(v.Message())
		}
		return true
	})
}
