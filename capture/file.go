package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// RawSource delivers raw link-layer frames. It is the seam between reading
// (a file, later a live AF_PACKET socket) and decoding (Decoder): any source
// of frames that can say the link type of each one can feed a Source.
type RawSource interface {
	// ReadRaw returns the next frame, its capture info and its link type.
	// data is only valid until the next call. At the end of input it returns
	// io.EOF; a record cut short returns io.ErrUnexpectedEOF.
	ReadRaw() (data []byte, ci gopacket.CaptureInfo, lt layers.LinkType, err error)
	// Close releases the source.
	Close() error
}

const readBufferSize = 1 << 20

// minPcapgoBuffer is the size of the bufio.Reader pcapgo.NewReader wraps
// its input in unless it is a *bufio.Reader at least that large (bufio's
// default size): then it reads the 24-byte file header from it, no more.
const minPcapgoBuffer = 4096

var (
	magicGzip   = []byte{0x1f, 0x8b}
	magicPcapng = []byte{0x0a, 0x0d, 0x0d, 0x0a}
)

// Open opens a capture file: pcap (micro- or nanosecond, either byte
// order) or pcapng, optionally gzip-compressed (detected by content). The
// path "-" reads standard input. Errors are *Error naming the path.
func Open(path string) (*Source, error) {
	if path == "-" {
		raw, err := NewFileReader("-", os.Stdin, nil)
		if err != nil {
			return nil, err
		}
		return NewSource("-", raw), nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	if fi.IsDir() {
		return nil, &Error{File: path, Err: ErrIsDirectory}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	raw, err := NewFileReader(path, f, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return NewSource(path, raw), nil
}

// OpenReader reads a capture (pcap or pcapng, maybe gzip-compressed) from r;
// name is used in errors. r is not closed by the Source.
func OpenReader(name string, r io.Reader) (*Source, error) {
	raw, err := NewFileReader(name, r, nil)
	if err != nil {
		return nil, err
	}
	return NewSource(name, raw), nil
}

// NewFileReader detects the format of r (gzip, pcap, pcapng) and returns a
// RawSource reading it. closer, if not nil, is closed by the RawSource's
// Close. Errors are *Error naming name.
func NewFileReader(name string, r io.Reader, closer io.Closer) (RawSource, error) {
	return newFileReader(name, r, closer, false)
}

// newFileReader is NewFileReader; pcapgoRecords reads the records of a
// classic pcap with pcapgo.Reader, as before pcapReader, for the tests
// that compare the two.
func newFileReader(name string, r io.Reader, closer io.Closer, pcapgoRecords bool) (RawSource, error) {
	var ra *readAhead
	fail := func(err error) (RawSource, error) {
		if ra != nil {
			ra.Close()
		}
		return nil, &Error{File: name, Err: err}
	}
	// The file under r: r itself, or the closer that came with a wrapper
	// of it (a byte counter, for a progress bar).
	var sized io.Reader = r
	if c, ok := closer.(*os.File); ok {
		if _, ok := r.(*os.File); !ok {
			sized = c
		}
	}
	size, regular := bufferSizeFor(sized)
	br := bufio.NewReaderSize(r, size)
	head, err := br.Peek(4)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return fail(err)
		}
		return fail(ErrEmpty)
	}
	var gz *gzip.Reader
	// Large gzip inputs, and streams of unknown size, are read (and
	// inflated) in advance by a goroutine of their own (readAhead).
	large := size >= readBufferSize
	if len(head) >= 2 && head[0] == magicGzip[0] && head[1] == magicGzip[1] {
		gz, err = gzip.NewReader(br)
		if err != nil {
			return fail(fmt.Errorf("%w: bad gzip header: %v", ErrNotCapture, err))
		}
		switch {
		case large:
			ra = newReadAhead(gz, regular)
			br = bufio.NewReaderSize(ra, readBufferSize)
			// Closing gz would race with the goroutine reading it, and
			// frees nothing: it is left to the collector.
			gz = nil
		case size < readBufferSize:
			br = bufio.NewReaderSize(gz, 4*size) // small input: small output, mostly
		default:
			br = bufio.NewReaderSize(gz, readBufferSize)
		}
		head, err = br.Peek(4)
		if len(head) == 0 {
			if err != nil && err != io.EOF {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return fail(fmt.Errorf("%w: gzip stream: %v", ErrTruncated, err))
				}
				return fail(fmt.Errorf("gzip: %w", err))
			}
			return fail(fmt.Errorf("%w (gzip holds no data)", ErrEmpty))
		}
	}
	if len(head) < 4 {
		return fail(fmt.Errorf("%w: only %d bytes", ErrNotCapture, len(head)))
	}
	if large && ra == nil && !regular {
		// A pipe (stdin) or other stream: read ahead. A plain regular
		// file gains nothing measurable (docs/benchmarks.md).
		ra = newReadAhead(br, false)
		br = bufio.NewReaderSize(ra, readBufferSize)
	}
	fr := &fileRaw{closer: closer, gz: gz, ra: ra}
	switch {
	case string(head) == string(magicPcapng):
		fr.blocks = newNgBlockFilter(br)
		ng, err := pcapgo.NewNgReader(fr.blocks, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return fail(headerError("pcapng", err))
		}
		fr.ng = ng
	case isPcapMagic(head):
		if br.Size() < minPcapgoBuffer {
			// Never: every buffer above is larger. pcapgo.NewReader would
			// wrap a smaller one in a bufio.Reader of its own and read
			// past the file header.
			br = bufio.NewReaderSize(br, minPcapgoBuffer)
		}
		bigEndian := head[0] == 0xa1 // a1 b2 c3 d4 or a1 b2 3c 4d
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return fail(headerError("pcap", err))
		}
		if !Supported(pr.LinkType()) {
			return fail(fmt.Errorf("%w: %d (%v)", ErrUnknownLinkType, uint16(pr.LinkType()), pr.LinkType()))
		}
		if pcapgoRecords {
			fr.pcapgo = pr
		} else {
			// Chunks of twice br's size. A plain input is read
			// directly once br's buffered bytes are used, in steps of
			// readStep; an inflated or read-ahead one through br, in
			// steps of br's size (which bufio hands straight to its
			// input: no copy through its buffer).
			src, step := io.Reader(br), br.Size()
			if gz == nil && ra == nil {
				src = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), r)
				step = readStep
			}
			fr.pcap = newPcapReader(newReadBuffers(src, 2*br.Size(), step), pr, bigEndian)
		}
		fr.lt = pr.LinkType()
	default:
		return fail(fmt.Errorf("%w: magic % x", ErrNotCapture, head))
	}
	return fr, nil
}

// bufferSizeFor returns the read buffer size for r (readBufferSize, less
// for inputs known to be smaller) and whether r is a regular file.
func bufferSizeFor(r io.Reader) (size int, regularFile bool) {
	n := -1
	switch v := r.(type) {
	case interface{ Len() int }:
		n = v.Len()
	case *os.File:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			n, regularFile = int(min(fi.Size(), readBufferSize)), true
		}
	}
	if n < 0 || n > readBufferSize {
		return readBufferSize, regularFile
	}
	return max(n+16, 4096), regularFile
}

func headerError(format string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "Not enough data for read" {
		return fmt.Errorf("%w: %s file header: %v", ErrTruncated, format, err)
	}
	return fmt.Errorf("%w: %s file header: %v", ErrNotCapture, format, err)
}

func isPcapMagic(b []byte) bool {
	switch string(b) {
	case "\xa1\xb2\xc3\xd4", "\xd4\xc3\xb2\xa1", // microsecond
		"\xa1\xb2\x3c\x4d", "\x4d\x3c\xb2\xa1": // nanosecond
		return true
	}
	return false
}

// fileRaw is the RawSource of a pcap or pcapng stream.
type fileRaw struct {
	pcap   *pcapReader
	pcapgo *pcapgo.Reader // instead of pcap, for tests only (newFileReader)
	ng     *pcapgo.NgReader
	blocks *ngBlockFilter // under ng: packet blocks left out
	lt     layers.LinkType
	gz     *gzip.Reader
	ra     *readAhead
	closer io.Closer
}

func (f *fileRaw) ReadRaw() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	if f.pcap != nil {
		data, ci, err := f.pcap.next()
		return data, ci, f.lt, err
	}
	if f.pcapgo != nil {
		data, ci, err := f.pcapgo.ZeroCopyReadPacketData()
		return data, ci, f.lt, err
	}
	data, ci, err := f.ng.ZeroCopyReadPacketData()
	if err != nil {
		return nil, ci, 0, err
	}
	lt := layers.LinkType(0xffff) // unknown: never a supported type
	if len(ci.AncillaryData) > 0 {
		if v, ok := ci.AncillaryData[0].(layers.LinkType); ok {
			lt = v
		}
	}
	return data, ci, lt, nil
}

// buffers returns the buffers a classic pcap's records lie in (nil for
// pcapng).
func (f *fileRaw) buffers() *ReadBuffers {
	if f.pcap == nil {
		return nil
	}
	return f.pcap.br
}

func (f *fileRaw) Close() error {
	var err error
	if f.ra != nil {
		f.ra.Close()
	}
	if f.gz != nil {
		err = f.gz.Close()
	}
	if f.closer != nil {
		if cerr := f.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
