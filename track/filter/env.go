package filter

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
	"github.com/pulsarscope/pulsarscope/track"
)

// Env is what a filter sees of one frame (field names in docs/filters.md).
// Absent numbers are -1, absent strings "".
type Env struct {
	N    int    `expr:"n"`
	Type string `expr:"type"`
	Conn int    `expr:"conn"`
	Dir  string `expr:"dir"`
	Size int    `expr:"size"`
	// Problems are the codes of the frame's decode and conformance problems.
	Problems []string `expr:"problems"`

	Topic        string `expr:"topic"`
	Producer     string `expr:"producer"`
	Consumer     string `expr:"consumer"`
	Subscription string `expr:"subscription"`
	SubType      string `expr:"sub_type"`
	ProducerID   int    `expr:"producer_id"`
	ConsumerID   int    `expr:"consumer_id"`
	RequestID    int    `expr:"request_id"`
	SequenceID   int    `expr:"sequence_id"`
	// Entries is the number of messages of a SEND or MESSAGE.
	Entries int `expr:"entries"`
	// Error is the ServerError of an error response.
	Error string `expr:"error"`

	// Request is the type of the request a response answers; Response the
	// type of a request's response (two passes).
	Request  string `expr:"request"`
	Response string `expr:"response"`
	// LatencyMS and LatencyUS are the request→response time, on the
	// response (and on the request with two passes); -1 when not paired.
	LatencyMS float64 `expr:"latency_ms"`
	LatencyUS int64   `expr:"latency_us"`
	// Cmd holds every set field of the sub-command by its schema name.
	Cmd map[string]any `expr:"cmd"`
}

func (e *Env) reset() {
	p := e.Problems[:0]
	*e = Env{Problems: p, ProducerID: -1, ConsumerID: -1, RequestID: -1, SequenceID: -1, LatencyMS: -1, LatencyUS: -1}
}

// fromFrame fills e from a frame; secrets are hidden unless show (see
// hidden).
func (e *Env) fromFrame(f *decode.Frame, info *track.Info, wantCmd, show bool) {
	e.reset()
	e.N, e.Type, e.Conn, e.Dir, e.Size = f.N, f.Type.String(), f.Conn.ID, f.Dir.String(), f.Size
	for _, p := range f.Problems {
		e.Problems = append(e.Problems, p.Code)
	}
	if info != nil {
		for _, p := range info.Problems {
			e.Problems = append(e.Problems, p.Code)
		}
		if p := info.Producer; p != nil {
			e.Topic, e.Producer = scrub(p.Topic, show), scrub(p.Name, show)
		}
		if c := info.Consumer; c != nil {
			e.Topic, e.Consumer, e.Subscription, e.SubType = scrub(c.Topic, show), scrub(c.Name, show), scrub(c.Subscription, show), c.SubType
		}
		e.Entries, e.Error = info.Entries, info.Error
		link := info.Request
		if link != nil {
			e.Request = link.Type.String()
		}
		if info.Response != nil {
			e.Response = info.Response.Type.String()
			if link == nil {
				link = info.Response
			}
		}
		if link != nil {
			e.LatencyUS = link.Latency.Microseconds()
			e.LatencyMS = float64(link.Latency.Nanoseconds()) / 1e6
		}
	}
	sub := subCommand(f.Command)
	if sub == nil {
		return
	}
	fields := sub.Descriptor().Fields()
	for _, name := range [...]struct {
		n   protoreflect.Name
		dst *int
	}{{"producer_id", &e.ProducerID}, {"consumer_id", &e.ConsumerID}, {"request_id", &e.RequestID}, {"sequence_id", &e.SequenceID}} {
		if fd := fields.ByName(name.n); fd != nil && sub.Has(fd) {
			*name.dst = int(sub.Get(fd).Uint())
		}
	}
	if e.Topic == "" {
		if fd := fields.ByName("topic"); fd != nil && fd.Kind() == protoreflect.StringKind {
			e.Topic = scrub(sub.Get(fd).String(), show)
		}
	}
	if wantCmd {
		e.Cmd = toMap(sub, show)
	}
}

func (e *Env) fromEvent(ev *decode.Event) {
	e.reset()
	e.Type, e.Conn, e.Dir = "("+string(ev.Kind)+")", ev.Conn.ID, ev.Dir.String()
	for _, p := range ev.Problems {
		e.Problems = append(e.Problems, p.Code)
	}
}

func (e *Env) fromFinding(fd *track.Finding) {
	e.reset()
	e.N, e.Type, e.Conn, e.Dir = fd.Frame, fd.Type.String(), fd.Conn.ID, fd.Dir.String()
	e.Problems = append(e.Problems, fd.Problem.Code)
}

// toMap converts a protobuf message to plain values: numbers as int (or
// float64), enums by name, message ids as "ledger:entry", messages as maps,
// repeated fields as lists; secrets hidden unless show.
func toMap(m protoreflect.Message, show bool) map[string]any {
	out := map[string]any{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsList() {
			l := v.List()
			vs := make([]any, l.Len())
			for i := range vs {
				vs[i] = value(fd, l.Get(i), show)
			}
			out[string(fd.Name())] = vs
			return true
		}
		if !fd.IsMap() {
			out[string(fd.Name())] = value(fd, v, show)
		}
		return true
	})
	return out
}

// hidden is what a filter sees of a secret of n bytes when secrets are not
// shown: n asterisks, so that a filter can test that it is present and its
// length (len(cmd.auth_data) == 9), never its value.
func hidden(n int) string { return strings.Repeat("*", n) }

// scrub hides credentials by shape in s unless show.
func scrub(s string, show bool) string {
	if show {
		return s
	}
	return secret.Scrub(s)
}

func value(fd protoreflect.FieldDescriptor, v protoreflect.Value, show bool) any {
	if !show && secret.Field(fd) {
		if fd.Kind() == protoreflect.BytesKind {
			return hidden(len(v.Bytes()))
		}
		return hidden(len(v.String()))
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if id, ok := v.Message().Interface().(*pulsarapi.MessageIdData); ok {
			return formatID(id)
		}
		return toMap(v.Message(), show)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int(v.Enum())
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.StringKind:
		return scrub(v.String(), show)
	case protoreflect.BytesKind:
		return scrub(string(v.Bytes()), show)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return int(v.Uint())
	}
	return int(v.Int())
}

// subCommand returns the one sub-command message set on cmd, or nil.
func subCommand(cmd *pulsarapi.BaseCommand) protoreflect.Message {
	if cmd == nil {
		return nil
	}
	var sub protoreflect.Message
	cmd.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() {
			sub = v.Message()
			return false
		}
		return true
	})
	return sub
}

// formatID writes a message id as ledger:entry, as in the text output.
func formatID(id *pulsarapi.MessageIdData) string {
	s := strconv.FormatUint(id.GetLedgerId(), 10) + ":" + strconv.FormatUint(id.GetEntryId(), 10)
	if id.Partition != nil && id.GetPartition() >= 0 {
		s += ":p" + strconv.Itoa(int(id.GetPartition()))
	}
	if id.BatchIndex != nil && id.GetBatchIndex() >= 0 {
		s += ":b" + strconv.Itoa(int(id.GetBatchIndex()))
	}
	return s
}
