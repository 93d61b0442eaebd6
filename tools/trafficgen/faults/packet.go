package faults

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket/layers"
)

// Ethernet types the writer knows.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	etherDot1Q = 0x8100
	etherQinQ  = 0x88a8
)

// TCP flag bits.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// view is the parsed layout of one packet: offsets of its layers in
// Packet.Data. ok is false for anything but TCP over IPv4 or IPv6.
type view struct {
	ok bool
	// protoOff is the offset of the link layer's 2-byte protocol field
	// (EtherType) or -1 when the link type has none (raw IP, null).
	protoOff int
	l3, l4   int
	v6       bool
	ipProto  uint8
	src      netip.AddrPort
	dst      netip.AddrPort
	seq, ack uint32
	flags    uint8
	// pay is the offset of the TCP payload; payLen its length according
	// to the IP header; capLen how many of those bytes were captured.
	pay, payLen, capLen int
}

// complete reports whether the whole IP packet was captured (so its
// checksums can be recomputed).
func (v view) complete() bool { return v.capLen == v.payLen }

// linkHeader returns the offset of the network layer and of the
// protocol field for the link type, or an error for unsupported types.
func linkHeader(lt layers.LinkType, data []byte) (l3, protoOff int, err error) {
	switch lt {
	case layers.LinkTypeEthernet:
		off := 12
		for {
			if len(data) < off+2 {
				return 0, 0, fmt.Errorf("short ethernet header")
			}
			et := binary.BigEndian.Uint16(data[off:])
			if et != etherDot1Q && et != etherQinQ {
				return off + 2, off, nil
			}
			off += 4
		}
	case layers.LinkTypeLinuxSLL:
		return 16, 14, nil
	case layers.LinkTypeLinuxSLL2:
		return 20, 0, nil
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		return 4, -1, nil
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return 0, -1, nil
	}
	return 0, 0, fmt.Errorf("link type %v is not supported", lt)
}

// parse parses the layers of data. It never fails: packets that are not
// TCP over IP get a view with ok == false.
func parse(lt layers.LinkType, data []byte) view {
	v := view{protoOff: -1}
	l3, protoOff, err := linkHeader(lt, data)
	if err != nil || len(data) < l3+20 {
		return v
	}
	v.l3, v.protoOff = l3, protoOff
	var ipEnd int
	switch data[l3] >> 4 {
	case 4:
		ihl := int(data[l3]&0x0f) * 4
		if ihl < 20 || len(data) < l3+ihl {
			return v
		}
		if binary.BigEndian.Uint16(data[l3+6:])&0x3fff != 0 { // fragment
			return v
		}
		v.ipProto = data[l3+9]
		ipEnd = l3 + int(binary.BigEndian.Uint16(data[l3+2:]))
		v.l4 = l3 + ihl
		a, _ := netip.AddrFromSlice(data[l3+12 : l3+16])
		b, _ := netip.AddrFromSlice(data[l3+16 : l3+20])
		v.src = netip.AddrPortFrom(a, 0)
		v.dst = netip.AddrPortFrom(b, 0)
	case 6:
		if len(data) < l3+40 {
			return v
		}
		v.v6 = true
		v.ipProto = data[l3+6]
		ipEnd = l3 + 40 + int(binary.BigEndian.Uint16(data[l3+4:]))
		v.l4 = l3 + 40
		a, _ := netip.AddrFromSlice(data[l3+8 : l3+24])
		b, _ := netip.AddrFromSlice(data[l3+24 : l3+40])
		v.src = netip.AddrPortFrom(a, 0)
		v.dst = netip.AddrPortFrom(b, 0)
	default:
		return v
	}
	if v.ipProto != uint8(layers.IPProtocolTCP) || len(data) < v.l4+20 || ipEnd < v.l4+20 {
		return v
	}
	doff := int(data[v.l4+12]>>4) * 4
	if doff < 20 || len(data) < v.l4+doff || ipEnd < v.l4+doff {
		return v
	}
	v.src = netip.AddrPortFrom(v.src.Addr(), binary.BigEndian.Uint16(data[v.l4:]))
	v.dst = netip.AddrPortFrom(v.dst.Addr(), binary.BigEndian.Uint16(data[v.l4+2:]))
	v.seq = binary.BigEndian.Uint32(data[v.l4+4:])
	v.ack = binary.BigEndian.Uint32(data[v.l4+8:])
	v.flags = data[v.l4+13]
	v.pay = v.l4 + doff
	v.payLen = ipEnd - v.pay
	v.capLen = min(len(data), ipEnd) - v.pay
	v.ok = true
	return v
}

// checksum16 adds b to the running ones' complement sum s.
func checksum16(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// fold folds a ones' complement sum to 16 bits and complements it.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// fixChecksums recomputes the IPv4 header checksum and the TCP checksum of
// a TCP packet. It fails when the packet was not captured completely.
func fixChecksums(lt layers.LinkType, data []byte) error {
	v := parse(lt, data)
	if !v.ok {
		return fmt.Errorf("not a TCP/IP packet")
	}
	if !v.complete() {
		return fmt.Errorf("packet truncated by the snapshot length: checksums cannot be fixed")
	}
	end := v.pay + v.payLen
	var s uint32
	if v.v6 {
		s = checksum16(s, data[v.l3+8:v.l3+40])
	} else {
		ihl := v.l4 - v.l3
		data[v.l3+10], data[v.l3+11] = 0, 0
		binary.BigEndian.PutUint16(data[v.l3+10:], fold(checksum16(0, data[v.l3:v.l3+ihl])))
		s = checksum16(s, data[v.l3+12:v.l3+20])
	}
	s += uint32(layers.IPProtocolTCP)
	s += uint32(end - v.l4)
	data[v.l4+16], data[v.l4+17] = 0, 0
	s = checksum16(s, data[v.l4:end])
	binary.BigEndian.PutUint16(data[v.l4+16:], fold(s))
	return nil
}

// trimPayload removes the first n bytes of the TCP payload of p, moving the
// sequence number on and fixing lengths and checksums.
func trimPayload(lt layers.LinkType, p *Packet, n int) error {
	v := parse(lt, p.Data)
	if !v.ok || n <= 0 || n > v.payLen || !v.complete() {
		return fmt.Errorf("cannot trim %d payload bytes", n)
	}
	p.Data = append(p.Data[:v.pay:v.pay], p.Data[v.pay+n:]...)
	binary.BigEndian.PutUint32(p.Data[v.l4+4:], v.seq+uint32(n))
	if v.v6 {
		binary.BigEndian.PutUint16(p.Data[v.l3+4:], binary.BigEndian.Uint16(p.Data[v.l3+4:])-uint16(n))
	} else {
		binary.BigEndian.PutUint16(p.Data[v.l3+2:], binary.BigEndian.Uint16(p.Data[v.l3+2:])-uint16(n))
	}
	p.Info.CaptureLength -= n
	p.Info.Length -= n
	p.Trimmed += n
	return fixChecksums(lt, p.Data)
}

// insertAt returns data with ins inserted at offset off.
func insertAt(data []byte, off int, ins []byte) []byte {
	out := make([]byte, 0, len(data)+len(ins))
	out = append(out, data[:off]...)
	out = append(out, ins...)
	return append(out, data[off:]...)
}
