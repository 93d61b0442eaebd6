package faults

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"

	"github.com/gopacket/gopacket/layers"
)

// writeStream overwrites stream bytes [off, off+len(b)) of st in every
// packet that carries them, fixes the checksums of those packets and
// returns their indices in order.
func writeStream(c *Capture, a *analysis, st *stream, off int64, b []byte) ([]int, error) {
	var changed []int
	for i, v := range b {
		o := off + int64(i)
		cs := st.carriers(o)
		if len(cs) == 0 {
			return nil, fmt.Errorf("no captured packet carries stream offset %d", o)
		}
		for _, j := range cs {
			s := a.segs[j]
			c.Packets[j].Data[s.v.pay+int(o-s.off)] = v
			if !slices.Contains(changed, j) {
				changed = append(changed, j)
			}
		}
	}
	slices.Sort(changed)
	for _, j := range changed {
		if err := fixChecksums(c.LinkType, c.Packets[j].Data); err != nil {
			return nil, fmt.Errorf("packet %d: %w", c.Packets[j].ID, err)
		}
	}
	return changed, nil
}

// fillFrameEntry fills e with the packets changed and the frame hit.
func fillFrameEntry(c *Capture, a *analysis, e *Entry, cn *conn, d Dir, f *frame, off int64, changed []int) {
	e.Conn, e.Dir, e.StreamOffset = cn.id, d.String(), ptr(off)
	e.FrameType, e.FrameIndex, e.FrameOffset = f.typeName(), f.index, ptr(f.off)
	first := c.Packets[changed[0]]
	e.Packet = first.ID
	if len(changed) > 1 {
		for _, j := range changed {
			e.Packets = append(e.Packets, c.Packets[j].ID)
		}
	}
	s := a.segs[changed[0]]
	e.setRef(first, int(off-s.off))
}

// corruptPayload changes one byte of a SEND or MESSAGE frame after its
// checksum field (metadata or payload), so only the CRC32-C is wrong.
// at= chooses the byte: auto (default: inside producer_name, falling back
// to the payload), producer-name, metadata, payload (their middle byte) or
// a number (offset from the frame's first byte). xor= gives the mask
// (default: 0x20 for ASCII letters, which flips their case, else 0xff).
func corruptPayload(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	cn, d, st, f, err := selectFrame(a, sp, "SEND")
	if err != nil {
		return nil, err
	}
	if !f.hasChecksum {
		return nil, fmt.Errorf("frame #%d %s of conn %d %s has no checksum", f.index, f.typeName(), cn.id, d)
	}
	at := sp.str("at", "auto")
	var off int64
	region := at
	switch at {
	case "auto", "producer-name":
		if f.producerName[1] > f.producerName[0] {
			off, region = letterNear(st.data, f.producerName[0], f.producerName[1]), "metadata.producer_name"
		} else if at == "auto" && f.end() > f.payloadOff {
			off, region = (f.payloadOff+f.end())/2, "payload"
		} else {
			return nil, fmt.Errorf("frame #%d has no producer_name to corrupt", f.index)
		}
	case "metadata":
		off, region = (f.metaOff+f.payloadOff)/2, "metadata"
		if f.metaSize == 0 {
			return nil, fmt.Errorf("frame #%d has empty metadata", f.index)
		}
	case "payload":
		if f.end() <= f.payloadOff {
			return nil, fmt.Errorf("frame #%d has an empty payload", f.index)
		}
		off = (f.payloadOff + f.end()) / 2
	default:
		n, err := sp.int("at", 0)
		if err != nil {
			return nil, err
		}
		off = f.off + n
		if off < f.checksumOff+4 || off >= f.end() {
			return nil, fmt.Errorf("at=%d is not after the checksum field (frame bytes %d..%d)", n, f.checksumOff+4-f.off, f.end()-f.off)
		}
		region = "payload"
		if off < f.payloadOff {
			region = "metadata"
			if off < f.metaOff {
				region = "metadata-size"
			}
		}
	}
	old := st.data[off]
	mask := byte(0xff)
	if (old|0x20) >= 'a' && (old|0x20) <= 'z' {
		mask = 0x20
	}
	if sp.has("xor") {
		m, err := sp.int("xor", 0)
		if err != nil {
			return nil, err
		}
		if m < 1 || m > 0xff {
			return nil, fmt.Errorf("xor=%d: want 1..255", m)
		}
		mask = byte(m)
	}
	nb := old ^ mask
	changed, err := writeStream(c, a, st, off, []byte{nb})
	if err != nil {
		return nil, err
	}
	e := &Entry{Region: region, Old: hex.EncodeToString([]byte{old}), New: hex.EncodeToString([]byte{nb})}
	fillFrameEntry(c, a, e, cn, d, f, off, changed)
	e.ExpectProblems = []string{ProblemChecksumMismatch}
	e.Detail = fmt.Sprintf("byte %d of frame #%d %s (conn %d %s, stream offset %d, in %s) changed %#02x -> %#02x (%q -> %q) in %d packet(s); IP/TCP checksums fixed, the frame's CRC32-C no longer matches",
		off-f.off, f.index, f.typeName(), cn.id, d, off, region, old, nb, rune(old), rune(nb), len(changed))
	if region == "metadata-size" {
		e.MayProblems = []string{"bad-metadata-size"}
	}
	return e, nil
}

// letterNear returns the offset of the ASCII letter in d[from:to] nearest
// to its middle (the middle itself when there is none), so that flipping
// its case keeps the string printable.
func letterNear(d []byte, from, to int64) int64 {
	mid := (from + to) / 2
	for k := int64(0); k < to-from; k++ {
		for _, o := range []int64{mid + k, mid - k} {
			if o >= from && o < to && (d[o]|0x20) >= 'a' && (d[o]|0x20) <= 'z' {
				return o
			}
		}
	}
	return mid
}

// badTotalSize overwrites a frame's totalSize field (value=, default
// 0x40000000, far above the 5 MiB + 10 KiB frame limit).
func badTotalSize(c *Capture, a *analysis, sp Spec) (*Entry, error) {
	cn, d, st, f, err := selectFrame(a, sp, "")
	if err != nil {
		return nil, err
	}
	val, err := sp.int("value", 0x40000000)
	if err != nil {
		return nil, err
	}
	if val < 0 || val > 0xffffffff {
		return nil, fmt.Errorf("value=%d does not fit 32 bits", val)
	}
	nb := binary.BigEndian.AppendUint32(nil, uint32(val))
	old := st.data[f.off : f.off+4]
	e := &Entry{Region: "totalSize", Old: hex.EncodeToString(old), New: hex.EncodeToString(nb)}
	changed, err := writeStream(c, a, st, f.off, nb)
	if err != nil {
		return nil, err
	}
	fillFrameEntry(c, a, e, cn, d, f, f.off, changed)
	e.FramesDestroyed = []FrameRef{ref(cn, d, f, "invalid")}
	remaining := int64(len(st.data)) - f.off
	switch {
	case val+4 > maxFrameSize:
		e.ExpectProblems = []string{ProblemFrameTooLarge, ProblemBytesSkipped}
		e.Detail = fmt.Sprintf("totalSize of frame #%d %s (conn %d %s, stream offset %d) overwritten: %d -> %d (frame of %d bytes > limit %d); decoding must resync at the next frame, stream offset %d",
			f.index, f.typeName(), cn.id, d, f.off, f.totalSize, val, val+4, maxFrameSize, f.end())
	case val+4 > remaining:
		e.ExpectProblems = []string{ProblemTruncatedFrame}
		e.Detail = fmt.Sprintf("totalSize of frame #%d %s overwritten: %d -> %d, beyond the end of the stream (%d bytes left)", f.index, f.typeName(), f.totalSize, val, remaining)
	default:
		e.Detail = fmt.Sprintf("totalSize of frame #%d %s overwritten: %d -> %d; the frame boundaries after it are wrong, the problems depend on the bytes", f.index, f.typeName(), f.totalSize, val)
		e.MayProblems = []string{ProblemBytesSkipped}
	}
	return e, nil
}

// fixAllChecksums recomputes the IPv4 and TCP checksums of every complete
// TCP packet. Loopback captures carry offloaded (invalid) TCP checksums.
func fixAllChecksums(c *Capture) (*Entry, error) {
	n := 0
	for _, p := range c.Packets {
		v := parse(c.LinkType, p.Data)
		if !v.ok || !v.complete() {
			continue
		}
		old := slices.Clone(p.Data)
		if err := fixChecksums(c.LinkType, p.Data); err != nil {
			return nil, fmt.Errorf("packet %d: %w", p.ID, err)
		}
		if !slices.Equal(old, p.Data) {
			n++
		}
	}
	return &Entry{Detail: fmt.Sprintf("IPv4/TCP checksums recomputed in every TCP packet; %d packets had wrong ones", n)}, nil
}

// portRewrite changes TCP port from= (default: the first Pulsar port) to
// to= (default 16650) in both directions and fixes the checksums.
func portRewrite(c *Capture, sp Spec, defFrom uint16) (*Entry, uint16, error) {
	from, err := sp.int("from", int64(defFrom))
	if err != nil {
		return nil, 0, err
	}
	to, err := sp.int("to", 16650)
	if err != nil {
		return nil, 0, err
	}
	if from < 1 || from > 65535 || to < 1 || to > 65535 || from == to {
		return nil, 0, fmt.Errorf("from=%d to=%d: want two different ports 1..65535", from, to)
	}
	n := 0
	for _, p := range c.Packets {
		v := parse(c.LinkType, p.Data)
		if !v.ok {
			continue
		}
		hit := false
		for _, o := range []int{v.l4, v.l4 + 2} {
			if binary.BigEndian.Uint16(p.Data[o:]) == uint16(from) {
				binary.BigEndian.PutUint16(p.Data[o:], uint16(to))
				hit = true
			}
		}
		if hit {
			if err := fixChecksums(c.LinkType, p.Data); err != nil {
				return nil, 0, fmt.Errorf("packet %d: %w", p.ID, err)
			}
			n++
		}
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("no TCP packet uses port %d", from)
	}
	e := &Entry{Detail: fmt.Sprintf("TCP port %d rewritten to %d in %d packets (both directions), checksums fixed", from, to, n)}
	if to != DefaultPort {
		e.NeedsFlags = []string{"--port", fmt.Sprint(to)}
		e.Detail += fmt.Sprintf("; pulsarscope needs --port %d", to)
	}
	return e, uint16(to), nil
}

// mapAddr maps an IPv4 address to IPv6: mode mapped (::ffff:a.b.c.d),
// ula (fd70:7363:6f70::a.b.c.d) or loopback (127.0.0.1 -> ::1, others ula).
func mapAddr(a netip.Addr, mode string) netip.Addr {
	v4 := a.As4()
	switch mode {
	case "mapped":
		return netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
	case "loopback":
		if a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			return netip.IPv6Loopback()
		}
	}
	b := [16]byte{0xfd, 0x70, 0x73, 0x63, 0x6f, 0x70} // ULA prefix fd70:7363:6f70::/48
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}

// toIPv6 rewrites every TCP/IPv4 packet to TCP/IPv6 (mode=loopback,
// mapped or ula), fixing lengths, link protocol fields and checksums.
// IPv4 options are dropped; other packets are left as they are.
func toIPv6(c *Capture, sp Spec) (*Entry, error) {
	mode := sp.str("mode", "loopback")
	if mode != "loopback" && mode != "mapped" && mode != "ula" {
		return nil, fmt.Errorf("mode=%s: want loopback, mapped or ula", mode)
	}
	n, left := 0, 0
	for _, p := range c.Packets {
		v := parse(c.LinkType, p.Data)
		if !v.ok || v.v6 {
			if !v.ok {
				left++
			}
			continue
		}
		if !v.complete() {
			return nil, fmt.Errorf("packet %d is truncated by the snapshot length", p.ID)
		}
		d := p.Data
		ihl := v.l4 - v.l3
		h := make([]byte, 40)
		h[0] = 0x60 | d[v.l3+1]>>4
		h[1] = d[v.l3+1] << 4
		binary.BigEndian.PutUint16(h[4:], binary.BigEndian.Uint16(d[v.l3+2:])-uint16(ihl))
		h[6] = d[v.l3+9]
		h[7] = d[v.l3+8]
		s16 := mapAddr(v.src.Addr(), mode).As16()
		d16 := mapAddr(v.dst.Addr(), mode).As16()
		copy(h[8:], s16[:])
		copy(h[24:], d16[:])
		out := make([]byte, 0, len(d)+40-ihl)
		out = append(out, d[:v.l3]...)
		out = append(out, h...)
		out = append(out, d[v.l4:]...)
		switch {
		case v.protoOff >= 0:
			binary.BigEndian.PutUint16(out[v.protoOff:], etherIPv6)
		case c.LinkType == layers.LinkTypeNull:
			binary.LittleEndian.PutUint32(out, 24) // AF_INET6 (BSD value, read by all tools)
		case c.LinkType == layers.LinkTypeLoop:
			binary.BigEndian.PutUint32(out, 24)
		}
		p.Data = out
		p.Info.CaptureLength += 40 - ihl
		p.Info.Length += 40 - ihl
		if err := fixChecksums(c.LinkType, p.Data); err != nil {
			return nil, fmt.Errorf("packet %d: %w", p.ID, err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("no TCP/IPv4 packet to rewrite")
	}
	if c.LinkType == layers.LinkTypeIPv4 {
		c.LinkType = layers.LinkTypeRaw
	}
	return &Entry{Detail: fmt.Sprintf("%d TCP/IPv4 packets rewritten to IPv6 (mode %s: 127.0.0.1 -> ::1 for loopback, else ::ffff:a.b.c.d for mapped, fd70:7363:6f70::a.b.c.d for ula), checksums fixed; %d non-TCP packets left unchanged",
		n, mode, left)}, nil
}

// macFor returns a locally administered MAC address derived from an IP
// address (zero address for non-IP packets).
func macFor(a netip.Addr) []byte {
	if !a.IsValid() {
		return make([]byte, 6)
	}
	h := fnv.New32a()
	b, _ := a.MarshalBinary()
	h.Write(b)
	return binary.BigEndian.AppendUint32([]byte{0x02, 0x00}, h.Sum32())
}

// toEthernet converts every packet to Ethernet framing with MAC addresses
// derived from the IP addresses.
func toEthernet(c *Capture) error {
	for _, p := range c.Packets {
		l3, protoOff, err := linkHeader(c.LinkType, p.Data)
		if err != nil {
			return fmt.Errorf("packet %d: %w", p.ID, err)
		}
		if len(p.Data) < l3 {
			return fmt.Errorf("packet %d: shorter than its link header", p.ID)
		}
		var et uint16
		switch {
		case protoOff >= 0:
			et = binary.BigEndian.Uint16(p.Data[protoOff:])
		case len(p.Data) > l3 && p.Data[l3]>>4 == 4:
			et = etherIPv4
		case len(p.Data) > l3 && p.Data[l3]>>4 == 6:
			et = etherIPv6
		}
		v := parse(c.LinkType, p.Data)
		h := append(macFor(v.dst.Addr()), macFor(v.src.Addr())...)
		h = binary.BigEndian.AppendUint16(h, et)
		p.Data = append(h, p.Data[l3:]...)
		p.Info.CaptureLength += 14 - l3
		p.Info.Length += 14 - l3
	}
	c.LinkType = layers.LinkTypeEthernet
	return nil
}

// vlan wraps every packet in an 802.1Q tag (id=, default 100; pcp=,
// default 0). Non-Ethernet captures are converted to Ethernet first.
func vlan(c *Capture, sp Spec) (*Entry, error) {
	id, err := sp.int("id", 100)
	if err != nil {
		return nil, err
	}
	pcp, err := sp.int("pcp", 0)
	if err != nil {
		return nil, err
	}
	if id < 0 || id > 4095 || pcp < 0 || pcp > 7 {
		return nil, fmt.Errorf("id=%d pcp=%d: want id 0..4095, pcp 0..7", id, pcp)
	}
	note := ""
	if c.LinkType != layers.LinkTypeEthernet {
		note = fmt.Sprintf("; converted from %s to Ethernet first (MACs derived from IP addresses)", linkName(c.LinkType))
		if err := toEthernet(c); err != nil {
			return nil, fmt.Errorf("converting to Ethernet: %w", err)
		}
	}
	tag := binary.BigEndian.AppendUint16(nil, etherDot1Q)
	tag = binary.BigEndian.AppendUint16(tag, uint16(pcp)<<13|uint16(id))
	for _, p := range c.Packets {
		if len(p.Data) < 14 {
			return nil, fmt.Errorf("packet %d: short Ethernet frame", p.ID)
		}
		p.Data = insertAt(p.Data, 12, tag)
		p.Info.CaptureLength += 4
		p.Info.Length += 4
	}
	return &Entry{Detail: fmt.Sprintf("every packet wrapped in an 802.1Q tag, VLAN %d, PCP %d%s", id, pcp, note)}, nil
}
