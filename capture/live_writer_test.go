package capture

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
)

// TestDumperRing writes frames through Tee into a ring buffer of pcapng
// files and reads them back.
func TestDumperRing(t *testing.T) {
	src, err := Open("../testdata/pcaps/basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir := t.TempDir()
	d, err := NewDumper(DumpOptions{Path: filepath.Join(dir, "x.pcapng"), LinkType: LinkTypeEthernet, FileSize: 2000, Files: 2})
	if err != nil {
		t.Fatal(err)
	}
	tee := NewSource("tee", Tee(src.raw, d))
	n := 0
	for {
		if _, err := tee.Next(context.Background()); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "x_*.pcapng"))
	if len(files) != 2 || len(d.Files()) != 2 {
		t.Fatalf("files %v (%v)", files, d.Files())
	}
	if d.Packets != tee.Stats().Packets {
		t.Errorf("wrote %d packets, read %d", d.Packets, tee.Stats().Packets)
	}
	for _, f := range files {
		fi, _ := os.Stat(f)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", f, fi.Mode().Perm())
		}
		s, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Next(context.Background()); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		if s.Stats().Packets == 0 {
			t.Errorf("%s: empty", f)
		}
		s.Close()
	}
}

func TestDumperPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "y.pcap")
	os.WriteFile(path, []byte("old"), 0o644)
	d, err := NewDumper(DumpOptions{Path: path, LinkType: LinkTypeSLL2})
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 20+20)
	frame[0], frame[1], frame[20] = 0x08, 0x00, 0x45
	ts := time.Unix(1700000000, 123456789)
	if err := d.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(frame), Length: len(frame)}, frame); err != nil {
		t.Fatal(err)
	}
	d.Close()
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data, ci, lt, err := s.raw.ReadRaw()
	if err != nil || lt != LinkTypeSLL2 || len(data) != 40 || !ci.Timestamp.Equal(ts) {
		t.Fatalf("read back: %v %v %d %v", err, lt, len(data), ci.Timestamp)
	}
}
