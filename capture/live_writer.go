package capture

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// DumpOptions configure a Dumper (-w, -b).
type DumpOptions struct {
	// Path of the file; ".pcapng" (any case) writes pcapng, anything else
	// pcap with nanosecond timestamps.
	Path string
	// LinkType and Snaplen go into the file header.
	LinkType layers.LinkType
	Snaplen  int
	// Interface names the interface in pcapng.
	Interface string
	// FileSize, when > 0, starts a new file once the current one holds at
	// least this many bytes (ring buffer, like tshark -b filesize). The
	// files are named PREFIX_NNNNN_YYYYMMDDhhmmss.EXT after Path.
	FileSize int64
	// Files, when > 0 with FileSize, keeps only the newest Files files.
	Files int
	// Stats, when set, gives the capture's kernel counters (Live.Stats):
	// each pcapng file then ends with an Interface Statistics Block, as
	// dumpcap writes one, holding the counters when the file is closed,
	// counted from the start of the capture (isb_starttime, the capture's
	// start; isb_endtime, when the file is closed; isb_ifrecv and
	// isb_ifdrop, LiveStats.Received and Dropped). In a ring buffer every
	// file has them, cumulative: the last file's are the whole capture's.
	// A pcap file has no place for them.
	Stats func() (LiveStats, error)
}

// Dumper writes raw packets to pcap or pcapng files, created with mode
// 0600. It is not safe for concurrent use.
type Dumper struct {
	opts    DumpOptions
	ng      bool
	f       *os.File
	bw      *bufio.Writer
	pw      *pcapgo.Writer
	nw      *pcapgo.NgWriter
	size    int64
	seq     int
	files   []string
	lastFl  time.Time
	Packets int64 // packets written
	// start is the capture's start (isb_starttime).
	start time.Time
}

// NewDumper creates the (first) file.
func NewDumper(opts DumpOptions) (*Dumper, error) {
	if opts.Snaplen <= 0 {
		opts.Snaplen = 262144
	}
	d := &Dumper{opts: opts, ng: strings.EqualFold(filepath.Ext(opts.Path), ".pcapng"), start: time.Now()}
	if opts.Stats != nil {
		if st, err := opts.Stats(); err == nil && !st.Start.IsZero() {
			d.start = st.Start // when the counters started
		}
	}
	if err := d.open(); err != nil {
		return nil, err
	}
	return d, nil
}

// Files returns the files written so far that still exist (ring buffer).
func (d *Dumper) Files() []string { return append([]string(nil), d.files...) }

func (d *Dumper) name() string {
	if d.opts.FileSize <= 0 {
		return d.opts.Path
	}
	ext := filepath.Ext(d.opts.Path)
	base := strings.TrimSuffix(d.opts.Path, ext)
	return fmt.Sprintf("%s_%05d_%s%s", base, d.seq, time.Now().Format("20060102150405"), ext)
}

func (d *Dumper) open() error {
	d.seq++
	name := d.name()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return &Error{File: name, Err: err}
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return &Error{File: name, Err: err}
	}
	d.f, d.size = f, 0
	d.bw = bufio.NewWriterSize(countWriter{f, &d.size}, 1<<16)
	if d.ng {
		d.nw, err = pcapgo.NewNgWriterInterface(d.bw, pcapgo.NgInterface{
			Name: d.opts.Interface, LinkType: d.opts.LinkType, SnapLength: uint32(d.opts.Snaplen),
			TimestampResolution: 9, OS: "Linux",
		}, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "pulsarscope"}})
	} else {
		d.pw = pcapgo.NewWriterNanos(d.bw)
		err = d.pw.WriteFileHeader(uint32(d.opts.Snaplen), d.opts.LinkType)
	}
	if err != nil {
		f.Close()
		return &Error{File: name, Err: err}
	}
	d.files = append(d.files, name)
	if d.opts.Files > 0 {
		for len(d.files) > d.opts.Files {
			os.Remove(d.files[0])
			d.files = d.files[1:]
		}
	}
	return nil
}

type countWriter struct {
	f *os.File
	n *int64
}

func (c countWriter) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	*c.n += int64(n)
	return n, err
}

// WritePacket writes one packet, starting a new file first when the ring
// buffer's file size is reached. The output is flushed about every second.
func (d *Dumper) WritePacket(ci gopacket.CaptureInfo, data []byte) error {
	if d.opts.FileSize > 0 && d.size+int64(d.bw.Buffered()) >= d.opts.FileSize && d.Packets > 0 {
		if err := d.closeFile(); err != nil {
			return err
		}
		if err := d.open(); err != nil {
			return err
		}
	}
	ci.InterfaceIndex = 0
	ci.AncillaryData = nil
	var err error
	if d.ng {
		err = d.nw.WritePacket(ci, data)
	} else {
		err = d.pw.WritePacket(ci, data)
	}
	if err != nil {
		return &Error{File: d.f.Name(), Err: err}
	}
	d.Packets++
	if ci.Timestamp.Sub(d.lastFl) >= time.Second {
		d.lastFl = ci.Timestamp
		return d.Flush()
	}
	return nil
}

// Flush writes buffered packets to the file.
func (d *Dumper) Flush() error {
	var err error
	if d.ng {
		err = d.nw.Flush()
	} else {
		err = d.bw.Flush()
	}
	if err != nil {
		return &Error{File: d.f.Name(), Err: err}
	}
	return nil
}

// writeStats ends a pcapng file with an Interface Statistics Block holding
// the capture's counters now (DumpOptions.Stats). They are cumulative, as
// the kernel counts them and as pcapng defines them ("starting from the
// beginning of the capture"): the kernel counts a packet when it enters
// its ring, before pulsarscope reads it, so the counters at a ring-buffer
// file switch include packets that go to the next file, and per-file
// differences would not match the files' packets.
func (d *Dumper) writeStats() error {
	if !d.ng || d.opts.Stats == nil {
		return nil
	}
	isb := pcapgo.NgInterfaceStatistics{StartTime: d.start, EndTime: time.Now(),
		PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: pcapgo.NgNoValue64}
	if st, err := d.opts.Stats(); err == nil {
		if !st.End.IsZero() {
			isb.EndTime = st.End
		}
		isb.PacketsReceived, isb.PacketsDropped = st.Received, st.Dropped
	}
	isb.LastUpdate = isb.EndTime
	if err := d.nw.WriteInterfaceStats(0, isb); err != nil {
		return &Error{File: d.f.Name(), Err: err}
	}
	return nil
}

func (d *Dumper) closeFile() error {
	err := d.writeStats()
	if ferr := d.Flush(); err == nil {
		err = ferr
	}
	if cerr := d.f.Close(); err == nil && cerr != nil {
		err = &Error{File: d.f.Name(), Err: cerr}
	}
	return err
}

// Close flushes and closes the current file.
func (d *Dumper) Close() error {
	if d.f == nil {
		return nil
	}
	err := d.closeFile()
	d.f = nil
	return err
}

// Tee returns a RawSource that writes every frame raw returns to d before
// returning it. A write error ends the source with that error.
func Tee(raw RawSource, d *Dumper) RawSource { return &teeRaw{raw: raw, d: d} }

type teeRaw struct {
	raw RawSource
	d   *Dumper
}

func (t *teeRaw) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	data, ci, lt, err := t.raw.ReadRaw()
	if err != nil {
		return data, ci, lt, err
	}
	if werr := t.d.WritePacket(ci, data); werr != nil {
		return nil, ci, lt, werr
	}
	return data, ci, lt, nil
}

// Close closes the underlying source (not the Dumper).
func (t *teeRaw) Close() error { return t.raw.Close() }

// InterfaceStats returns the underlying source's capture counters.
func (t *teeRaw) InterfaceStats() []InterfaceStats { return InterfaceStatsOf(t.raw) }
