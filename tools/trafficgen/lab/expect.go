package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pulsarscope/pulsarscope/tools/trafficgen/broker"
)

// ClientVersion names the client the lab drives.
const ClientVersion = "github.com/apache/pulsar-client-go v0.19.0"

// Description says what a scenario does.
func Description(scenario string) string {
	return map[string]string{
		"basic": "One unbatched producer and one Exclusive consumer on one connection: 10 messages with keys and properties, " +
			"individual acks, PING/PONG from both sides, producer and consumer closed.",
		"keepalive": "The basic flow, then 4 s idle, with the broker holding each PONG back 1.2 s: the client's PINGs (one a second) " +
			"are at times two outstanding, and each PONG answers the oldest (the broker logs which).",
		"batching-compression": "Batched producers, one per codec (NONE, LZ4, ZLIB, ZSTD, SNAPPY), 25 messages each in batches of up to 10, " +
			"consumed and acked; MESSAGE payloads carry BrokerEntryMetadata (0x0e02).",
		"chunking": "A 20000-byte message sent in 4 KB chunks (chunking on, batching off) between two small messages; the consumer reassembles it.",
		"large": "Messages larger than a loopback TCP segment (64 KB): 300,000 and 150,000 bytes between two small messages " +
			"(batching and chunking off), so that each large SEND and MESSAGE frame spans several segments; received and acked.",
		"partitioned": "A 3-partition topic: partitioned metadata, one lookup per partition, a keyed batched producer (30 messages), " +
			"a Failover consumer on every partition acking with response (ACK_RESPONSE); MESSAGE payloads carry BrokerEntryMetadata.",
		"subscriptions": "On one connection: Exclusive (negative ack and redelivery with redelivery_count, GET_LAST_MESSAGE_ID, SEEK with broker-initiated " +
			"CLOSE_CONSUMER and resubscribe, cumulative ack, UNSUBSCRIBE), Shared (two consumers, one acking with response), " +
			"Failover (two consumers, cumulative acks) and Key_Shared (two consumers, four keys); four producers interleaved.",
		"errors": "Failed partitioned-metadata lookup (TopicNotFound), LOOKUP Redirect to 127.0.0.2:6650 followed by a second lookup, " +
			"producer refused (AuthorizationError), broker-initiated CLOSE_PRODUCER and CLOSE_CONSUMER (topic unload) with reconnect, " +
			"and a SEND_ERROR after which the client drops the connection, reconnects and resends.",
		"many": "Five clients (five connections), each with four producers (batched and unbatched) and four Shared consumers: 20 producers, 20 consumers, 100 messages.",
		"any":  "The basic flow captured on the 'any' pseudo-interface (Linux cooked capture v2, LINUX_SLL2).",
		"auth": "A client authenticating with a (fake) token: CONNECT carries auth_method_name \"token\" and the token in auth_data; " +
			"the broker sends AUTH_CHALLENGE right after CONNECTED and the client answers AUTH_RESPONSE with the token again; " +
			"then 3 messages produced, consumed and acked. For checking that every output redacts secrets.",
		"encryption": "End-to-end encrypted messages (the client's default crypto, one RSA data key named \"lab-key\"): 10 unbatched, " +
			"then 10 in LZ4-compressed batches of up to 5; MessageMetadata carries encryption_keys, encryption_algo and encryption_param, " +
			"and the payloads are ciphertext with a 16-byte AES-GCM tag; the consumer decrypts, checks and acks each.",
		"concurrent": "A producer and a Shared consumer on a topic of 16 partitions: the client looks up, subscribes and creates a " +
			"producer on every partition at once (more than 8 requests in flight on one connection), then 48 unbatched messages " +
			"keyed across the partitions, each received and acked. The broker logs which frame answers which (pairs).",
		"bulk": "High-rate LZ4-batched traffic on two topics until the capture reaches the requested size (performance work; not committed).",
	}[scenario]
}

// Expect is the content of a NAME.expect.json file.
type Expect struct {
	File                      string         `json:"file"`
	Scenario                  string         `json:"scenario"`
	Command                   string         `json:"command"`
	Client                    string         `json:"client"`
	Format                    string         `json:"format"`
	LinkType                  string         `json:"link_type"`
	Packets                   int            `json:"packets"`
	Bytes                     int64          `json:"bytes"`
	Description               string         `json:"description"`
	Connections               int            `json:"connections"`
	Frames                    DirCounts      `json:"frames"`
	FramesTotal               int            `json:"frames_total"`
	PayloadFrames             int            `json:"payload_frames"`
	ChecksummedPayloadFrames  int            `json:"checksummed_payload_frames"`
	BrokerEntryMetadataFrames int            `json:"broker_entry_metadata_frames"`
	BatchEntries              int            `json:"batch_entries"`
	ChunkFrames               int            `json:"chunk_frames"`
	Answered                  map[string]int `json:"answered"`
	// Pairs are which frame answers which, as the broker logged them: on
	// the connection from Client, the Request-th frame the client sent is
	// answered by the Response-th frame the broker sent (both 1-based, in
	// stream order). Captures made before the broker logged it have none.
	Pairs  []Pair         `json:"pairs,omitempty"`
	Driver map[string]any `json:"driver"`
	Notes  []string       `json:"notes,omitempty"`
}

// Pair is one request and the response that answers it, by their numbers
// among the frames of their direction of one connection.
type Pair struct {
	Client   string `json:"client"`
	Request  int    `json:"request"`
	Response int    `json:"response"`
}

// DirCounts counts frames by type per direction.
type DirCounts struct {
	C2S map[string]int `json:"c2s"`
	S2C map[string]int `json:"s2c"`
}

// FromBrokerLog fills the frame counts of e from a broker log.
func (e *Expect) FromBrokerLog(r io.Reader) error {
	e.Frames = DirCounts{C2S: map[string]int{}, S2C: map[string]int{}}
	e.Answered = map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	line := 0
	clients := map[int]string{} // conn → the client's address
	written := map[int]int{}    // conn → frames the broker wrote so far
	for sc.Scan() {
		line++
		var ev broker.LogEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("broker log line %d: %w", line, err)
		}
		switch ev.Event {
		case "accept":
			e.Connections++
			clients[ev.Conn] = ev.Remote
		case "note":
			e.Notes = append(e.Notes, fmt.Sprintf("conn %d: %s", ev.Conn, ev.Note))
		case "frame":
			e.FramesTotal++
			if ev.Dir == "c2s" {
				e.Frames.C2S[ev.Type]++
			} else {
				e.Frames.S2C[ev.Type]++
			}
			if ev.Answers != "" {
				e.Answered[ev.Answers]++
			}
			if ev.Dir == "s2c" {
				written[ev.Conn]++
				if ev.AnswersFrame > 0 {
					e.Pairs = append(e.Pairs, Pair{Client: clients[ev.Conn], Request: ev.AnswersFrame, Response: written[ev.Conn]})
				}
			}
			if ev.Payload {
				e.PayloadFrames++
				if ev.Checksum {
					e.ChecksummedPayloadFrames++
				}
				if ev.EntryMeta {
					e.BrokerEntryMetadataFrames++
				}
				if ev.Chunk {
					e.ChunkFrames++
				}
				e.BatchEntries += ev.Batch
			}
			if ev.Note != "" {
				e.Notes = append(e.Notes, fmt.Sprintf("conn %d %s %s: %s", ev.Conn, ev.Dir, ev.Type, ev.Note))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read broker log: %w", err)
	}
	return nil
}

// FromDriverResult copies the driver's counts into e.
func (e *Expect) FromDriverResult(b []byte) error {
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return fmt.Errorf("parse driver result: %w", err)
	}
	if ok, _ := all["ok"].(bool); !ok {
		return fmt.Errorf("driver result is not ok: %v", all["failures"])
	}
	e.Driver = map[string]any{}
	// The driver result fields copied into expectations.
	for _, k := range []string{"sent", "receipts", "send_errors", "received", "acks", "cumulative_acks", "nacks", "redelivered",
		"clients", "producers", "consumers", "outcomes"} {
		if v, ok := all[k]; ok {
			e.Driver[k] = v
		}
	}
	return nil
}

// Build assembles the expectations of one capture.
func Build(scenario, file, pcapPath, command, brokerLog, driverResult string) (*Expect, error) {
	e := &Expect{File: file, Scenario: scenario, Command: command, Client: ClientVersion, Description: Description(scenario)}
	info, err := ReadCaptureInfo(pcapPath)
	if err != nil {
		return nil, err
	}
	e.Format, e.LinkType, e.Packets, e.Bytes = info.Format, info.LinkType, info.Packets, info.Bytes
	f, err := os.Open(brokerLog)
	if err != nil {
		return nil, fmt.Errorf("open broker log: %w", err)
	}
	defer f.Close()
	if err := e.FromBrokerLog(f); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(driverResult)
	if err != nil {
		return nil, fmt.Errorf("read driver result: %w", err)
	}
	if err := e.FromDriverResult(b); err != nil {
		return nil, err
	}
	return e, nil
}
