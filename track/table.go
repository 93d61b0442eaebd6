package track

import "github.com/pulsarscope/pulsarscope/decode/pulsarapi"

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
	pulsarapi.BaseCommand_TC_CLIENT_CONNECT_REQUEST, pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE,
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
	pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE_RESPONSE,
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
	// Scalable topics and the transaction-coordinator watch (v21).
	pulsarapi.BaseCommand_SCALABLE_TOPIC_LOOKUP: 21, pulsarapi.BaseCommand_SCALABLE_TOPIC_UPDATE: 21,
	pulsarapi.BaseCommand_SCALABLE_TOPIC_CLOSE: 21, pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE: 21,
	pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE_RESPONSE: 21, pulsarapi.BaseCommand_SCALABLE_TOPIC_ASSIGNMENT_UPDATE: 21,
	pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS: 21, pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS_UPDATE: 21,
	pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS_CLOSE: 21, pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS: 21,
	pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS_UPDATE: 21, pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS_CLOSE: 21,
}

// table is what the tracker looks up per command type. It is built once
// (tables) and shared by every Tracker.
type table struct {
	request, response [maxType]bool
	minVersion        [maxType]int32
}

// isRequest reports whether t is a request type; a type out of the
// table's range (newer than the schema, or hostile) is not.
func (tb *table) isRequest(t cmdType) bool {
	return t >= 0 && int(t) < maxType && tb.request[t]
}

// isResponse reports whether t is a response type; a type out of the
// table's range is not.
func (tb *table) isResponse(t cmdType) bool {
	return t >= 0 && int(t) < maxType && tb.response[t]
}

// tables is the one table, built at package initialisation.
var tables = newTable()

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
	return tb
}

// requestID returns the request_id of the frame's sub-command, if set. It
// reads the generated fields directly (no protoreflect): every sub-command
// with a request_id field is listed; TestRequestIDTyped checks the list
// against the schema.
func (tb *table) requestID(cmd *pulsarapi.BaseCommand, t cmdType) (uint64, bool) {
	var r *uint64
	switch t {
	case pulsarapi.BaseCommand_SUBSCRIBE:
		if m := cmd.Subscribe; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_PRODUCER:
		if m := cmd.Producer; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ACK:
		if m := cmd.Ack; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_UNSUBSCRIBE:
		if m := cmd.Unsubscribe; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_SUCCESS:
		if m := cmd.Success; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ERROR:
		if m := cmd.Error; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_CLOSE_PRODUCER:
		if m := cmd.CloseProducer; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_CLOSE_CONSUMER:
		if m := cmd.CloseConsumer; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_PRODUCER_SUCCESS:
		if m := cmd.ProducerSuccess; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_PARTITIONED_METADATA:
		if m := cmd.PartitionMetadata; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE:
		if m := cmd.PartitionMetadataResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_LOOKUP:
		if m := cmd.LookupTopic; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_LOOKUP_RESPONSE:
		if m := cmd.LookupTopicResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_CONSUMER_STATS:
		if m := cmd.ConsumerStats; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_CONSUMER_STATS_RESPONSE:
		if m := cmd.ConsumerStatsResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_SEEK:
		if m := cmd.Seek; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID:
		if m := cmd.GetLastMessageId; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE:
		if m := cmd.GetLastMessageIdResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		if m := cmd.GetTopicsOfNamespace; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE:
		if m := cmd.GetTopicsOfNamespaceResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_SCHEMA:
		if m := cmd.GetSchema; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_SCHEMA_RESPONSE:
		if m := cmd.GetSchemaResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ACK_RESPONSE:
		if m := cmd.AckResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA:
		if m := cmd.GetOrCreateSchema; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE:
		if m := cmd.GetOrCreateSchemaResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_NEW_TXN:
		if m := cmd.NewTxn; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_NEW_TXN_RESPONSE:
		if m := cmd.NewTxnResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ADD_PARTITION_TO_TXN:
		if m := cmd.AddPartitionToTxn; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE:
		if m := cmd.AddPartitionToTxnResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ADD_SUBSCRIPTION_TO_TXN:
		if m := cmd.AddSubscriptionToTxn; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE:
		if m := cmd.AddSubscriptionToTxnResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN:
		if m := cmd.EndTxn; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN_RESPONSE:
		if m := cmd.EndTxnResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN_ON_PARTITION:
		if m := cmd.EndTxnOnPartition; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN_ON_PARTITION_RESPONSE:
		if m := cmd.EndTxnOnPartitionResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN_ON_SUBSCRIPTION:
		if m := cmd.EndTxnOnSubscription; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE:
		if m := cmd.EndTxnOnSubscriptionResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_TC_CLIENT_CONNECT_REQUEST:
		if m := cmd.TcClientConnectRequest; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_TC_CLIENT_CONNECT_RESPONSE:
		if m := cmd.TcClientConnectResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE:
		if m := cmd.ScalableTopicSubscribe; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE_RESPONSE:
		if m := cmd.ScalableTopicSubscribeResponse; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_WATCH_TOPIC_LIST:
		if m := cmd.WatchTopicList; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_WATCH_TOPIC_LIST_SUCCESS:
		if m := cmd.WatchTopicListSuccess; m != nil {
			r = m.RequestId
		}
	case pulsarapi.BaseCommand_WATCH_TOPIC_LIST_CLOSE:
		if m := cmd.WatchTopicListClose; m != nil {
			r = m.RequestId
		}
	}
	if r == nil {
		return 0, false
	}
	return *r, true
}

// ServerError returns the ServerError name a response command carries (its
// error or error_code, "Failed" for a failed lookup without one), or ""
// when it carries none: the value the Tracker puts in Info.Error.
func ServerError(cmd *pulsarapi.BaseCommand) string {
	if cmd == nil {
		return ""
	}
	return tables.serverError(cmd, cmd.GetType())
}

// serverError returns the ServerError name a response carries, if any.
func (tb *table) serverError(cmd *pulsarapi.BaseCommand, t cmdType) string {
	var e *pulsarapi.ServerError
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
	case pulsarapi.BaseCommand_SEND_ERROR:
		if m := cmd.SendError; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_ERROR:
		if m := cmd.Error; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_CONSUMER_STATS_RESPONSE:
		if m := cmd.ConsumerStatsResponse; m != nil {
			e = m.ErrorCode
		}
	case pulsarapi.BaseCommand_GET_SCHEMA_RESPONSE:
		if m := cmd.GetSchemaResponse; m != nil {
			e = m.ErrorCode
		}
	case pulsarapi.BaseCommand_ACK_RESPONSE:
		if m := cmd.AckResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE:
		if m := cmd.GetOrCreateSchemaResponse; m != nil {
			e = m.ErrorCode
		}
	case pulsarapi.BaseCommand_NEW_TXN_RESPONSE:
		if m := cmd.NewTxnResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_ADD_PARTITION_TO_TXN_RESPONSE:
		if m := cmd.AddPartitionToTxnResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_ADD_SUBSCRIPTION_TO_TXN_RESPONSE:
		if m := cmd.AddSubscriptionToTxnResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_END_TXN_RESPONSE:
		if m := cmd.EndTxnResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_END_TXN_ON_PARTITION_RESPONSE:
		if m := cmd.EndTxnOnPartitionResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_END_TXN_ON_SUBSCRIPTION_RESPONSE:
		if m := cmd.EndTxnOnSubscriptionResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_TC_CLIENT_CONNECT_RESPONSE:
		if m := cmd.TcClientConnectResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_SCALABLE_TOPIC_UPDATE:
		if m := cmd.ScalableTopicUpdate; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE_RESPONSE:
		if m := cmd.ScalableTopicSubscribeResponse; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS_UPDATE:
		if m := cmd.WatchScalableTopicsUpdate; m != nil {
			e = m.Error
		}
	case pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS_UPDATE:
		if m := cmd.WatchTcAssignmentsUpdate; m != nil {
			e = m.Error
		}
	}
	if e == nil {
		return ""
	}
	if name, ok := pulsarapi.ServerError_name[int32(*e)]; ok {
		return name
	}
	return "ServerError(" + itoa(int64(*e)) + ")"
}

func errName(set *pulsarapi.ServerError, e pulsarapi.ServerError) string {
	if set == nil {
		return "Failed"
	}
	return e.String()
}
