// Package secrettest builds Pulsar frames that carry every secret of the
// schema, for the tests of every output: one command for each sub-command
// of BaseCommand that can hold a secret field (decode/secret) at any depth,
// with a distinct marker in each of those fields, and frames that carry
// credentials by shape (a JWT, a bearer token) in ordinary strings: an
// error message, a producer name, a message property. It is imported by
// tests only.
package secrettest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// Frame is one frame on the wire and the secrets it carries.
type Frame struct {
	// Name says what the frame is (its command and what it carries).
	Name string
	// Dir is 0 for client to broker, 1 for broker to client.
	Dir int
	// Wire is the frame's bytes, from the totalSize field on.
	Wire []byte
	// Secrets are the values no output may show unless --show-secrets.
	Secrets []string
}

// A JWT and a bearer token by shape (the JWT's parts are base64url of
// {"alg":"HS256"}, {"sub":"pulsarscope"} and a signature).
const (
	JWT    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwdWxzYXJzY29wZSJ9.c2lnbmF0dXJlLW9mLWxhYg"
	Bearer = "b3BhcXVlLWJlYXJlci10b2tlbg"
)

// Frames returns the frames: first a CONNECT with no secret (the
// connection's start), then one frame for each secret-carrying
// sub-command of the schema, then the credentials by shape.
func Frames() []Frame {
	var out []Frame
	n := 0
	marker := func(fd protoreflect.FieldDescriptor) string {
		n++
		// printable, distinct, and not a prefix of another marker
		return fmt.Sprintf("SeCrEt%02d-%s-zq", n, fd.Name())
	}
	base := (&pulsarapi.BaseCommand{}).ProtoReflect()
	fields := base.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || !reaches(fd.Message(), 0) {
			continue
		}
		cmd := &pulsarapi.BaseCommand{}
		m := cmd.ProtoReflect()
		// Each sub-command's field number is its command type.
		m.Set(fields.ByName("type"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(fd.Number())))
		var secrets []string
		fill(m.Mutable(fd).Message(), marker, &secrets, 0)
		dir := 0
		if fd.Name() == "authChallenge" {
			dir = 1
		}
		out = append(out, Frame{Name: string(fd.Name()), Dir: dir, Wire: CommandFrame(cmd), Secrets: secrets})
	}
	out = append(out,
		Frame{Name: "error message with a JWT", Dir: 1, Secrets: []string{JWT}, Wire: CommandFrame(&pulsarapi.BaseCommand{
			Type: pulsarapi.BaseCommand_ERROR.Enum(), Error: &pulsarapi.CommandError{RequestId: proto.Uint64(90),
				Error: pulsarapi.ServerError_AuthenticationError.Enum(), Message: proto.String("token " + JWT + " expired")}})},
		Frame{Name: "producer name with a bearer token", Dir: 0, Secrets: []string{Bearer}, Wire: CommandFrame(&pulsarapi.BaseCommand{
			Type: pulsarapi.BaseCommand_PRODUCER.Enum(), Producer: &pulsarapi.CommandProducer{Topic: proto.String("persistent://a/b/t"),
				ProducerId: proto.Uint64(7), RequestId: proto.Uint64(91), ProducerName: proto.String("Bearer " + Bearer)}})},
		Frame{Name: "SEND with a JWT in a property", Dir: 0, Secrets: []string{JWT}, Wire: PayloadFrame(&pulsarapi.BaseCommand{
			Type: pulsarapi.BaseCommand_SEND.Enum(), Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(7), SequenceId: proto.Uint64(0)}},
			&pulsarapi.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(0), PublishTime: proto.Uint64(1764400000000),
				Properties: []*pulsarapi.KeyValue{{Key: proto.String("authorization"), Value: proto.String(JWT)}}}, []byte("hello"))},
		Frame{Name: "batched SEND with a JWT in an entry's property", Dir: 0, Secrets: []string{JWT}, Wire: PayloadFrame(&pulsarapi.BaseCommand{
			Type: pulsarapi.BaseCommand_SEND.Enum(), Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(7), SequenceId: proto.Uint64(1), NumMessages: proto.Int32(1)}},
			&pulsarapi.MessageMetadata{ProducerName: proto.String("p"), SequenceId: proto.Uint64(1), PublishTime: proto.Uint64(1764400000001), NumMessagesInBatch: proto.Int32(1)},
			Batch(&pulsarapi.SingleMessageMetadata{PayloadSize: proto.Int32(5), Properties: []*pulsarapi.KeyValue{{Key: proto.String("token"), Value: proto.String(JWT)}}}, []byte("world")))},
	)
	return out
}

// Batch encodes one batch entry: its metadata's size, the metadata, the
// payload.
func Batch(smm *pulsarapi.SingleMessageMetadata, payload []byte) []byte {
	meta, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(smm)
	if err != nil {
		panic(fmt.Sprintf("secrettest: %v", err))
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(meta)))
	return append(append(b, meta...), payload...)
}

// reaches reports whether a message of type md can hold a secret field.
func reaches(md protoreflect.MessageDescriptor, depth int) bool {
	if depth > 8 {
		return false
	}
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		if secret.Field(f) || (f.Message() != nil && reaches(f.Message(), depth+1)) {
			return true
		}
	}
	return false
}

// fill sets m's required fields and puts a marker into every secret field
// it can reach, creating the messages on the way.
func fill(m protoreflect.Message, marker func(protoreflect.FieldDescriptor) string, secrets *[]string, depth int) {
	fs := m.Descriptor().Fields()
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		switch {
		case secret.Field(f):
			s := marker(f)
			*secrets = append(*secrets, s)
			v := protoreflect.ValueOfString(s)
			if f.Kind() == protoreflect.BytesKind {
				v = protoreflect.ValueOfBytes([]byte(s))
			}
			if f.IsList() {
				m.Mutable(f).List().Append(v)
			} else {
				m.Set(f, v)
			}
		case f.Message() != nil && (reaches(f.Message(), depth+1) || f.Cardinality() == protoreflect.Required) && depth < 8:
			if f.IsList() {
				l := m.Mutable(f).List()
				e := l.NewElement()
				fill(e.Message(), marker, secrets, depth+1)
				l.Append(e)
			} else {
				fill(m.Mutable(f).Message(), marker, secrets, depth+1)
			}
		case f.Cardinality() == protoreflect.Required:
			m.Set(f, zero(f))
		}
	}
}

func zero(f protoreflect.FieldDescriptor) protoreflect.Value {
	switch f.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("x"))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(false)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(f.Enum().Values().Get(0).Number())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(1)
	}
	return protoreflect.ValueOfInt64(1)
}

// CommandFrame encodes a simple frame: totalSize, commandSize, command.
func CommandFrame(cmd *pulsarapi.BaseCommand) []byte {
	c, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(cmd)
	if err != nil {
		panic(fmt.Sprintf("secrettest: %v", err))
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(c)))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	return append(b, c...)
}

// PayloadFrame encodes a payload frame with its checksum.
func PayloadFrame(cmd *pulsarapi.BaseCommand, md *pulsarapi.MessageMetadata, payload []byte) []byte {
	c, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(cmd)
	if err != nil {
		panic(fmt.Sprintf("secrettest: %v", err))
	}
	meta, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(md)
	if err != nil {
		panic(fmt.Sprintf("secrettest: %v", err))
	}
	rest := binary.BigEndian.AppendUint32(nil, uint32(len(meta)))
	rest = append(append(rest, meta...), payload...)
	total := 4 + len(c) + 2 + 4 + len(rest)
	b := binary.BigEndian.AppendUint32(nil, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
	b = append(b, c...)
	b = append(b, 0x0e, 0x01)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(rest, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, rest...)
}

// Capture returns a classic pcap file of one TCP connection on loopback
// addresses (client 127.0.0.1:40100, broker 127.0.0.1:6650) that carries
// frames in order, each in its direction, in segments of at most 1,448
// bytes, between a handshake and a FIN exchange, a millisecond apart.
func Capture(frames []Frame) []byte {
	c, s := netip.MustParseAddrPort("127.0.0.1:40100"), netip.MustParseAddrPort("127.0.0.1:6650")
	cseq, sseq := uint32(5000), uint32(0x10000000)
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		panic(fmt.Sprintf("secrettest: %v", err))
	}
	ts := time.Unix(1764400000, 0)
	add := func(src, dst netip.AddrPort, seq, ack uint32, syn, fin bool, payload []byte) {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack, Window: 65535,
			SYN: syn, FIN: fin, ACK: !syn || ack != 0, PSH: len(payload) > 0}
		_ = tcp.SetNetworkLayerForChecksum(ip)
		sb := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
			panic(fmt.Sprintf("secrettest: %v", err))
		}
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(sb.Bytes()), Length: len(sb.Bytes())}, sb.Bytes()); err != nil {
			panic(fmt.Sprintf("secrettest: %v", err))
		}
		ts = ts.Add(time.Millisecond)
	}
	add(c, s, cseq, 0, true, false, nil)
	add(s, c, sseq, cseq+1, true, false, nil)
	cseq, sseq = cseq+1, sseq+1
	add(c, s, cseq, sseq, false, false, nil)
	for _, f := range frames {
		for b := f.Wire; len(b) > 0; {
			n := min(len(b), 1448)
			if f.Dir == 0 {
				add(c, s, cseq, sseq, false, false, b[:n])
				cseq += uint32(n)
			} else {
				add(s, c, sseq, cseq, false, false, b[:n])
				sseq += uint32(n)
			}
			b = b[n:]
		}
	}
	add(c, s, cseq, sseq, false, true, nil)
	add(s, c, sseq, cseq+1, false, true, nil)
	add(c, s, cseq+1, sseq+1, false, false, nil)
	return buf.Bytes()
}

// Hostile is a string that would drive a terminal: a color, an OSC 0
// title, an OSC 52 clipboard write, BEL, a C1 CSI (U+009B), DEL and a
// bidirectional override.
const Hostile = "x\x1b[31mRED\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\x9b2J\u009b\x7f\u202eevil"

// HostileFrames returns, for every sub-command of BaseCommand, a frame in
// which every string field, at any depth, holds s (required fields set);
// then a batched SEND whose message metadata and batch entry metadata have
// every string field set to s.
func HostileFrames(s string) []Frame {
	var out []Frame
	base := (&pulsarapi.BaseCommand{}).ProtoReflect()
	fields := base.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind {
			continue
		}
		cmd := &pulsarapi.BaseCommand{}
		m := cmd.ProtoReflect()
		m.Set(fields.ByName("type"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(fd.Number())))
		fillStrings(m.Mutable(fd).Message(), s, 0)
		dir := 0
		if strings.HasSuffix(string(fd.Name()), "Response") || strings.HasSuffix(string(fd.Name()), "Success") || fd.Name() == "error" {
			dir = 1
		}
		out = append(out, Frame{Name: string(fd.Name()), Dir: dir, Wire: CommandFrame(cmd)})
	}
	md := &pulsarapi.MessageMetadata{}
	fillStrings(md.ProtoReflect(), s, 0)
	md.NumMessagesInBatch = proto.Int32(1)
	md.Compression = nil
	md.EncryptionKeys, md.EncryptionAlgo, md.EncryptionParam = nil, nil, nil
	md.Uuid, md.ChunkId, md.NumChunksFromMsg = nil, nil, nil
	smm := &pulsarapi.SingleMessageMetadata{}
	fillStrings(smm.ProtoReflect(), s, 0)
	smm.PayloadSize = proto.Int32(5)
	out = append(out, Frame{Name: "SEND with hostile metadata", Wire: PayloadFrame(&pulsarapi.BaseCommand{
		Type: pulsarapi.BaseCommand_SEND.Enum(), Send: &pulsarapi.CommandSend{ProducerId: proto.Uint64(7), SequenceId: proto.Uint64(1), NumMessages: proto.Int32(1)}},
		md, Batch(smm, []byte("hello")))})
	return out
}

// fillStrings sets every string field of m to s, at depth < 3, and the
// required fields of every message it creates.
func fillStrings(m protoreflect.Message, s string, depth int) {
	fs := m.Descriptor().Fields()
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		switch {
		case f.Kind() == protoreflect.StringKind && f.IsList():
			m.Mutable(f).List().Append(protoreflect.ValueOfString(s))
		case f.Kind() == protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString(s))
		case f.Message() != nil && depth < 3:
			if f.IsList() {
				l := m.Mutable(f).List()
				e := l.NewElement()
				fillStrings(e.Message(), s, depth+1)
				l.Append(e)
			} else {
				fillStrings(m.Mutable(f).Message(), s, depth+1)
			}
		case f.Cardinality() == protoreflect.Required && f.Message() == nil:
			m.Set(f, zero(f))
		}
	}
}
