// Package faults writes modified copies of packet captures of Pulsar traffic:
// it drops, reorders, duplicates and cuts TCP segments, corrupts bytes of
// Pulsar frames, rewrites ports and addresses and changes the link and file
// format, and logs exactly what it changed. It is the traffic lab's fault
// writer; its output feeds pulsarscope's tests.
//
// Everything is deterministic: the same input and fault specs give the same
// output bytes. The package has its own minimal TCP and Pulsar frame walker
// and does not depend on the product's decoder.
package faults

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Format is a capture file format.
type Format string

// The file formats the writer reads and writes.
const (
	FormatPcap   Format = "pcap"
	FormatPcapng Format = "pcapng"
)

// Packet is one captured packet.
type Packet struct {
	// Info is the packet's capture metadata (time, lengths).
	Info gopacket.CaptureInfo
	// Data holds the captured bytes, from the link-layer header on.
	Data []byte
	// ID identifies the packet across faults: the 1-based packet number in
	// the input for input packets, larger numbers for added copies.
	ID int
	// CopyOf is the ID of the packet this one duplicates (0 for originals).
	CopyOf int
	// Trimmed counts payload bytes removed from the start of this packet's
	// TCP payload (cut-start).
	Trimmed int
}

// Capture is a whole capture file held in memory.
type Capture struct {
	// Format is the format the capture is written in.
	Format Format
	// LinkType is the link type of every packet.
	LinkType layers.LinkType
	// SnapLen is the file's snapshot length (0: unlimited, pcapng only).
	SnapLen uint32
	// Nanos is true when timestamps have nanosecond resolution.
	Nanos bool
	// InterfaceName is the pcapng interface name (may be empty).
	InterfaceName string
	// Packets are the packets in file order.
	Packets []*Packet
	// nextID is the ID given to the next added packet.
	nextID int
}

// ReadCapture reads a pcap or pcapng capture (told apart by their magic).
// A pcapng file must have one link type for all its interfaces.
func ReadCapture(r io.Reader) (*Capture, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("reading capture magic: %w", err)
	}
	c := &Capture{}
	var src gopacket.PacketDataSource
	if bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}) { // pcapng section header block
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("reading pcapng header: %w", err)
		}
		c.Format = FormatPcapng
		c.LinkType = ng.LinkType()
		c.Nanos = ng.Resolution().ToDuration() < time.Microsecond
		for i := 0; i < ng.NInterfaces(); i++ {
			intf, err := ng.Interface(i)
			if err != nil {
				return nil, fmt.Errorf("reading pcapng interface %d: %w", i, err)
			}
			if i == 0 {
				c.InterfaceName = intf.Name
				c.SnapLen = intf.SnapLength
			}
			if intf.LinkType != c.LinkType {
				return nil, fmt.Errorf("pcapng interfaces have different link types (%v, %v): not supported", c.LinkType, intf.LinkType)
			}
		}
		src = ng
	} else {
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading pcap header: %w", err)
		}
		c.Format = FormatPcap
		c.LinkType = pr.LinkType()
		c.SnapLen = pr.Snaplen()
		c.Nanos = pr.Resolution() == gopacket.TimestampResolutionNanosecond
		src = pr
	}
	for {
		data, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading packet %d: %w", len(c.Packets)+1, err)
		}
		ci.InterfaceIndex = 0
		ci.AncillaryData = nil
		c.Packets = append(c.Packets, &Packet{Info: ci, Data: bytes.Clone(data), ID: len(c.Packets) + 1})
	}
	c.nextID = len(c.Packets) + 1
	return c, nil
}

// Write writes the capture in its Format. pcap output keeps the input's
// timestamp resolution; pcapng output always has nanosecond resolution.
func (c *Capture) Write(w io.Writer) error {
	snap := c.SnapLen
	for _, p := range c.Packets {
		if snap != 0 && uint32(len(p.Data)) > snap {
			snap = uint32(len(p.Data))
		}
	}
	switch c.Format {
	case FormatPcapng:
		intf := pcapgo.NgInterface{
			Name:                c.InterfaceName,
			LinkType:            c.LinkType,
			SnapLength:          snap,
			TimestampResolution: 9,
		}
		opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "pulsarscope faultwriter"}}
		nw, err := pcapgo.NewNgWriterInterface(w, intf, opts)
		if err != nil {
			return fmt.Errorf("writing pcapng header: %w", err)
		}
		for i, p := range c.Packets {
			if err := nw.WritePacket(p.Info, p.Data); err != nil {
				return fmt.Errorf("writing packet %d: %w", i+1, err)
			}
		}
		if err := nw.Flush(); err != nil {
			return fmt.Errorf("flushing pcapng: %w", err)
		}
		return nil
	case FormatPcap:
		if snap == 0 {
			snap = 262144
		}
		var pw *pcapgo.Writer
		if c.Nanos {
			pw = pcapgo.NewWriterNanos(w)
		} else {
			pw = pcapgo.NewWriter(w)
		}
		if err := pw.WriteFileHeader(snap, c.LinkType); err != nil {
			return fmt.Errorf("writing pcap header: %w", err)
		}
		for i, p := range c.Packets {
			if err := pw.WritePacket(p.Info, p.Data); err != nil {
				return fmt.Errorf("writing packet %d: %w", i+1, err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown output format %q", c.Format)
}

// Bytes returns the capture as written by Write.
func (c *Capture) Bytes() ([]byte, error) {
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// clonePacket returns a copy of p with a new ID.
func (c *Capture) clonePacket(p *Packet) *Packet {
	q := &Packet{Info: p.Info, Data: bytes.Clone(p.Data), ID: c.nextID, CopyOf: p.ID, Trimmed: p.Trimmed}
	if p.CopyOf != 0 {
		q.CopyOf = p.CopyOf
	}
	c.nextID++
	return q
}
