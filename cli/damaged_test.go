package cli

import (
	"encoding/json"
	"strings"
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/internal/secrettest"
)

// TestDamagedFrameNamed: a 20 KB SEND (producer 1, sequence 1000) inside a
// real conversation, sent in 1,448-byte segments, loses its third segment
// to the capture. It is a frame record of its own, SEND with its ids, with
// a bytes-lost problem naming exactly the 1,448 bytes; its receipt pairs
// with it (with two passes: the hole is only given up at the gap timeout,
// after the receipt, until holes are declared when the peer's ACKs prove
// them, issue 16); every other frame of the conversation is decoded.
func TestDamagedFrameNamed(t *testing.T) {
	v, fr := baseConv(t, 1000)
	big := secrettest.PayloadFrame(&pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(),
		Send: &pulsarapi.CommandSend{ProducerId: gproto.Uint64(1), SequenceId: gproto.Uint64(1000)}},
		&pulsarapi.MessageMetadata{ProducerName: gproto.String("big"), SequenceId: gproto.Uint64(1000), PublishTime: gproto.Uint64(1764400000000)},
		[]byte(strings.Repeat("payload ", 2500)))
	receipt := frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND_RECEIPT.Enum(), SendReceipt: &pulsarapi.CommandSendReceipt{
		ProducerId: gproto.Uint64(1), SequenceId: gproto.Uint64(1000), MessageId: &pulsarapi.MessageIdData{LedgerId: gproto.Uint64(9), EntryId: gproto.Uint64(9)}}})
	before := len(v.recs)
	v.send(0, big)
	lost := v.recs[before+2] // the third segment of the big SEND
	v.recs = append(v.recs[:before+2], v.recs[before+3:]...)
	v.send(1, receipt)
	v.rest(fr)
	v.fin()
	const seg = 14 + 20 + 20
	lostBytes := len(lost.data) - seg
	if lostBytes != 1448 {
		t.Fatalf("lost segment of %d bytes", lostBytes)
	}
	name := writeTemp(t, "damaged.pcap", writePcap(t, v.recs, 262144))
	out, errOut, code := run(t, "read", "-2", "-o", "json", name)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var sendN, receiptReq, frames int
	var detail string
	for _, line := range ndjsonLines(out) {
		var r struct {
			N       int    `json:"n"`
			Type    string `json:"type"`
			Size    int    `json:"size"`
			Command struct {
				SequenceID string `json:"sequence_id"`
			} `json:"command"`
			Request *struct {
				N int `json:"n"`
			} `json:"request"`
			Problems []struct {
				Code   string `json:"code"`
				Detail string `json:"detail"`
			} `json:"problems"`
		}
		if json.Unmarshal(line, &r) != nil || r.N == 0 {
			continue
		}
		frames++
		if r.Command.SequenceID != "1000" {
			continue
		}
		switch r.Type {
		case "SEND":
			sendN = r.N
			if r.Size != len(big) || len(r.Problems) != 1 || r.Problems[0].Code != "bytes-lost" {
				t.Errorf("damaged SEND: size %d (want %d), problems %+v", r.Size, len(big), r.Problems)
			} else {
				detail = r.Problems[0].Detail
			}
		case "SEND_RECEIPT":
			if r.Request != nil {
				receiptReq = r.Request.N
			}
		}
	}
	if want := "SEND producer_id 1 sequence_id 1000: " + itoa(lostBytes) + " of " + itoa(len(big)) + " bytes not captured"; !strings.HasPrefix(detail, want) {
		t.Errorf("detail %q, want %q…", detail, want)
	}
	if sendN == 0 || receiptReq != sendN {
		t.Errorf("receipt paired with frame %d, the damaged SEND is frame %d", receiptReq, sendN)
	}
	if frames != realFrameCount(fr)+2 {
		t.Errorf("%d frames, want %d", frames, realFrameCount(fr)+2)
	}
}
