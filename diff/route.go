package diff

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// route picks the stream of a frame: its producer's or consumer's, its
// topic's lookups for a LOOKUP or PARTITIONED_METADATA, its request's for
// a response, else the connection's.
func (r *Recorder) route(cs *connState, f *decode.Frame, sub protoreflect.Message) *stream {
	t := int(f.Type)
	if sub == nil || t < 0 || t >= maxType {
		return cs.stream
	}
	tb := r.tb
	st := cs.stream
	switch {
	case f.Type == pulsarapi.BaseCommand_PRODUCER && f.Dir == reassembly.ClientToServer:
		id, _ := uintField(sub, tb.producer[t])
		base := "producer " + stringField(sub, tb.topic[t])
		if n := stringField(sub, tb.prodName[t]); n != "" && r.rules["producer_name"] == "" {
			base += " name=" + n
		}
		st = r.entity(cs, cs.producers, id, base, stringField(sub, tb.topic[t]))
	case f.Type == pulsarapi.BaseCommand_SUBSCRIBE && f.Dir == reassembly.ClientToServer:
		id, _ := uintField(sub, tb.consumer[t])
		base := "consumer " + stringField(sub, tb.topic[t]) + " sub=" + stringField(sub, tb.subscription[t])
		if n := stringField(sub, tb.consName[t]); n != "" && r.rules["consumer_name"] == "" {
			base += " name=" + n
		}
		st = r.entity(cs, cs.consumers, id, base, stringField(sub, tb.topic[t]))
	case (f.Type == pulsarapi.BaseCommand_LOOKUP || f.Type == pulsarapi.BaseCommand_PARTITIONED_METADATA) && f.Dir == reassembly.ClientToServer:
		// Independent exchanges, sent concurrently: compared per topic,
		// not in the order the scheduling gave them.
		topic := stringField(sub, tb.topic[t])
		if st = cs.lookups[topic]; st == nil {
			st = r.newStream("lookup "+topic, topic)
			cs.lookups[topic] = st
		}
	default:
		if id, ok := uintField(sub, tb.producer[t]); ok {
			st = r.known(cs.producers, id, "producer (created before the capture)")
		} else if id, ok := uintField(sub, tb.consumer[t]); ok {
			st = r.known(cs.consumers, id, "consumer (created before the capture)")
		} else if id, ok := uintField(sub, tb.request[t]); ok && f.Dir == reassembly.ServerToClient {
			if q, found := cs.requests[id]; found {
				delete(cs.requests, id)
				st = q.stream
				r.created(cs, q, f.Type)
			}
		}
	}
	if id, ok := uintField(sub, tb.request[t]); ok && f.Dir == reassembly.ClientToServer {
		cs.requests[id] = request{stream: st, typ: f.Type}
	}
	return st
}

// entity returns the stream of a PRODUCER or SUBSCRIBE: the same id's
// stream on a retry, a failed earlier attempt's stream, or a new one.
func (r *Recorder) entity(cs *connState, ids map[uint64]*stream, id uint64, base, topic string) *stream {
	if st := ids[id]; st != nil && st.topic == topic {
		return st
	}
	st := cs.retry[base]
	if st != nil {
		delete(cs.retry, base)
	} else {
		st = r.newStream(base, topic)
	}
	ids[id] = st
	return st
}

// known returns the stream of a producer or consumer id, creating one for
// ids whose creation the capture does not hold.
func (r *Recorder) known(ids map[uint64]*stream, id uint64, base string) *stream {
	if st := ids[id]; st != nil {
		return st
	}
	st := r.newStream(base, "")
	ids[id] = st
	return st
}

// created notes the answer to a PRODUCER or SUBSCRIBE: after an ERROR the
// client's next attempt on this connection continues the same stream.
func (r *Recorder) created(cs *connState, q request, resp pulsarapi.BaseCommand_Type) {
	if q.typ != pulsarapi.BaseCommand_PRODUCER && q.typ != pulsarapi.BaseCommand_SUBSCRIBE {
		return
	}
	if resp == pulsarapi.BaseCommand_ERROR {
		cs.retry[baseOf(q.stream.key)] = q.stream
	}
}

// baseOf strips the " #N" suffix of a producer or consumer key.
func baseOf(key string) string {
	prefix, _, _ := keyParts(key)
	return prefix
}

// keyParts splits a stream key around its last " #N": prefix, N, rest.
func keyParts(key string) (string, int, string) {
	i := strings.LastIndex(key, " #")
	if i < 0 {
		return key, 0, ""
	}
	j := i + 2
	for j < len(key) && key[j] >= '0' && key[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(key[i+2 : j])
	return key[:i], n, key[j:]
}

// keyLess orders stream keys as text, but "#10" after "#9".
func keyLess(a, b string) bool {
	pa, na, ra := keyParts(a)
	pb, nb, rb := keyParts(b)
	if pa != pb {
		return pa < pb
	}
	if na != nb {
		return na < nb
	}
	return ra < rb
}
