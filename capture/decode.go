package capture

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Link types decoded (LINKTYPE_* values of the pcap/pcapng specifications).
const (
	LinkTypeNull     = layers.LinkTypeNull     // 0: BSD loopback, host byte order family
	LinkTypeEthernet = layers.LinkTypeEthernet // 1: Ethernet, with 802.1Q / QinQ tags
	LinkTypeRaw      = layers.LinkTypeRaw      // 101: raw IPv4 or IPv6
	LinkTypeLoop     = layers.LinkTypeLoop     // 108: OpenBSD loopback, network byte order family
	LinkTypeSLL      = layers.LinkTypeLinuxSLL // 113: Linux cooked v1
	LinkTypeIPv4     = layers.LinkTypeIPv4     // 228: raw IPv4
	LinkTypeIPv6     = layers.LinkTypeIPv6     // 229: raw IPv6
	LinkTypeSLL2     = layers.LinkType(276)    // 276: Linux cooked v2
)

// Supported reports whether frames of link type lt can be decoded.
func Supported(lt layers.LinkType) bool {
	switch lt {
	case LinkTypeNull, LinkTypeEthernet, LinkTypeRaw, LinkTypeLoop, LinkTypeSLL,
		LinkTypeIPv4, LinkTypeIPv6, LinkTypeSLL2:
		return true
	}
	return false
}

// Result classifies a decoded frame.
type Result uint8

const (
	// ResultTCP: the frame holds a TCP segment; the Packet is filled in.
	ResultTCP Result = iota
	// ResultNotTCP: the frame is valid but carries something else (ARP, UDP, ...).
	ResultNotTCP
	// ResultFragment: an IPv4 or IPv6 fragment (not reassembled).
	ResultFragment
	// ResultBadLinkType: the link type is not supported.
	ResultBadLinkType
	// ResultMalformed: a header is cut short or invalid.
	ResultMalformed
)

const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	etherTypeVLAN  = 0x8100
	etherTypeQinQ  = 0x88a8
	etherTypeQinQ2 = 0x9100
)

// Decoder turns link-layer frames into TCP segments. The link header is
// decoded by hand (every supported type, including SLL2, reduces to an
// EtherType and an offset), IP and TCP with a gopacket.DecodingLayerParser
// over preallocated layers: decoding allocates nothing per frame. A Decoder
// is not safe for concurrent use; the layers it fills are reused by the
// next Decode.
type Decoder struct {
	ip4     layers.IPv4
	ip6     layers.IPv6
	tcp     layers.TCP
	p4, p6  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	frag4   bool // the last Decode returned ResultFragment for an IPv4 fragment
}

// Fragment returns the IPv4 header of the fragment the last Decode returned
// ResultFragment for (its Payload the fragment's data, aliasing the frame),
// or nil when that was not an IPv4 fragment.
func (d *Decoder) Fragment() *layers.IPv4 {
	if !d.frag4 {
		return nil
	}
	return &d.ip4
}

// DecodeDatagram decodes the TCP segment of an IPv4 datagram reassembled
// from fragments, as Decode does for a whole packet.
func (d *Decoder) DecodeDatagram(ip *layers.IPv4, p *Packet) Result {
	if ip.Protocol != layers.IPProtocolTCP {
		return ResultNotTCP
	}
	if err := d.tcp.DecodeFromBytes(ip.Payload, gopacket.NilDecodeFeedback); err != nil {
		return ResultMalformed
	}
	p.NetFlow = ip.NetworkFlow()
	p.IPv6 = false
	p.Missing = 0
	p.TCP = &d.tcp
	return ResultTCP
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder {
	d := &Decoder{decoded: make([]gopacket.LayerType, 0, 4)}
	d.p4 = gopacket.NewDecodingLayerParser(layers.LayerTypeIPv4, &d.ip4, &d.ip6, &d.tcp)
	d.p6 = gopacket.NewDecodingLayerParser(layers.LayerTypeIPv6, &d.ip6, &d.ip4, &d.tcp)
	d.p4.IgnoreUnsupported = true
	d.p6.IgnoreUnsupported = true
	return d
}

// Decode decodes one frame of link type lt. On TCP it sets p.NetFlow,
// p.TCP (pointing at the Decoder's reused layer, whose Payload aliases
// data) and p.IPv6; other fields of p are left alone.
func (d *Decoder) Decode(data []byte, lt layers.LinkType, p *Packet) Result {
	et, off, res := linkHeader(data, lt)
	if res != ResultTCP {
		return res
	}
	var parser *gopacket.DecodingLayerParser
	switch et {
	case etherTypeIPv4:
		parser = d.p4
	case etherTypeIPv6:
		parser = d.p6
	default:
		return ResultNotTCP
	}
	d.frag4 = false
	if err := parser.DecodeLayers(data[off:], &d.decoded); err != nil {
		return ResultMalformed
	}
	n := len(d.decoded)
	if n == 0 {
		return ResultMalformed
	}
	if d.decoded[n-1] != layers.LayerTypeTCP {
		// Find the innermost IP header to see whether it is a fragment.
		switch d.decoded[n-1] {
		case layers.LayerTypeIPv4:
			if d.ip4.Flags&layers.IPv4MoreFragments != 0 || d.ip4.FragOffset != 0 {
				d.frag4 = true
				return ResultFragment
			}
		case layers.LayerTypeIPv6:
			if d.ip6.NextHeader == layers.IPProtocolIPv6Fragment {
				return ResultFragment
			}
		}
		return ResultNotTCP
	}
	if n < 2 {
		return ResultMalformed
	}
	declared := -1 // TCP segment length the IP header announces
	switch d.decoded[n-2] {
	case layers.LayerTypeIPv4:
		if d.ip4.Flags&layers.IPv4MoreFragments != 0 || d.ip4.FragOffset != 0 {
			return ResultFragment
		}
		p.NetFlow = d.ip4.NetworkFlow()
		p.IPv6 = false
		declared = int(d.ip4.Length) - int(d.ip4.IHL)*4
	case layers.LayerTypeIPv6:
		p.NetFlow = d.ip6.NetworkFlow()
		p.IPv6 = true
		if d.ip6.NextHeader == layers.IPProtocolTCP && d.ip6.Length != 0 {
			declared = int(d.ip6.Length)
		}
	default:
		return ResultMalformed
	}
	p.Missing = 0
	if declared >= 0 {
		if m := declared - int(d.tcp.DataOffset)*4 - len(d.tcp.Payload); m > 0 {
			p.Missing = m
		}
	}
	p.TCP = &d.tcp
	return ResultTCP
}

// linkHeader returns the EtherType of the network layer and its offset in
// data; res is ResultTCP (meaning "go on") or the reason to stop.
func linkHeader(data []byte, lt layers.LinkType) (et uint16, off int, res Result) {
	switch lt {
	case LinkTypeEthernet:
		if len(data) < 14 {
			return 0, 0, ResultMalformed
		}
		et, off = binary.BigEndian.Uint16(data[12:14]), 14
	case LinkTypeSLL:
		if len(data) < 16 {
			return 0, 0, ResultMalformed
		}
		et, off = binary.BigEndian.Uint16(data[14:16]), 16
	case LinkTypeSLL2:
		// LINKTYPE_LINUX_SLL2: protocol type (2, BE), reserved (2),
		// interface index (4), ARPHRD type (2), packet type (1),
		// address length (1), address (8): 20 bytes.
		if len(data) < 20 {
			return 0, 0, ResultMalformed
		}
		et, off = binary.BigEndian.Uint16(data[0:2]), 20
	case LinkTypeNull, LinkTypeLoop:
		if len(data) < 4 {
			return 0, 0, ResultMalformed
		}
		var fam uint32
		if lt == LinkTypeLoop {
			fam = binary.BigEndian.Uint32(data[:4])
		} else {
			// Host byte order of the capturing machine: accept both.
			fam = binary.LittleEndian.Uint32(data[:4])
			if fam > 0xffff {
				fam = binary.BigEndian.Uint32(data[:4])
			}
		}
		switch fam {
		case 2:
			et = etherTypeIPv4
		case 10, 24, 28, 30: // AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, Darwin
			et = etherTypeIPv6
		default:
			return 0, 0, ResultNotTCP
		}
		off = 4
	case LinkTypeRaw, LinkTypeIPv4, LinkTypeIPv6:
		if len(data) < 1 {
			return 0, 0, ResultMalformed
		}
		switch data[0] >> 4 {
		case 4:
			et = etherTypeIPv4
		case 6:
			et = etherTypeIPv6
		default:
			return 0, 0, ResultMalformed
		}
		return et, 0, ResultTCP
	default:
		return 0, 0, ResultBadLinkType
	}
	// 802.1Q and QinQ tags (any number).
	for et == etherTypeVLAN || et == etherTypeQinQ || et == etherTypeQinQ2 {
		if len(data) < off+4 {
			return 0, 0, ResultMalformed
		}
		et = binary.BigEndian.Uint16(data[off+2 : off+4])
		off += 4
	}
	return et, off, ResultTCP
}
