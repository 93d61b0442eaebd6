package diff

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Mode is what normalisation does with a field or pseudo-field.
type Mode string

// The normalisation modes. A name with no mode is kept as it is.
const (
	// Ignore drops the field (or, for a pseudo-field, the frames).
	Ignore Mode = "ignore"
	// Renumber replaces values by their order of first appearance within
	// a stream (message ids: m1, m2…; names: <1>, <2>…).
	Renumber Mode = "renumber"
	// Summarise replaces individual frames by one summary line per stream
	// (ACK frames: the set of acknowledged messages).
	Summarise Mode = "summarise"
)

// Pseudo-fields: names for things that are not a single protobuf field.
const (
	// PseudoKeepalive stands for PING and PONG frames.
	PseudoKeepalive = "keepalive"
	// PseudoAckFrames stands for the individual ACK and ACK_RESPONSE frames.
	PseudoAckFrames = "ack-frames"
	// PseudoMessageID stands for the ledgerId and entryId of message ids.
	PseudoMessageID = "message_id"
	// PseudoPayload stands for the payload size and digest of SEND and MESSAGE.
	PseudoPayload = "payload"
	// PseudoServer stands for the broker address in connection keys.
	PseudoServer = "server"
	// PseudoEntries stands for the list of a batch's entries (their
	// metadata and sizes); summarised as their count by default, the
	// payload digest covering their content.
	PseudoEntries = "entries"
	// PseudoInterleaving stands for where responses fall among the other
	// commands of their stream: with it ignored (the default) each
	// response is placed right after its request, so pipelined requests
	// (SEND, SEND, SEND_RECEIPT…) read the same whatever the timing.
	PseudoInterleaving = "interleaving"
)

// isPseudo reports whether name is a pseudo-field.
func isPseudo(name string) bool {
	switch name {
	case PseudoKeepalive, PseudoAckFrames, PseudoMessageID, PseudoPayload, PseudoServer, PseudoEntries, PseudoInterleaving:
		return true
	}
	return false
}

// DefaultRules returns the normalisation applied when nothing is asked for:
// what differs between two runs of the same scenario is left out.
func DefaultRules() map[string]Mode {
	return map[string]Mode{
		// Numeric ids chosen by the client or broker: streams are keyed by
		// topic, subscription and name instead, and responses are placed in
		// their request's stream.
		"request_id": Ignore, "producer_id": Ignore, "consumer_id": Ignore,
		// Times and broker-assigned values.
		"publish_time": Ignore, "deliver_at_time": Ignore, "broker_timestamp": Ignore, "index": Ignore,
		"uuid": Ignore, "txnid_least_bits": Ignore, "txnid_most_bits": Ignore,
		// Broker-generated (and client-randomised) names.
		"producer_name": Renumber, "consumer_name": Renumber,
		PseudoMessageID: Renumber,
		// Where a consumer's acknowledgements stood when it asked
		// (GET_LAST_MESSAGE_ID): it depends on when its grouped acks reached
		// the broker, which is timing.
		"consumer_mark_delete_position": Ignore,
		// Time-driven frame counts.
		PseudoKeepalive: Ignore,
		PseudoAckFrames: Summarise,
		// Batch entries: their count (the payload digest covers them).
		PseudoEntries: Summarise,
		// Responses right after their requests.
		PseudoInterleaving: Ignore,
	}
}

// alias maps names users may give to the pseudo-field they belong to.
func alias(name string) string {
	switch name {
	case "ledgerId", "entryId":
		return PseudoMessageID
	case "PING", "PONG":
		return PseudoKeepalive
	case "ACK", "ACK_RESPONSE":
		return PseudoAckFrames
	}
	return name
}

// Resolve applies --ignore and --keep names to the defaults and returns the
// effective rules. Names are protobuf field names of the Pulsar schema (at
// any depth) or pseudo-fields; anything else is an error.
func Resolve(ignore, keep []string) (map[string]Mode, error) {
	rules := DefaultRules()
	known := schemaFieldNames()
	norm := func(flag, n string) (string, error) {
		n = strings.TrimSpace(n)
		n = alias(n)
		if isPseudo(n) || known[n] {
			return n, nil
		}
		return "", fmt.Errorf("%s %q: not a field of the Pulsar schema nor one of %s", flag, n, strings.Join(PseudoFields(), ", "))
	}
	for _, n := range keep {
		name, err := norm("--keep", n)
		if err != nil {
			return nil, err
		}
		delete(rules, name)
	}
	for _, n := range ignore {
		name, err := norm("--ignore", n)
		if err != nil {
			return nil, err
		}
		rules[name] = Ignore
	}
	return rules, nil
}

// PseudoFields returns the pseudo-field names, sorted.
func PseudoFields() []string {
	return []string{PseudoAckFrames, PseudoEntries, PseudoInterleaving, PseudoKeepalive, PseudoMessageID, PseudoPayload, PseudoServer}
}

// schemaFieldNames returns every field name of the Pulsar schema.
func schemaFieldNames() map[string]bool {
	names := map[string]bool{}
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			m := ms.Get(i)
			for j := 0; j < m.Fields().Len(); j++ {
				names[string(m.Fields().Get(j).Name())] = true
			}
			walk(m.Messages())
		}
	}
	walk(pulsarapi.File_pulsar_api_proto.Messages())
	return names
}

// reconcile checks that a transcript recorded with rules have can be
// compared under want and returns the names whose data must be reduced
// (ignored now but kept or renumbered then; entries listed then but
// summarised now).
func reconcile(have, want map[string]Mode) (drop []string, err error) {
	names := map[string]bool{}
	for n := range have {
		names[n] = true
	}
	for n := range want {
		names[n] = true
	}
	var bad []string
	for n := range names {
		h, w := have[n], want[n]
		switch {
		case h == w:
		case w == Ignore:
			drop = append(drop, n)
		case n == PseudoEntries && w == Summarise && h == "":
			drop = append(drop, n) // listed entries are reduced to their count
		default:
			bad = append(bad, fmt.Sprintf("%s (recorded: %s, asked: %s)", n, modeName(h), modeName(w)))
		}
	}
	sort.Strings(drop)
	sort.Strings(bad)
	if len(bad) > 0 {
		return nil, fmt.Errorf("the transcript was recorded with other normalisation rules for %s; re-record it with the same --ignore/--keep (pulsarscope diff --update)", strings.Join(bad, ", "))
	}
	return drop, nil
}

func modeName(m Mode) string {
	if m == "" {
		return "keep"
	}
	return string(m)
}
