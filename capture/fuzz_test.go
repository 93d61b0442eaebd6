package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FuzzSource feeds arbitrary bytes to the reader and decoder: no panic may
// escape, and reading ends with an error.
func FuzzSource(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pcap*")
	for _, p := range files {
		// The head of each real capture (small seeds keep minimisation fast).
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data[:min(len(data), 2048)])
		}
	}
	for _, lt := range []layers.LinkType{LinkTypeEthernet, LinkTypeSLL2, LinkTypeNull, LinkTypeRaw} {
		data := pcapFile(binary.BigEndian, true, lt, []rec{{ts: t0, data: frameBytes(f, lt, tcpSeg6("seed"))}})
		f.Add(data)
		f.Add(gz(f, data))
	}
	f.Add([]byte{})
	// A pcapng file of one packet ending with an Interface Statistics Block.
	path := filepath.Join(f.TempDir(), "isb.pcapng")
	if d, err := NewDumper(DumpOptions{Path: path, LinkType: LinkTypeEthernet, Interface: "lo",
		Stats: func() (LiveStats, error) { return LiveStats{Received: 3, Dropped: 1, Start: t0}, nil }}); err == nil {
		frame := frameBytes(f, LinkTypeEthernet, tcpSeg("seed"))
		d.WritePacket(gopacket.CaptureInfo{Timestamp: t0, CaptureLength: len(frame), Length: len(frame)}, frame)
		d.Close()
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := OpenReader("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 0; i < 100000; i++ {
			p, err := src.Next(context.Background())
			if err != nil {
				_ = src.InterfaceStats()
				return
			}
			_ = len(p.TCP.Payload)
		}
	})
}

// FuzzDecode feeds arbitrary frames of every supported link type to the
// Decoder.
func FuzzDecode(f *testing.F) {
	for _, lt := range []layers.LinkType{LinkTypeEthernet, LinkTypeSLL, LinkTypeSLL2, LinkTypeNull, LinkTypeLoop, LinkTypeRaw} {
		f.Add(uint16(lt), frameBytes(f, lt, tcpSeg("seed")))
		f.Add(uint16(lt), frameBytes(f, lt, tcpSeg6("seed")))
	}
	d := NewDecoder()
	var p Packet
	f.Fuzz(func(t *testing.T, lt uint16, data []byte) {
		if d.Decode(data, layers.LinkType(lt), &p) == ResultTCP {
			if p.TCP == nil {
				t.Fatal("TCP without layer")
			}
			_ = len(p.TCP.Payload)
		}
	})
}
