package faults

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// castagnoli returns the CRC32-C table Pulsar uses.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// simpleFrame builds a Pulsar frame without payload.
func simpleFrame(t *testing.T, cmd *pulsarapi.BaseCommand) []byte {
	t.Helper()
	c, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(c)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	return append(b, c...)
}

// payloadFrame builds a SEND or MESSAGE frame with checksum, metadata and
// payload, and broker entry metadata when bem is set.
func payloadFrame(t *testing.T, cmd *pulsarapi.BaseCommand, bem *pulsarapi.BrokerEntryMetadata, md *pulsarapi.MessageMetadata, payload []byte) []byte {
	t.Helper()
	c, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	m, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var rest []byte
	if bem != nil {
		be, err := proto.Marshal(bem)
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, 0x0e, 0x02)
		rest = binary.BigEndian.AppendUint32(rest, uint32(len(be)))
		rest = append(rest, be...)
	}
	checked := binary.BigEndian.AppendUint32(nil, uint32(len(m)))
	checked = append(append(checked, m...), payload...)
	rest = append(rest, 0x0e, 0x01)
	rest = binary.BigEndian.AppendUint32(rest, crc32.Checksum(checked, castagnoli()))
	rest = append(rest, checked...)
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(c)+len(rest)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	return append(append(b, c...), rest...)
}

// synthConn is one TCP connection being synthesised.
type synthConn struct {
	cli, srv net.IP
	cport    uint16
	seq      [2]uint32 // next sequence number per direction (c2s, s2c)
	pkts     *[]synthPkt
	clock    *time.Time
	ipID     uint16
}

// synthPkt is a synthesised IP packet.
type synthPkt struct {
	ts time.Time
	ip []byte // IPv4 packet
}

// send adds a TCP segment in direction d with the given flags and payload.
func (c *synthConn) send(t *testing.T, d Dir, flags uint8, payload []byte) {
	t.Helper()
	src, dst, sp, dp := c.cli, c.srv, c.cport, uint16(6650)
	if d == S2C {
		src, dst, sp, dp = dst, src, dp, sp
	}
	c.ipID++
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src, DstIP: dst, Id: c.ipID, Flags: layers.IPv4DontFragment}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sp), DstPort: layers.TCPPort(dp), Seq: c.seq[d], Window: 65535,
		SYN: flags&tcpSYN != 0, ACK: flags&tcpACK != 0, FIN: flags&tcpFIN != 0, PSH: len(payload) > 0}
	if tcp.ACK {
		tcp.Ack = c.seq[1-d]
	}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	c.seq[d] += uint32(len(payload))
	if flags&(tcpSYN|tcpFIN) != 0 {
		c.seq[d]++
	}
	*c.clock = c.clock.Add(137 * time.Microsecond)
	*c.pkts = append(*c.pkts, synthPkt{ts: *c.clock, ip: bytes.Clone(buf.Bytes())})
}

// data sends payload in direction d, split into segments at the given
// cut points, each followed by a pure ACK from the other side.
func (c *synthConn) data(t *testing.T, d Dir, payload []byte, cuts ...int) {
	t.Helper()
	prev := 0
	for _, cut := range append(cuts, len(payload)) {
		c.send(t, d, tcpACK, payload[prev:cut])
		prev = cut
	}
	c.send(t, 1-d, tcpACK, nil)
}

// synthCapture builds a capture with two Pulsar connections (a producer
// and a consumer) and returns the pcap file bytes in the given link type
// (Ethernet, Linux SLL2 or raw IP).
func synthCapture(t *testing.T, lt layers.LinkType) []byte {
	t.Helper()
	var pkts []synthPkt
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lo := net.IPv4(127, 0, 0, 1).To4()
	c1 := &synthConn{cli: lo, srv: lo, cport: 40001, seq: [2]uint32{1000, 900000}, pkts: &pkts, clock: &clock}
	c2 := &synthConn{cli: lo, srv: lo, cport: 40002, seq: [2]uint32{0xfffffff0, 5000}, pkts: &pkts, clock: &clock}
	handshake := func(c *synthConn) {
		c.send(t, C2S, tcpSYN, nil)
		c.send(t, S2C, tcpSYN|tcpACK, nil)
		c.send(t, C2S, tcpACK, nil)
	}
	str := proto.String
	u64 := proto.Uint64
	handshake(c1)
	c1.data(t, C2S, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECT.Enum(),
		Connect: &pulsarapi.CommandConnect{ClientVersion: str("synth"), ProtocolVersion: proto.Int32(21)}}))
	c1.data(t, S2C, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECTED.Enum(),
		Connected: &pulsarapi.CommandConnected{ServerVersion: str("synth-broker"), ProtocolVersion: proto.Int32(21)}}))
	c1.data(t, C2S, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_PRODUCER.Enum(),
		Producer: &pulsarapi.CommandProducer{Topic: str("persistent://public/default/t"), ProducerId: u64(1), RequestId: u64(1)}}))
	c1.data(t, S2C, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_PRODUCER_SUCCESS.Enum(),
		ProducerSuccess: &pulsarapi.CommandProducerSuccess{RequestId: u64(1), ProducerName: str("standalone-0-1")}}))
	send := func(i uint64) []byte {
		return payloadFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(),
			Send: &pulsarapi.CommandSend{ProducerId: u64(1), SequenceId: u64(i)}}, nil,
			&pulsarapi.MessageMetadata{ProducerName: str("standalone-0-1"), SequenceId: u64(i), PublishTime: u64(1700000000000 + i)},
			bytes.Repeat([]byte{'a' + byte(i)}, 40+int(i)))
	}
	handshake(c2)
	c2.data(t, C2S, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECT.Enum(),
		Connect: &pulsarapi.CommandConnect{ClientVersion: str("synth"), ProtocolVersion: proto.Int32(21)}}))
	c2.data(t, S2C, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_CONNECTED.Enum(),
		Connected: &pulsarapi.CommandConnected{ServerVersion: str("synth-broker"), ProtocolVersion: proto.Int32(21)}}))
	// SEND 1 alone; SEND 2 split over two segments; SEND 3 and 4 in one segment.
	c1.data(t, C2S, send(1))
	s2 := send(2)
	c1.data(t, C2S, s2, 30)
	c1.data(t, C2S, append(send(3), send(4)...))
	for i := uint64(1); i <= 4; i++ {
		c1.data(t, S2C, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND_RECEIPT.Enum(),
			SendReceipt: &pulsarapi.CommandSendReceipt{ProducerId: u64(1), SequenceId: u64(i)}}))
	}
	c2.data(t, C2S, simpleFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SUBSCRIBE.Enum(),
		Subscribe: &pulsarapi.CommandSubscribe{Topic: str("persistent://public/default/t"), Subscription: str("s"),
			SubType: pulsarapi.CommandSubscribe_Exclusive.Enum(), ConsumerId: u64(1), RequestId: u64(2)}}))
	for i := uint64(1); i <= 3; i++ {
		var bem *pulsarapi.BrokerEntryMetadata
		if i == 2 {
			bem = &pulsarapi.BrokerEntryMetadata{Index: u64(7)}
		}
		c2.data(t, S2C, payloadFrame(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_MESSAGE.Enum(),
			Message: &pulsarapi.CommandMessage{ConsumerId: u64(1), MessageId: &pulsarapi.MessageIdData{LedgerId: u64(9), EntryId: u64(i)}}}, bem,
			&pulsarapi.MessageMetadata{ProducerName: str("standalone-0-1"), SequenceId: u64(i), PublishTime: u64(1700000000000 + i)},
			bytes.Repeat([]byte{'A' + byte(i)}, 30)))
	}
	c1.send(t, C2S, tcpFIN|tcpACK, nil)
	c1.send(t, S2C, tcpFIN|tcpACK, nil)
	c1.send(t, C2S, tcpACK, nil)

	var out bytes.Buffer
	w := pcapgo.NewWriterNanos(&out)
	if err := w.WriteFileHeader(65535, lt); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		var frame []byte
		switch lt {
		case layers.LinkTypeEthernet:
			frame = append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00}, p.ip...)
		case layers.LinkTypeLinuxSLL2:
			h := []byte{0x08, 0x00, 0, 0, 0, 0, 0, 1, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0}
			frame = append(h, p.ip...)
		case layers.LinkTypeRaw:
			frame = bytes.Clone(p.ip)
		default:
			t.Fatalf("link type %v not synthesised", lt)
		}
		ci := gopacket.CaptureInfo{Timestamp: p.ts, CaptureLength: len(frame), Length: len(frame)}
		if err := w.WritePacket(ci, frame); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}
