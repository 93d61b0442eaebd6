package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FuzzSource feeds arbitrary bytes to the reader and decoder: no panic may
// escape, and reading ends with an error. The records of a classic pcap
// must be those pcapgo's reader returns (compareRecords).
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
	// Classic pcap records of every length case pcapReader tells apart.
	for _, recs := range [][]hostileRec{
		{{capLen: 4, wireLen: 4, present: 4}, {capLen: 5000, wireLen: 5000, present: 5000}, {capLen: 9, wireLen: 8, present: 9}},
		{{capLen: 300000, wireLen: 300000, present: 100}},
		{{frac: 0xffffffff, capLen: 60, wireLen: 60, present: 20}},
		{{capLen: 60, wireLen: 60, omitHeaderSuffix: 5}},
	} {
		f.Add(hostilePcap(binary.LittleEndian, false, 64, recs...))
		f.Add(hostilePcap(binary.BigEndian, true, 0xffffffff, recs...))
	}
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
		if _, err := compareRecords("fuzz", func() io.Reader { return bytes.NewReader(data) }); err != nil {
			t.Fatal(err)
		}
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
