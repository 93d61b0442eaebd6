package track

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode"
	pb "github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

// wire is one frame of a synthetic conversation: its direction, the
// seconds since the start, and the command (plus payload for SEND/MESSAGE).
type wire struct {
	dir     reassembly.Dir
	at      float64
	cmd     *pb.BaseCommand
	payload bool
	bem     bool                // the payload starts with BrokerEntryMetadata (0x0e02)
	md      *pb.MessageMetadata // the payload's metadata (nil: a plain one)
}

const c2s, s2c = reassembly.ClientToServer, reassembly.ServerToClient

// encode writes a frame as a client or broker would.
func encode(t testing.TB, w wire) []byte {
	cmd, err := proto.Marshal(w.cmd)
	if err != nil {
		t.Fatal(err)
	}
	var tail []byte
	if w.payload {
		m := w.md
		if m == nil {
			m = &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(1)}
		}
		md, _ := proto.Marshal(m)
		body := binary.BigEndian.AppendUint32(nil, uint32(len(md)))
		body = append(append(body, md...), "hello"...)
		tail = append([]byte{0x0e, 0x01}, binary.BigEndian.AppendUint32(nil, decode.CRC32C(body))...)
		tail = append(tail, body...)
		if w.bem {
			b, _ := proto.Marshal(&pb.BrokerEntryMetadata{Index: proto.Uint64(7)})
			bem := append([]byte{0x0e, 0x02}, binary.BigEndian.AppendUint32(nil, uint32(len(b)))...)
			tail = append(append(bem, b...), tail...)
		}
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(cmd)+len(tail)))
	out = binary.BigEndian.AppendUint32(out, uint32(len(cmd)))
	return append(append(out, cmd...), tail...)
}

// play feeds frames through the real stream decoder and a Tracker.
func play(t testing.TB, opts Options, frames []wire) *collector {
	t.Helper()
	c := &reassembly.Conn{ID: 1, HandshakeSeen: true, Client: netip.MustParseAddrPort("10.0.0.1:40000"),
		Server: netip.MustParseAddrPort("10.0.0.2:6650"), FirstSeen: time.Unix(1000, 0)}
	col := &collector{}
	sd := decode.NewStreamDecoder(New(col, opts), decode.Options{})
	sd.Open(c)
	end := c.FirstSeen
	for _, w := range frames {
		end = c.FirstSeen.Add(time.Duration(w.at * float64(time.Second)))
		sd.Data(c, w.dir, encode(t, w), end)
	}
	sd.Close(c, reassembly.CloseFIN, end)
	for _, f := range col.frames {
		for _, p := range f.problems {
			if strings.HasPrefix(p.Code, "bad-") || p.Code == "protobuf-invalid" {
				t.Fatalf("frame %d does not decode: %v", f.n, p)
			}
		}
	}
	return col
}

func typ(t pb.BaseCommand_Type) *pb.BaseCommand_Type { return &t }

func connect(v int32) wire {
	return wire{c2s, 0, &pb.BaseCommand{Type: typ(pb.BaseCommand_CONNECT), Connect: &pb.CommandConnect{ClientVersion: proto.String("t"), ProtocolVersion: proto.Int32(v)}}, false, false, nil}
}

func connected(v int32, max int32) wire {
	c := &pb.CommandConnected{ServerVersion: proto.String("b"), ProtocolVersion: proto.Int32(v)}
	if max > 0 {
		c.MaxMessageSize = proto.Int32(max)
	}
	return wire{s2c, 0.001, &pb.BaseCommand{Type: typ(pb.BaseCommand_CONNECTED), Connected: c}, false, false, nil}
}

func lookup(rid uint64, topic string) wire {
	return wire{c2s, 0.01, &pb.BaseCommand{Type: typ(pb.BaseCommand_LOOKUP), LookupTopic: &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(rid)}}, false, false, nil}
}

func lookupResp(rid uint64, r pb.CommandLookupTopicResponse_LookupType, url string) wire {
	return wire{s2c, 0.02, &pb.BaseCommand{Type: typ(pb.BaseCommand_LOOKUP_RESPONSE), LookupTopicResponse: &pb.CommandLookupTopicResponse{
		RequestId: proto.Uint64(rid), Response: r.Enum(), BrokerServiceUrl: proto.String(url)}}, false, false, nil}
}

func producer(rid, id uint64, topic string) wire {
	return wire{c2s, 0.03, &pb.BaseCommand{Type: typ(pb.BaseCommand_PRODUCER), Producer: &pb.CommandProducer{Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(rid)}}, false, false, nil}
}

func producerOK(rid uint64) wire {
	return wire{s2c, 0.04, &pb.BaseCommand{Type: typ(pb.BaseCommand_PRODUCER_SUCCESS), ProducerSuccess: &pb.CommandProducerSuccess{RequestId: proto.Uint64(rid), ProducerName: proto.String("p")}}, false, false, nil}
}

func send(id, seq uint64) wire {
	return wire{c2s, 0.05, &pb.BaseCommand{Type: typ(pb.BaseCommand_SEND), Send: &pb.CommandSend{ProducerId: proto.Uint64(id), SequenceId: proto.Uint64(seq)}}, true, false, nil}
}

func receipt(id, seq, ledger, entry uint64) wire {
	return wire{s2c, 0.06, &pb.BaseCommand{Type: typ(pb.BaseCommand_SEND_RECEIPT), SendReceipt: &pb.CommandSendReceipt{ProducerId: proto.Uint64(id), SequenceId: proto.Uint64(seq),
		MessageId: &pb.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}}}, false, false, nil}
}

func subscribe(rid, id uint64) wire {
	return wire{c2s, 0.03, &pb.BaseCommand{Type: typ(pb.BaseCommand_SUBSCRIBE), Subscribe: &pb.CommandSubscribe{Topic: proto.String("t"), Subscription: proto.String("s"),
		SubType: pb.CommandSubscribe_Exclusive.Enum(), ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(rid), ConsumerName: proto.String("c")}}, false, false, nil}
}

func success(rid uint64) wire {
	return wire{s2c, 0.04, &pb.BaseCommand{Type: typ(pb.BaseCommand_SUCCESS), Success: &pb.CommandSuccess{RequestId: proto.Uint64(rid)}}, false, false, nil}
}

func flow(id uint64, n uint32) wire {
	return wire{c2s, 0.05, &pb.BaseCommand{Type: typ(pb.BaseCommand_FLOW), Flow: &pb.CommandFlow{ConsumerId: proto.Uint64(id), MessagePermits: proto.Uint32(n)}}, false, false, nil}
}

func message(id, ledger, entry uint64) wire {
	return wire{s2c, 0.06, &pb.BaseCommand{Type: typ(pb.BaseCommand_MESSAGE), Message: &pb.CommandMessage{ConsumerId: proto.Uint64(id),
		MessageId: &pb.MessageIdData{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}}}, true, false, nil}
}

func ack(id, ledger, entry uint64) wire {
	return wire{c2s, 0.07, &pb.BaseCommand{Type: typ(pb.BaseCommand_ACK), Ack: &pb.CommandAck{ConsumerId: proto.Uint64(id), AckType: pb.CommandAck_Individual.Enum(),
		MessageId: []*pb.MessageIdData{{LedgerId: proto.Uint64(ledger), EntryId: proto.Uint64(entry)}}}}, false, false, nil}
}

// shared is subscribe with a Shared subscription.
func shared(rid, id uint64) wire {
	w := subscribe(rid, id)
	w.cmd.Subscribe.SubType = pb.CommandSubscribe_Shared.Enum()
	return w
}

// cumulative is ack, cumulative.
func cumulative(id, ledger, entry uint64) wire {
	w := ack(id, ledger, entry)
	w.cmd.Ack.AckType = pb.CommandAck_Cumulative.Enum()
	return w
}

// authoritative sets the authoritative flag of a LOOKUP or LOOKUP_RESPONSE.
func authoritative(w wire, a bool) wire {
	if l := w.cmd.LookupTopic; l != nil {
		l.Authoritative = proto.Bool(a)
	}
	if r := w.cmd.LookupTopicResponse; r != nil {
		r.Authoritative = proto.Bool(a)
	}
	return w
}

// chunk is send(id, seq) carrying chunk k of n of message uuid (batch:
// num_messages_in_batch, 0 for none).
func chunk(id, seq uint64, uuid string, k, n, batch int32) wire {
	w := send(id, seq)
	w.md = &pb.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(seq), PublishTime: proto.Uint64(1),
		Uuid: proto.String(uuid), ChunkId: proto.Int32(k), NumChunksFromMsg: proto.Int32(n), TotalChunkMsgSize: proto.Int32(15)}
	if batch > 0 {
		w.md.NumMessagesInBatch = proto.Int32(batch)
	}
	return w
}

// withBEM is w with broker entry metadata before its payload.
func withBEM(w wire) wire { w.bem = true; return w }

// keyShared is subscribe with a Key_Shared subscription.
func keyShared(rid, id uint64) wire {
	w := subscribe(rid, id)
	w.cmd.Subscribe.SubType = pb.CommandSubscribe_Key_Shared.Enum()
	return w
}

// ackWithReceipt is ack asking for a receipt (request_id).
func ackWithReceipt(id, ledger, entry, rid uint64) wire {
	w := ack(id, ledger, entry)
	w.cmd.Ack.RequestId = proto.Uint64(rid)
	return w
}

// watcherConnect is connect(20) announcing supports_topic_watchers.
func watcherConnect() wire {
	w := connect(20)
	w.cmd.Connect.FeatureFlags = &pb.FeatureFlags{SupportsTopicWatchers: proto.Bool(true)}
	return w
}

func watchTopics(rid uint64) wire {
	return wire{c2s, 0.02, &pb.BaseCommand{Type: typ(pb.BaseCommand_WATCH_TOPIC_LIST), WatchTopicList: &pb.CommandWatchTopicList{RequestId: proto.Uint64(rid),
		WatcherId: proto.Uint64(1), Namespace: proto.String("public/default"), TopicsPattern: proto.String(".*")}}, false, false, nil}
}

func watchOK(rid uint64) wire {
	return wire{s2c, 0.03, &pb.BaseCommand{Type: typ(pb.BaseCommand_WATCH_TOPIC_LIST_SUCCESS), WatchTopicListSuccess: &pb.CommandWatchTopicListSuccess{RequestId: proto.Uint64(rid),
		WatcherId: proto.Uint64(1), TopicsHash: proto.String("h")}}, false, false, nil}
}

func ping(d reassembly.Dir, at float64) wire {
	return wire{d, at, &pb.BaseCommand{Type: typ(pb.BaseCommand_PING), Ping: &pb.CommandPing{}}, false, false, nil}
}

func at(w wire, s float64) wire { w.at = s; return w }

// TestConformance provokes each conformance problem once.
func TestConformance(t *testing.T) {
	hs := []wire{connect(20), connected(20, 0)}
	with := func(ws ...wire) []wire { return append(append([]wire(nil), hs...), ws...) }
	tests := []struct {
		name   string
		opts   Options
		frames []wire
		want   map[string]int
	}{
		{"clean", Options{}, with(lookup(0, "a"), lookupResp(0, pb.CommandLookupTopicResponse_Connect, "pulsar://x:6650"),
			producer(1, 0, "a"), producerOK(1), send(0, 0), receipt(0, 0, 1, 1)), map[string]int{}},
		{"unanswered", Options{}, with(lookup(0, "a")), map[string]int{CodeUnanswered: 1}},
		{"timeout", Options{RequestTimeout: time.Second}, with(lookup(0, "a"), at(lookup(1, "b"), 5), at(lookupResp(1, 1, "pulsar://x:6650"), 5)),
			map[string]int{CodeUnanswered: 1}},
		{"response-without-request", Options{}, with(success(7)), map[string]int{CodeUnmatchedResponse: 1}},
		{"request-id-reused", Options{}, with(lookup(3, "a"), lookup(3, "b"), lookupResp(3, 1, "pulsar://x:6650")),
			map[string]int{CodeRequestIDReused: 1}},
		{"send-unknown-producer", Options{}, with(send(9, 0), receipt(9, 0, 1, 1)), map[string]int{CodeUnknownProducer: 1}},
		{"send-before-ready", Options{}, with(producer(1, 0, "a"), send(0, 0), producerOK(1), receipt(0, 0, 1, 1)),
			map[string]int{CodeProducerNotReady: 1}},
		{"permits-exceeded", Options{}, with(subscribe(1, 0), success(1), flow(0, 1), message(0, 1, 1), message(0, 1, 2)),
			map[string]int{CodePermitsExceeded: 1}},
		{"ack-not-delivered", Options{}, with(subscribe(1, 0), success(1), flow(0, 10), message(0, 1, 1), ack(0, 1, 1), ack(0, 1, 5)),
			map[string]int{CodeAckNotDelivered: 1}},
		{"command-too-new", Options{}, []wire{connect(6), connected(6, 0), lookup(0, "a"), lookupResp(0, 1, "pulsar://x:6650")},
			map[string]int{CodeCommandTooNew: 2}},
		{"before-connected", Options{}, []wire{connect(20), lookup(0, "a"), connected(20, 0), lookupResp(0, 1, "pulsar://x:6650")},
			map[string]int{CodeBeforeConnected: 1}},
		{"ping-unanswered", Options{}, with(ping(s2c, 1), at(lookup(0, "a"), 70), at(lookupResp(0, 1, "pulsar://x:6650"), 70)),
			map[string]int{CodePingUnanswered: 1}},
		// The broker's default keep-alive is 60 s: 39 s without a PONG is
		// no problem by default, one with a 30 s keep-alive.
		{"ping within the default keep-alive", Options{}, with(ping(s2c, 1), at(lookup(0, "a"), 40), at(lookupResp(0, 1, "pulsar://x:6650"), 40)),
			map[string]int{}},
		{"ping-unanswered, keep-alive 30 s", Options{KeepAlive: 30 * time.Second}, with(ping(s2c, 1), at(lookup(0, "a"), 40), at(lookupResp(0, 1, "pulsar://x:6650"), 40)),
			map[string]int{CodePingUnanswered: 1}},
		{"frame-over-max-size", Options{}, []wire{connect(20), connected(20, 10), producer(1, 0, strings.Repeat("t", 11000)), producerOK(1)},
			map[string]int{CodeFrameOverMaxSize: 1}},
		{"error-response", Options{}, with(lookup(0, "a"), lookupResp(0, pb.CommandLookupTopicResponse_Failed, "")),
			map[string]int{CodeErrorResponse: 1}},
		{"redirect-loop", Options{}, with(lookup(0, "a"), lookupResp(0, pb.CommandLookupTopicResponse_Redirect, "pulsar://10.0.0.9:6650"),
			lookup(1, "a"), lookupResp(1, pb.CommandLookupTopicResponse_Redirect, "pulsar://10.0.0.2:6650")),
			map[string]int{CodeRedirectLoop: 1}},
		{"message-id-backwards", Options{}, with(producer(1, 0, "a"), producerOK(1), send(0, 0), send(0, 1), receipt(0, 0, 5, 9), receipt(0, 1, 5, 3)),
			map[string]int{CodeMessageIDBackwards: 1}},
		{"unknown-consumer", Options{}, with(flow(5, 10), subscribe(1, 0), success(1), flow(0, 10), message(0, 1, 1), ack(0, 1, 1)),
			map[string]int{CodeUnknownConsumer: 1}},
		{"flow-zero-permits", Options{}, with(subscribe(1, 0), success(1), flow(0, 0), flow(0, 10)), map[string]int{CodeFlowZero: 1}},
		{"sequence-id-backwards", Options{}, with(producer(1, 0, "a"), producerOK(1), send(0, 5), send(0, 3), send(0, 3), receipt(0, 5, 1, 1), receipt(0, 3, 1, 2), receipt(0, 3, 1, 3)),
			map[string]int{CodeSequenceBackwards: 1}},
		{"producer-id-reused", Options{}, with(producer(1, 0, "a"), producerOK(1), producer(2, 0, "b"), producerOK(2)),
			map[string]int{CodeProducerIDReused: 1}},
		{"consumer-id-reused", Options{}, with(subscribe(1, 0), success(1), subscribe(2, 0), success(2)),
			map[string]int{CodeConsumerIDReused: 1}},
		{"consumer id again after its close", Options{}, with(subscribe(1, 0), success(1),
			wire{s2c, 0.05, &pb.BaseCommand{Type: typ(pb.BaseCommand_CLOSE_CONSUMER), CloseConsumer: &pb.CommandCloseConsumer{ConsumerId: proto.Uint64(0), RequestId: proto.Uint64(9)}}, false, false, nil},
			subscribe(2, 0), success(2)),
			map[string]int{}},
		{"feature-too-new: broker entry metadata at v17", Options{}, []wire{connect(17), connected(17, 0), subscribe(1, 0), success(1), flow(0, 10), withBEM(message(0, 1, 1))},
			map[string]int{CodeFeatureTooNew: 1}},
		{"broker entry metadata at v18", Options{}, []wire{connect(18), connected(18, 0), subscribe(1, 0), success(1), flow(0, 10), withBEM(message(0, 1, 1))},
			map[string]int{}},
		{"feature-too-new: Key_Shared at v13", Options{}, []wire{connect(13), connected(13, 0), keyShared(1, 0), success(1)},
			map[string]int{CodeFeatureTooNew: 1}},
		{"feature-too-new: ack receipt at v16", Options{}, []wire{connect(16), connected(16, 0), subscribe(1, 0), success(1), flow(0, 10), message(0, 1, 1), ackWithReceipt(0, 1, 1, 5), success(5)},
			map[string]int{CodeFeatureTooNew: 1}},
		{"feature-too-new: topic watch without the flag", Options{}, with(watchTopics(3), watchOK(3)),
			map[string]int{CodeFeatureTooNew: 1}},
		{"topic watch with the flag", Options{}, []wire{watcherConnect(), connected(20, 0), watchTopics(3), watchOK(3)},
			map[string]int{}},
		{"lookup-authoritative-mismatch", Options{}, with(lookup(0, "a"), authoritative(lookupResp(0, pb.CommandLookupTopicResponse_Redirect, "pulsar://10.0.0.9:6650"), true),
			authoritative(lookup(1, "a"), false), lookupResp(1, pb.CommandLookupTopicResponse_Connect, "pulsar://10.0.0.9:6650")),
			map[string]int{CodeLookupAuthoritative: 1}},
		{"lookup following its redirect's authoritative flag", Options{}, with(lookup(0, "a"), authoritative(lookupResp(0, pb.CommandLookupTopicResponse_Redirect, "pulsar://10.0.0.9:6650"), true),
			authoritative(lookup(1, "a"), true), lookupResp(1, pb.CommandLookupTopicResponse_Connect, "pulsar://10.0.0.9:6650")),
			map[string]int{}},
		{"chunks in order", Options{}, with(producer(1, 0, "a"), producerOK(1), chunk(0, 0, "u", 0, 3, 0), chunk(0, 0, "u", 1, 3, 0), chunk(0, 0, "u", 2, 3, 0),
			receipt(0, 0, 1, 1), receipt(0, 0, 1, 2), receipt(0, 0, 1, 3)),
			map[string]int{}},
		{"chunk-out-of-order", Options{}, with(producer(1, 0, "a"), producerOK(1), chunk(0, 0, "u", 0, 3, 0), chunk(0, 0, "u", 2, 3, 0), receipt(0, 0, 1, 1), receipt(0, 0, 1, 2)),
			map[string]int{CodeChunkOrder: 1}},
		{"chunk-incomplete", Options{}, with(producer(1, 0, "a"), producerOK(1), chunk(0, 0, "u", 0, 3, 0), chunk(0, 0, "u", 1, 3, 0), receipt(0, 0, 1, 1), receipt(0, 0, 1, 2)),
			map[string]int{CodeChunkIncomplete: 1}},
		{"chunk-in-batch", Options{}, with(producer(1, 0, "a"), producerOK(1), chunk(0, 0, "u", 0, 2, 5), chunk(0, 0, "u", 1, 2, 5), receipt(0, 0, 1, 1), receipt(0, 0, 1, 2)),
			map[string]int{CodeChunkedBatch: 2}},
		{"cumulative-ack-shared", Options{}, with(shared(1, 0), success(1), flow(0, 10), message(0, 1, 1), cumulative(0, 1, 1)),
			map[string]int{CodeCumulativeAckShared: 1}},
		{"state-evicted", Options{MaxPending: 1}, with(lookup(0, "a"), lookup(1, "b"), lookupResp(1, 1, "pulsar://x:6650")),
			map[string]int{CodeStateEvicted: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := play(t, tc.opts, tc.frames)
			got := col.codes()
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
