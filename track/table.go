package track

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

type cmdType = pulsarapi.BaseCommand_Type

// maxType bounds the command type numbers kept in tables.
const maxType = 128

// Request and response types paired by request_id. Broker-initiated
// CLOSE_PRODUCER and CLOSE_CONSUMER (s2c) carry a request_id but are not
// requests: requests are only taken from the client's direction.
var requestTypes = []cmdType{
	pulsarapi.BaseCommand_SUBSCRIBE, pulsarapi.BaseCommand_PRODUCER, pulsarapi.BaseCommand_UNSUBSCRIBE,
	pulsarapi.BaseCommand_CLOSE_PRODUCER, pulsarapi.BaseCommand_CLOSE_CONSUMER,
	pulsarapi.BaseCommand_PARTITIONED_METADATA, pulsarapi.BaseCommand_LOOKUP,
	pulsarapi.BaseCommand_CONSUMER_STATS, pulsarapi.BaseCommand_SEEK, pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID,
	pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE, pulsarapi.BaseCommand_GET_SCHEMA,
	pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA, pulsarapi.BaseCommand_ACK,
	pulsarapi.BaseCommand_WATCH_TOPIC_LIST, pulsarapi.BaseCommand_WATCH_TOPIC_LIST_CLOSE,
	pulsarapi.BaseCommand_NEW_TXN, pulsarapi.BaseCommand_ADD_PARTITION_TO_TXN,
	pulsarapi.BaseCommand_ADD_SUBSCRIPTION_TO_TXN, pulsarapi.BaseCommand_END_TXN,
	pulsarapi.BaseCommand_END_TXN_ON_PARTITION, pulsarapi.BaseCommand_END_TXN_ON_SUBSCRIPTION,
	pulsarapi.BaseCommand_TC_CLIENT_CONNECT_REQUEST,
}

var responseTypes = []cmdType{
	pulsarapi.BaseCommand_SUCCESS, pulsarapi.BaseCommand_ERROR, pulsarapi.BaseCommand_PRODUCER_SUCCESS,
	pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE, pulsarapi.BaseCommand_LOOKUP_RESPONSE,
	pulsarapi.BaseCommand_CONSUMER_STATS_RESPONSE, pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE,
	pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE, pulsarapi.BaseCommand_GET_SCHEMA_RESPONSE,
	pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE, pulsarapi.BaseCommand_ACK_RESPONSE,
	pulsarapi.BaseCommand_WATCH_TOPIC_LIST_SUCCESS, pulsarapi.BaseCommand_NEW_TXN_RESPONSE,
	pulsarapi.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE, pulsarapi.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE,
	pulsarapi.BaseCommand_END_TXN_RESPONSE, pulsarapi.BaseCommand_END_TXN_ON_PARTITION_RESPONSE,
	pulsarapi.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE, pulsarapi.BaseCommand_TC_CLIENT_CONNECT_RESPONSE,
}

// minVersion is the protocol version that introduced a command, from the
// ProtocolVersion comments of PulsarApi.proto (and the protocol notes).
// Commands older than v1 or of unknown introduction are not listed.
var minVersion = map[cmdType]int32{
	pulsarapi.BaseCommand_PING: 1, pulsarapi.BaseCommand_PONG: 1,
	pulsarapi.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES: 2,
	pulsarapi.BaseCommand_PARTITIONED_METADATA:              7, pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE: 7,
	pulsarapi.BaseCommand_LOOKUP: 7, pulsarapi.BaseCommand_LOOKUP_RESPONSE: 7,
	pulsarapi.BaseCommand_CONSUMER_STATS: 8, pulsarapi.BaseCommand_CONSUMER_STATS_RESPONSE: 8,
	pulsarapi.BaseCommand_REACHED_END_OF_TOPIC: 9,
	pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID:  12, pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE: 12,
	pulsarapi.BaseCommand_ACTIVE_CONSUMER_CHANGE:  12,
	pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE: 12, pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE: 12,
	pulsarapi.BaseCommand_AUTH_CHALLENGE: 14, pulsarapi.BaseCommand_AUTH_RESPONSE: 14,
	pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA: 15, pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE: 15,
	pulsarapi.BaseCommand_ACK_RESPONSE:              17,
	pulsarapi.BaseCommand_TC_CLIENT_CONNECT_REQUEST: 19, pulsarapi.BaseCommand_TC_CLIENT_CONNECT_RESPONSE: 19,
	pulsarapi.BaseCommand_TOPIC_MIGRATED: 20,
}

// table is what the tracker looks up per command type, built once per
// Tracker from the schema.
type table struct {
	request, response [maxType]bool
	minVersion        [maxType]int32
	// sub is the BaseCommand field of the type's sub-command; rid its
	// request_id field (nil when it has none); errField its ServerError
	// field (error or error_code).
	sub, rid, errField [maxType]protoreflect.FieldDescriptor
}

func newTable() *table {
	tb := &table{}
	for _, t := range requestTypes {
		tb.request[t] = true
	}
	for _, t := range responseTypes {
		tb.response[t] = true
	}
	for t, v := range minVersion {
		tb.minVersion[t] = v
	}
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
		if r := sub.ByName("request_id"); r != nil && r.Kind() == protoreflect.Uint64Kind {
			tb.rid[n] = r
		}
		for _, name := range []protoreflect.Name{"error", "error_code"} {
			if e := sub.ByName(name); e != nil && e.Kind() == protoreflect.EnumKind {
				tb.errField[n] = e
			}
		}
	}
	return tb
}

// requestID returns the request_id of the frame's sub-command, if set.
func (tb *table) requestID(cmd *pulsarapi.BaseCommand, t cmdType) (uint64, bool) {
	if t < 0 || int(t) >= maxType || tb.rid[t] == nil {
		return 0, false
	}
	m := cmd.ProtoReflect()
	if !m.Has(tb.sub[t]) {
		return 0, false
	}
	sm := m.Get(tb.sub[t]).Message()
	if !sm.Has(tb.rid[t]) {
		return 0, false
	}
	return sm.Get(tb.rid[t]).Uint(), true
}

// serverError returns the ServerError name a response carries, if any.
func (tb *table) serverError(cmd *pulsarapi.BaseCommand, t cmdType) string {
	switch t {
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
	if t < 0 || int(t) >= maxType || tb.errField[t] == nil {
		return ""
	}
	m := cmd.ProtoReflect()
	if !m.Has(tb.sub[t]) {
		return ""
	}
	sm := m.Get(tb.sub[t]).Message()
	if !sm.Has(tb.errField[t]) {
		return ""
	}
	v := sm.Get(tb.errField[t]).Enum()
	if ev := tb.errField[t].Enum().Values().ByNumber(v); ev != nil {
		return string(ev.Name())
	}
	return "ServerError(" + itoa(int64(v)) + ")"
}

func errName(set *pulsarapi.ServerError, e pulsarapi.ServerError) string {
	if set == nil {
		return "Failed"
	}
	return e.String()
}
