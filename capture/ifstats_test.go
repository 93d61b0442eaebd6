package capture

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// readToEnd reads every packet of a Source (the ISBs at the end of a pcapng
// file are parsed on the way to io.EOF).
func readToEnd(t *testing.T, s *Source) {
	t.Helper()
	for {
		if _, err := s.Next(context.Background()); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
	}
}

// TestDumperInterfaceStats writes a real capture through Tee into a ring
// buffer of pcapng files whose counters come from DumpOptions.Stats, and
// reads each file back through a Source: each file ends with an Interface
// Statistics Block holding the counters when it was closed, counted from
// the start of the capture.
func TestDumperInterfaceStats(t *testing.T) {
	src, err := Open("../testdata/pcaps/basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// The "kernel": it counts each packet read, and after every tenth one
	// another, dropped.
	start := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	var kernel LiveStats
	kernel.Start = start
	statsCalls := 0
	dir := t.TempDir()
	d, err := NewDumper(DumpOptions{Path: filepath.Join(dir, "x.pcapng"), LinkType: LinkTypeEthernet, Interface: "lo", FileSize: 3000,
		Stats: func() (LiveStats, error) {
			statsCalls++
			st := kernel
			st.End = time.Now().UTC()
			return st, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	tee := NewSource("tee", Tee(src.raw, d))
	for n := 1; ; n++ {
		_, err := tee.Next(context.Background())
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		// Next returns TCP segments only: every record of basic.pcap is one.
		kernel.Received++
		if n%10 == 0 {
			kernel.Received++
			kernel.Dropped++
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	files := d.Files()
	if len(files) < 3 {
		t.Fatalf("files %v: want a few with filesize:3", files)
	}
	if statsCalls != 1+len(files) { // the start, then once per file
		t.Errorf("Stats called %d times for %d files", statsCalls, len(files))
	}
	var packets int64
	prevEnd := start
	for i, f := range files {
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		readToEnd(t, s)
		is := s.InterfaceStats()
		s.Close()
		if len(is) != 1 || is[0].Index != 0 || is[0].Name != "lo" || is[0].Received == nil || is[0].Dropped == nil {
			t.Fatalf("%s: interface stats %+v", f, is)
		}
		st := is[0]
		// The "kernel" had received every packet of this file and the
		// ones before, and one in ten dropped besides.
		packets += s.Stats().Packets
		if *st.Received != uint64(packets)+*st.Dropped || *st.Dropped != uint64(packets/10) {
			t.Errorf("file %d: received %d, dropped %d after %d packets", i, *st.Received, *st.Dropped, packets)
		}
		if !st.Start.Equal(start) || !st.End.After(prevEnd) {
			t.Errorf("file %d: span %v .. %v, want %v .. after %v", i, st.Start, st.End, start, prevEnd)
		}
		prevEnd = st.End
		if i == len(files)-1 && (*st.Received != kernel.Received || *st.Dropped != kernel.Dropped || *st.Dropped == 0) {
			t.Errorf("last file: received %d, dropped %d; the kernel counted %d, %d", *st.Received, *st.Dropped, kernel.Received, kernel.Dropped)
		}
	}
}

// TestInterfaceStatsDumpcap reads the ISBs dumpcap 4.0 wrote (two
// interfaces, "Counters provided by dumpcap"), with their times in
// microseconds although the interfaces say nanoseconds.
func TestInterfaceStatsDumpcap(t *testing.T) {
	s, err := Open("testdata/two-ifaces.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readToEnd(t, s)
	is := s.InterfaceStats()
	if len(is) != 2 {
		t.Fatalf("interface stats %+v", is)
	}
	start, end := time.UnixMicro(1795950594120073).UTC(), time.UnixMicro(1795950597456111).UTC()
	for i, name := range []string{"lo", "any"} {
		st := is[i]
		if st.Index != i || st.Name != name || st.Received == nil || *st.Received != 21 || st.Dropped == nil || *st.Dropped != 0 {
			t.Errorf("interface %d: %+v", i, st)
		}
		if !st.Start.Equal(start) || !st.End.Equal(end) {
			t.Errorf("interface %d: span %v .. %v, want %v .. %v", i, st.Start, st.End, start, end)
		}
	}
}

// TestInterfaceStatsNone: pcap has no place for counters, and a pcapng
// file without ISBs (or written without DumpOptions.Stats) has none.
func TestInterfaceStatsNone(t *testing.T) {
	for _, f := range []string{"../testdata/pcaps/basic.pcap", "../testdata/pcaps/basic.pcapng", "testdata/loopback.pcap"} {
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		readToEnd(t, s)
		if is := s.InterfaceStats(); is != nil {
			t.Errorf("%s: %+v", f, is)
		}
		s.Close()
	}
	src, err := Open("../testdata/pcaps/basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "no-stats.pcapng")
	d, err := NewDumper(DumpOptions{Path: path, LinkType: LinkTypeEthernet})
	if err != nil {
		t.Fatal(err)
	}
	tee := NewSource("tee", Tee(src.raw, d))
	readToEnd(t, tee)
	in := tee.Stats().Packets
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	readToEnd(t, s)
	if is := s.InterfaceStats(); is != nil || in == 0 || s.Stats().Packets != in {
		t.Errorf("without Stats: %+v, %d packets, want %d", is, s.Stats().Packets, in)
	}
}
