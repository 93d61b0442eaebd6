package capture

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// seg describes a TCP segment to synthesise.
type seg struct {
	src, dst      string
	sport, dport  uint16
	seq           uint32
	syn, fin, ack bool
	payload       []byte
	ipv6          bool
	fragment      bool // IPv4 MF set
	udp           bool // send a UDP datagram instead
	vlans         int  // number of 802.1Q tags (Ethernet only)
}

// ipBytes serialises the IP packet of s.
func ipBytes(t testing.TB, s seg) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	var net gopacket.NetworkLayer
	var ls []gopacket.SerializableLayer
	if s.ipv6 {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: mustIP(s.src), DstIP: mustIP(s.dst)}
		if s.udp {
			ip.NextHeader = layers.IPProtocolUDP
		}
		net = ip
		ls = append(ls, ip)
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: mustIP(s.src).To4(), DstIP: mustIP(s.dst).To4()}
		if s.udp {
			ip.Protocol = layers.IPProtocolUDP
		}
		if s.fragment {
			ip.Flags = layers.IPv4MoreFragments
		}
		net = ip
		ls = append(ls, ip)
	}
	if s.udp {
		u := &layers.UDP{SrcPort: layers.UDPPort(s.sport), DstPort: layers.UDPPort(s.dport)}
		u.SetNetworkLayerForChecksum(net)
		ls = append(ls, u)
	} else {
		tcp := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport),
			Seq: s.seq, SYN: s.syn, FIN: s.fin, ACK: s.ack, Window: 1000}
		tcp.SetNetworkLayerForChecksum(net)
		ls = append(ls, tcp)
	}
	ls = append(ls, gopacket.Payload(s.payload))
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func mustIP(s string) net.IP {
	ip := net.ParseIP(s)
	if ip == nil {
		panic(s)
	}
	return ip
}

// frameBytes wraps the IP packet of s in a link header of type lt.
func frameBytes(t testing.TB, lt layers.LinkType, s seg) []byte {
	ip := ipBytes(t, s)
	et := uint16(0x0800)
	fam := uint32(2)
	if s.ipv6 {
		et, fam = 0x86dd, 30
	}
	var h []byte
	switch lt {
	case LinkTypeEthernet:
		h = make([]byte, 12)
		copy(h, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2})
		for i := 0; i < s.vlans; i++ {
			tpid := uint16(0x8100)
			if i == 0 && s.vlans > 1 {
				tpid = 0x88a8
			}
			h = binary.BigEndian.AppendUint16(h, tpid)
			h = binary.BigEndian.AppendUint16(h, uint16(100+i))
		}
		h = binary.BigEndian.AppendUint16(h, et)
	case LinkTypeSLL:
		h = make([]byte, 14)
		binary.BigEndian.PutUint16(h[2:], 772)
		binary.BigEndian.PutUint16(h[4:], 6)
		h = binary.BigEndian.AppendUint16(h, et)
	case LinkTypeSLL2:
		h = make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:], et)
		binary.BigEndian.PutUint32(h[4:], 1)
		binary.BigEndian.PutUint16(h[8:], 772)
		h[11] = 6
	case LinkTypeNull:
		h = binary.LittleEndian.AppendUint32(nil, fam)
	case LinkTypeLoop:
		h = binary.BigEndian.AppendUint32(nil, fam)
	case LinkTypeRaw, LinkTypeIPv4, LinkTypeIPv6:
	default:
		t.Fatalf("link type %v", lt)
	}
	return append(h, ip...)
}

// rec is one record of a synthesised capture.
type rec struct {
	ts      time.Time
	data    []byte
	wireLen int // 0: len(data)
	iface   int // pcapng only
}

// pcapFile writes a pcap file by hand (any byte order, µs or ns).
func pcapFile(order binary.ByteOrder, nano bool, lt layers.LinkType, recs []rec) []byte {
	var b bytes.Buffer
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	h := make([]byte, 24)
	order.PutUint32(h[0:], magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], 262144)
	order.PutUint32(h[20:], uint32(lt))
	b.Write(h)
	for _, r := range recs {
		rh := make([]byte, 16)
		order.PutUint32(rh[0:], uint32(r.ts.Unix()))
		frac := r.ts.Nanosecond()
		if !nano {
			frac /= 1000
		}
		order.PutUint32(rh[4:], uint32(frac))
		order.PutUint32(rh[8:], uint32(len(r.data)))
		wl := r.wireLen
		if wl == 0 {
			wl = len(r.data)
		}
		order.PutUint32(rh[12:], uint32(wl))
		b.Write(rh)
		b.Write(r.data)
	}
	return b.Bytes()
}

func ciFor(ts time.Time, data []byte, iface int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: len(data), InterfaceIndex: iface}
}
