package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// compareRecords reads the capture open returns twice, with pcapgo's record
// reader (as before pcapReader) and with pcapReader, and reports the first
// difference: in the error of opening it, or in any record's data,
// CaptureInfo, link type or error. Reading goes on after errors (a bad
// length leaves both readers at the same offset) until io.EOF,
// io.ErrUnexpectedEOF or a few errors. It returns the number of records
// compared.
func compareRecords(name string, open func() io.Reader) (int, error) {
	old, errOld := newFileReader(name, open(), nil, true)
	cur, errCur := newFileReader(name, open(), nil, false)
	if fmt.Sprint(errOld) != fmt.Sprint(errCur) {
		return 0, fmt.Errorf("open: pcapgo %v, pcapReader %v", errOld, errCur)
	}
	if errOld != nil {
		return 0, nil
	}
	defer old.Close()
	defer cur.Close()
	if fr := cur.(*fileRaw); fr.pcapgo != nil || (fr.ng == nil) == (fr.pcap == nil) {
		return 0, fmt.Errorf("not read by pcapReader / NgReader: %+v", fr)
	}
	errs := 0
	for i := 1; i <= 1<<20; i++ {
		d1, ci1, lt1, e1 := old.ReadRaw()
		d2, ci2, lt2, e2 := cur.ReadRaw()
		if e1 != e2 && fmt.Sprint(e1) != fmt.Sprint(e2) || (e1 == nil) != (e2 == nil) {
			return i, fmt.Errorf("record %d: error: pcapgo %v, pcapReader %v", i, e1, e2)
		}
		if errors.Is(e1, io.EOF) != errors.Is(e2, io.EOF) || errors.Is(e1, io.ErrUnexpectedEOF) != errors.Is(e2, io.ErrUnexpectedEOF) {
			return i, fmt.Errorf("record %d: error kinds: pcapgo %#v, pcapReader %#v", i, e1, e2)
		}
		if !reflect.DeepEqual(ci1, ci2) || lt1 != lt2 {
			return i, fmt.Errorf("record %d: pcapgo %+v %v, pcapReader %+v %v", i, ci1, lt1, ci2, lt2)
		}
		if e1 != nil {
			if errs++; e1 == io.EOF || e1 == io.ErrUnexpectedEOF || errs == 4 {
				return i, nil
			}
			continue
		}
		if !bytes.Equal(d1, d2) {
			return i, fmt.Errorf("record %d: data differs (%d, %d bytes)", i, len(d1), len(d2))
		}
	}
	return 1 << 20, nil
}

// errAfter is a reader failing with errBroken after n bytes of r.
type errAfter struct {
	r io.Reader
	n int
}

var errBroken = errors.New("broken reader")

func (e *errAfter) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, errBroken
	}
	m, err := e.r.Read(p[:min(len(p), e.n)])
	e.n -= m
	return m, err
}

// readerKinds are the ways an input reaches NewFileReader: sized (small
// buffer), of unknown size (read ahead, 1 MiB buffer), a byte at a time,
// gzip-compressed, with the last bytes and io.EOF together, failing mid-way.
var readerKinds = map[string]func(data []byte) io.Reader{
	"sized":    func(d []byte) io.Reader { return bytes.NewReader(d) },
	"stream":   func(d []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(d)} },
	"one-byte": func(d []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(d)) },
	"data-err": func(d []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(d)) },
	"timeout":  func(d []byte) io.Reader { return iotest.TimeoutReader(iotest.HalfReader(bytes.NewReader(d))) },
	"gzip":     func(d []byte) io.Reader { return bytes.NewReader(gzBytes(d)) },
	"err-mid":  func(d []byte) io.Reader { return &errAfter{r: bytes.NewReader(d), n: len(d) * 2 / 3} },
}

func gzBytes(d []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(d)
	zw.Close() // writes to a bytes.Buffer do not fail
	return b.Bytes()
}

func comparePcap(t *testing.T, name string, data []byte, kinds ...string) {
	t.Helper()
	if len(kinds) == 0 {
		for k := range readerKinds {
			if k == "one-byte" && len(data) > 64<<10 {
				continue // a chunk of read-ahead a byte: slow
			}
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		open := readerKinds[k]
		if _, err := compareRecords(name, func() io.Reader { return open(data) }); err != nil {
			t.Errorf("%s (%s): %v", name, k, err)
		}
	}
}

// committedCaptures lists the captures of the repository.
func committedCaptures(t testing.TB) []string {
	var files []string
	for _, g := range []string{"../testdata/pcaps/*.pcap*", "testdata/*.pcap*", "../cli/testdata/*.pcap*"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, ".json") {
				files = append(files, f)
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("only %d captures found", len(files))
	}
	return files
}

// TestPcapReaderMatchesPcapgo compares pcapReader with pcapgo's record
// reader, record by record, on every committed capture (plain, as files,
// through every kind of reader, cut at many offsets) and on hostile ones.
func TestPcapReaderMatchesPcapgo(t *testing.T) {
	for _, path := range committedCaptures(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		comparePcap(t, name, data)
		// As a regular file, as Open reads it.
		n, err := compareRecords(name, fileOpener(t, path))
		if err != nil {
			t.Errorf("%s (file): %v", name, err)
		}
		if n < 1 {
			t.Errorf("%s: %d records compared", name, n)
		}
		// Cut everywhere in the first records and around every later
		// record boundary (the cuts the truncated captures have).
		cuts := map[int]bool{}
		for i := 0; i < min(len(data), 400); i++ {
			cuts[i] = true
		}
		if isPcapMagic(data[:4]) {
			order := binary.ByteOrder(binary.LittleEndian)
			if data[0] == 0xa1 {
				order = binary.BigEndian
			}
			var bounds []int
			for off := 24; off+16 <= len(data); off += 16 + int(order.Uint32(data[off+8:])) {
				bounds = append(bounds, off)
			}
			if len(bounds) > 20 {
				bounds = append(bounds[:10], bounds[len(bounds)-10:]...)
			}
			for _, off := range bounds {
				for d := -3; d <= 20; d++ {
					cuts[off+d] = true
				}
			}
		}
		for c := range cuts {
			if c >= 0 && c < len(data) {
				comparePcap(t, fmt.Sprintf("%s[:%d]", name, c), data[:c], "sized")
			}
		}
	}
}

// hostilePcap is a pcap header (order, nano, snaplen) followed by records
// given as (caplen, wirelen, data bytes actually present).
type hostileRec struct {
	sec, frac        uint32
	capLen, wireLen  uint32
	present          int // bytes of data present (<= capLen: a cut record)
	omitHeaderSuffix int // bytes cut from the end of the record header
}

func hostilePcap(order binary.ByteOrder, nano bool, snaplen uint32, recs ...hostileRec) []byte {
	var b bytes.Buffer
	h := make([]byte, 24)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	order.PutUint32(h[0:], magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], snaplen)
	order.PutUint32(h[20:], uint32(LinkTypeEthernet))
	b.Write(h)
	for i, r := range recs {
		rh := make([]byte, 16)
		order.PutUint32(rh[0:], r.sec)
		order.PutUint32(rh[4:], r.frac)
		order.PutUint32(rh[8:], r.capLen)
		order.PutUint32(rh[12:], r.wireLen)
		b.Write(rh[:16-r.omitHeaderSuffix])
		b.Write(bytes.Repeat([]byte{byte(i + 1)}, r.present))
	}
	return b.Bytes()
}

func TestPcapReaderHostile(t *testing.T) {
	ok := func(n uint32) hostileRec {
		return hostileRec{sec: 1700000000, frac: 123456, capLen: n, wireLen: n, present: int(n)}
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			p := fmt.Sprintf("%v/nano=%v/", order, nano)
			cases := map[string][]byte{
				"header-only":         hostilePcap(order, nano, 65535),
				"header-cut":          hostilePcap(order, nano, 65535)[:20],
				"longer-than-snaplen": hostilePcap(order, nano, 64, ok(60), ok(1000), ok(262144), ok(60)),
				"over-256k":           hostilePcap(order, nano, 65535, ok(60), ok(262145), ok(60)),
				"over-snaplen-2M":     hostilePcap(order, nano, 2<<20, ok(60), hostileRec{capLen: 2<<20 + 1, wireLen: 3 << 20, present: 100}),
				"cap-gt-wire":         hostilePcap(order, nano, 65535, ok(60), hostileRec{capLen: 100, wireLen: 99, present: 100}, ok(60)),
				"frac-wraps":          hostilePcap(order, nano, 65535, hostileRec{sec: 0xffffffff, frac: 0xffffffff, capLen: 10, wireLen: 10, present: 10}, hostileRec{frac: 4294968, capLen: 1, wireLen: 1, present: 1}),
				"4GiB-claims":         hostilePcap(order, nano, 0xffffffff, ok(60), hostileRec{capLen: 0xffffffff, wireLen: 0xffffffff, present: 13000}),
				"2GiB-claims":         hostilePcap(order, nano, 0x80000000, ok(60), hostileRec{capLen: 0x7fffffff, wireLen: 0x80000000, present: 5000}),
				"no-data":             hostilePcap(order, nano, 65535, ok(60), hostileRec{capLen: 50, wireLen: 50}),
				"rec-header-cut":      hostilePcap(order, nano, 65535, ok(60), hostileRec{capLen: 50, wireLen: 50, omitHeaderSuffix: 7}),
				"zero-length":         hostilePcap(order, nano, 65535, ok(0), ok(0), ok(60)),
				// Longer than the 1 MiB buffer of a stream, twice (the
				// copy buffer is reused), then one cut short.
				"long-records": hostilePcap(order, nano, 4<<20, ok(60), ok(1<<20+7), ok(3<<20), ok(60), ok(1<<20), ok(1<<20+1),
					hostileRec{capLen: 3 << 20, wireLen: 3 << 20, present: 2<<20 + 5}),
			}
			for name, data := range cases {
				comparePcap(t, p+name, data)
				for _, c := range []int{len(data) - 1, len(data) - 17, len(data) / 2, len(data) - 1<<20 - 3} {
					if c > 0 && c < len(data) {
						comparePcap(t, fmt.Sprintf("%s%s[:%d]", p, name, c), data[:c], "sized", "stream")
					}
				}
			}
		}
	}
}

// TestPcapReaderLongRecordFile reads records longer than the read buffer
// from a regular file, and checks the data, not just the agreement.
func TestPcapReaderLongRecordFile(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	frame := frameBytes(t, LinkTypeEthernet, tcpSeg("x"))
	data := pcapFile(binary.LittleEndian, true, LinkTypeEthernet, []rec{{ts: t0, data: frame}, {ts: t0, data: big}, {ts: t0, data: frame}})
	binary.LittleEndian.PutUint32(data[16:], 8<<20) // snap length
	path := filepath.Join(t.TempDir(), "long.pcap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := NewFileReader(path, f, f)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i, want := range [][]byte{frame, big, frame} {
		got, ci, lt, err := raw.ReadRaw()
		if err != nil || !bytes.Equal(got, want) || ci.Length != len(want) || !ci.Timestamp.Equal(t0) || ci.Timestamp.Location() != time.UTC || lt != layers.LinkTypeEthernet {
			t.Fatalf("record %d: %d bytes, %+v, %v, %v", i+1, len(got), ci, lt, err)
		}
	}
	if _, _, _, err := raw.ReadRaw(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// TestPcapReaderMatchesPcapgoLarge compares the two readers on the large
// capture(s) of $PULSARSCOPE_BENCH_PCAP (comma-separated paths), read as
// files; skipped when it is not set.
func TestPcapReaderMatchesPcapgoLarge(t *testing.T) {
	env := os.Getenv("PULSARSCOPE_BENCH_PCAP")
	if env == "" {
		t.Skip("PULSARSCOPE_BENCH_PCAP not set")
	}
	for _, path := range strings.Split(env, ",") {
		n, err := compareRecords(path, fileOpener(t, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		t.Logf("%s: %d records compared", path, n)
	}
}

// fileOpener returns a function opening path, closed at the test's end.
func fileOpener(t *testing.T, path string) func() io.Reader {
	return func() io.Reader {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
}
