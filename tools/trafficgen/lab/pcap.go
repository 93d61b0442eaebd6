// Package lab turns the traffic lab's logs into the expectation files that
// accompany each committed capture, and renders the captures' README.
package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// CaptureInfo describes a capture file.
type CaptureInfo struct {
	// Format is "pcap" or "pcapng".
	Format string
	// LinkType is the libpcap name of the (first) link type, e.g. "EN10MB".
	LinkType string
	// Packets is the number of packet records.
	Packets int
	// Bytes is the file size.
	Bytes int64
}

func linkTypeName(lt uint32) string {
	switch lt {
	case 0:
		return "NULL"
	case 1:
		return "EN10MB"
	case 101:
		return "RAW"
	case 113:
		return "LINUX_SLL"
	case 276:
		return "LINUX_SLL2"
	}
	return fmt.Sprintf("LINKTYPE_%d", lt)
}

// ReadCaptureInfo reads a pcap or pcapng file and describes it.
func ReadCaptureInfo(path string) (CaptureInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return CaptureInfo{}, fmt.Errorf("read capture: %w", err)
	}
	info, err := parseCapture(b)
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	info.Bytes = int64(len(b))
	return info, nil
}

func parseCapture(b []byte) (CaptureInfo, error) {
	if len(b) < 24 {
		return CaptureInfo{}, errors.New("too short for a capture file")
	}
	switch {
	case binary.LittleEndian.Uint32(b) == 0x0a0d0d0a:
		return parsePcapng(b)
	}
	var bo binary.ByteOrder
	switch m := binary.LittleEndian.Uint32(b); m {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return CaptureInfo{}, fmt.Errorf("unknown magic %#08x", m)
	}
	info := CaptureInfo{Format: "pcap", LinkType: linkTypeName(bo.Uint32(b[20:]) & 0x0fffffff)}
	for off := 24; off < len(b); {
		if off+16 > len(b) {
			return info, fmt.Errorf("truncated record header at offset %d", off)
		}
		n := int(bo.Uint32(b[off+8:]))
		off += 16 + n
		if off > len(b) {
			return info, fmt.Errorf("truncated record data (record %d)", info.Packets+1)
		}
		info.Packets++
	}
	return info, nil
}

func parsePcapng(b []byte) (CaptureInfo, error) {
	info := CaptureInfo{Format: "pcapng"}
	var bo binary.ByteOrder = binary.LittleEndian
	for off := 0; off < len(b); {
		if off+12 > len(b) {
			return info, fmt.Errorf("truncated block at offset %d", off)
		}
		typ := bo.Uint32(b[off:])
		if typ == 0x0a0d0d0a {
			if bo.Uint32(b[off+8:]) != 0x1a2b3c4d {
				bo = binary.BigEndian
			}
			typ = 0x0a0d0d0a
		}
		n := int(bo.Uint32(b[off+4:]))
		if n < 12 || off+n > len(b) {
			return info, fmt.Errorf("bad block length %d at offset %d", n, off)
		}
		switch typ {
		case 1: // interface description
			if info.LinkType == "" {
				info.LinkType = linkTypeName(uint32(bo.Uint16(b[off+8:])))
			}
		case 3, 6: // simple and enhanced packet blocks
			info.Packets++
		}
		off += n
	}
	return info, nil
}
