package tui

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/render"
)

// serverError returns the ServerError name a response carries (its error
// or error_code field, or Failed lookups), as the tracker reports it.
func serverError(f *decode.Frame) string {
	cmd := f.Command
	if cmd == nil {
		return ""
	}
	switch f.Type {
	case pulsarapi.BaseCommand_LOOKUP_RESPONSE:
		r := cmd.GetLookupTopicResponse()
		if r.GetResponse() == pulsarapi.CommandLookupTopicResponse_Failed {
			return errName(r.Error, r.GetError())
		}
		return ""
	case pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE:
		r := cmd.GetPartitionMetadataResponse()
		if r.GetResponse() == pulsarapi.CommandPartitionedTopicMetadataResponse_Failed {
			return errName(r.Error, r.GetError())
		}
		return ""
	}
	if f.Dir == 0 {
		return ""
	}
	sub := render.SubCommand(cmd)
	if sub == nil {
		return ""
	}
	for _, name := range []protoreflect.Name{"error", "error_code"} {
		fd := sub.Descriptor().Fields().ByName(name)
		if fd == nil || fd.Kind() != protoreflect.EnumKind || !sub.Has(fd) {
			continue
		}
		if ev := fd.Enum().Values().ByNumber(sub.Get(fd).Enum()); ev != nil {
			return string(ev.Name())
		}
	}
	return ""
}

func errName(set *pulsarapi.ServerError, e pulsarapi.ServerError) string {
	if set == nil {
		return "Failed"
	}
	return e.String()
}
