package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// Classic pcap records are read by pcapReader rather than by
// pcapgo.Reader.ZeroCopyReadPacketData, which copies every record out of
// the bufio.Reader into a buffer of its own (io.ReadFull): pcapReader
// returns the record where it lies in the bufio.Reader's buffer. Its
// results (data, CaptureInfo, error) are those of pcapgo's, record by
// record (TestPcapReaderMatchesPcapgo, FuzzSource); the 24-byte file
// header is still parsed by pcapgo.NewReader.

const (
	pcapRecordHeaderLen = 16
	// pcapgoEagerReadMax is pcapgo's eagerReadMax (libpcap's
	// MAXIMUM_SNAPLEN): the longest record pcapgo takes whatever the
	// file's snap length (its maxCaptureLength).
	pcapgoEagerReadMax = 262144
)

// errPcapLengthOverflow is pcapgo's error for a record length that does
// not fit in an int (32-bit platforms only).
var errPcapLengthOverflow = errors.New("length from file does not fit in int")

// pcapReader reads the records of a classic pcap stream from br, whose file
// header has been read. The data it returns is a slice of br's buffers (or,
// for a record longer than a buffer, of a buffer of its own) and is only
// valid until the next call to next, unless its buffer is held
// (ReadBuffers.Hold).
type pcapReader struct {
	br        *ReadBuffers
	bigEndian bool
	nanoScale uint32 // 1 for nanosecond files, 1000 for microsecond ones
	snaplen   uint32
	maxCapLen int // pcapgo's maxCaptureLength
	// pending is the length of the record last returned from br's buffer:
	// it is discarded at the start of the next call, not before, so that
	// the bytes stay where they are until then.
	pending int
	// long holds the last record longer than br's buffer.
	long []byte
}

// newPcapReader returns a pcapReader reading the records that follow the
// file header pr has read from br. bigEndian is the byte order of the
// file's magic number.
func newPcapReader(br *ReadBuffers, pr *pcapgo.Reader, bigEndian bool) *pcapReader {
	r := &pcapReader{br: br, bigEndian: bigEndian, nanoScale: 1000, snaplen: pr.Snaplen()}
	if pr.Resolution() == gopacket.TimestampResolutionNanosecond {
		r.nanoScale = 1
	}
	r.maxCapLen = pcapgoEagerReadMax
	if r.snaplen > pcapgoEagerReadMax {
		r.maxCapLen = int(r.snaplen)
	}
	return r
}

func (r *pcapReader) uint32(b []byte) uint32 {
	if r.bigEndian {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// readFullErr is the error io.ReadFull returns after reading n of the
// bytes it wanted, the read having failed with err.
func readFullErr(n int, err error) error {
	if err == nil || err == bufio.ErrBufferFull {
		// Not returned by Peek for a length within its buffer; a reader
		// that never says why it stops must not look like a clean end.
		return io.ErrNoProgress
	}
	if err == io.EOF && n > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// next returns the next record, as pcapgo.Reader.ZeroCopyReadPacketData
// does: io.EOF at the end of the stream (also right after a record header
// whose data is missing altogether, as pcapgo), io.ErrUnexpectedEOF for a
// record cut short, pcapgo's errors for impossible lengths. On an error,
// data is nil.
func (r *pcapReader) next() (data []byte, ci gopacket.CaptureInfo, err error) {
	if r.pending > 0 {
		// Never short: Peek returned these bytes.
		r.br.Discard(r.pending)
		r.pending = 0
	}
	hdr, err := r.br.Peek(pcapRecordHeaderLen)
	if len(hdr) < pcapRecordHeaderLen {
		r.br.Discard(len(hdr)) // consumed, as by pcapgo's io.ReadFull
		return nil, ci, readFullErr(len(hdr), err)
	}
	sec, frac := r.uint32(hdr[0:4]), r.uint32(hdr[4:8])
	// frac*nanoScale wraps in 32 bits, as in pcapgo.
	ci.Timestamp = time.Unix(int64(sec), int64(frac*r.nanoScale)).UTC()
	ci.CaptureLength = int(r.uint32(hdr[8:12]))
	ci.Length = int(r.uint32(hdr[12:16]))
	r.br.Discard(pcapRecordHeaderLen)
	n := ci.CaptureLength
	if n > r.maxCapLen {
		return nil, ci, fmt.Errorf("capture length exceeds snap length: %d > %d", n, r.snaplen)
	}
	if n > ci.Length {
		return nil, ci, fmt.Errorf("capture length exceeds original packet length: %d > %d", n, ci.Length)
	}
	if n < 0 {
		return nil, ci, errPcapLengthOverflow
	}
	if n <= r.br.Size() {
		data, err = r.br.Peek(n)
		if len(data) < n {
			r.br.Discard(len(data))
			return nil, ci, readFullErr(len(data), err)
		}
		r.pending = n
		return data, ci, nil
	}
	data, err = r.readLong(n)
	return data, ci, err
}

// readLong copies a record of n bytes, more than br's buffer holds, into
// r.long. The buffer grows with the bytes actually read (at most doubling),
// never to n up front: n comes from the file and may be a lie as large as
// the snap length. Errors are io.ReadFull's for the whole record.
func (r *pcapReader) readLong(n int) ([]byte, error) {
	buf := r.long[:0]
	for len(buf) < n {
		want := min(n-len(buf), max(len(buf), r.br.Size()))
		if cap(buf)-len(buf) < want {
			nb := make([]byte, len(buf), len(buf)+want)
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r.br, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			r.keepLong(buf)
			return nil, err
		}
	}
	r.keepLong(buf)
	return buf, nil
}

// keepLong keeps buf for the next long record unless it is larger than any
// real packet (pcapgo's limit): a hostile file must not pin gigabytes.
func (r *pcapReader) keepLong(buf []byte) {
	if cap(buf) > pcapgoEagerReadMax {
		r.long = nil
		return
	}
	r.long = buf[:0]
}
