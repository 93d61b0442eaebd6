package render

import "github.com/pulsarscope/pulsarscope/decode/pulsarapi"

// Family groups command types for coloring and filtering.
type Family string

// The command families.
const (
	FamilyConnection  Family = "connection"
	FamilyProducer    Family = "producer"
	FamilyConsumer    Family = "consumer"
	FamilyLookup      Family = "lookup"
	FamilyTransaction Family = "transaction"
	FamilyError       Family = "error"
)

// FamilyOf returns the family of a command type.
func FamilyOf(t pulsarapi.BaseCommand_Type) Family {
	switch t {
	case pulsarapi.BaseCommand_ERROR, pulsarapi.BaseCommand_SEND_ERROR:
		return FamilyError
	case pulsarapi.BaseCommand_PRODUCER, pulsarapi.BaseCommand_PRODUCER_SUCCESS, pulsarapi.BaseCommand_SEND,
		pulsarapi.BaseCommand_SEND_RECEIPT, pulsarapi.BaseCommand_CLOSE_PRODUCER:
		return FamilyProducer
	case pulsarapi.BaseCommand_SUBSCRIBE, pulsarapi.BaseCommand_FLOW, pulsarapi.BaseCommand_MESSAGE,
		pulsarapi.BaseCommand_ACK, pulsarapi.BaseCommand_ACK_RESPONSE, pulsarapi.BaseCommand_UNSUBSCRIBE,
		pulsarapi.BaseCommand_CLOSE_CONSUMER, pulsarapi.BaseCommand_REDELIVER_UNACKNOWLEDGED_MESSAGES,
		pulsarapi.BaseCommand_CONSUMER_STATS, pulsarapi.BaseCommand_CONSUMER_STATS_RESPONSE,
		pulsarapi.BaseCommand_REACHED_END_OF_TOPIC, pulsarapi.BaseCommand_SEEK,
		pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID, pulsarapi.BaseCommand_GET_LAST_MESSAGE_ID_RESPONSE,
		pulsarapi.BaseCommand_ACTIVE_CONSUMER_CHANGE,
		pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE, pulsarapi.BaseCommand_SCALABLE_TOPIC_SUBSCRIBE_RESPONSE,
		pulsarapi.BaseCommand_SCALABLE_TOPIC_ASSIGNMENT_UPDATE:
		return FamilyConsumer
	case pulsarapi.BaseCommand_LOOKUP, pulsarapi.BaseCommand_LOOKUP_RESPONSE,
		pulsarapi.BaseCommand_PARTITIONED_METADATA, pulsarapi.BaseCommand_PARTITIONED_METADATA_RESPONSE,
		pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE, pulsarapi.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE,
		pulsarapi.BaseCommand_GET_SCHEMA, pulsarapi.BaseCommand_GET_SCHEMA_RESPONSE,
		pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA, pulsarapi.BaseCommand_GET_OR_CREATE_SCHEMA_RESPONSE,
		pulsarapi.BaseCommand_WATCH_TOPIC_LIST, pulsarapi.BaseCommand_WATCH_TOPIC_LIST_SUCCESS,
		pulsarapi.BaseCommand_WATCH_TOPIC_UPDATE, pulsarapi.BaseCommand_WATCH_TOPIC_LIST_CLOSE,
		pulsarapi.BaseCommand_TOPIC_MIGRATED,
		pulsarapi.BaseCommand_SCALABLE_TOPIC_LOOKUP, pulsarapi.BaseCommand_SCALABLE_TOPIC_UPDATE,
		pulsarapi.BaseCommand_SCALABLE_TOPIC_CLOSE, pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS,
		pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS_UPDATE, pulsarapi.BaseCommand_WATCH_SCALABLE_TOPICS_CLOSE:
		return FamilyLookup
	case pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS, pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS_UPDATE,
		pulsarapi.BaseCommand_WATCH_TC_ASSIGNMENTS_CLOSE:
		return FamilyTransaction
	}
	if t >= pulsarapi.BaseCommand_NEW_TXN && t <= pulsarapi.BaseCommand_TC_CLIENT_CONNECT_RESPONSE {
		return FamilyTransaction
	}
	return FamilyConnection
}
