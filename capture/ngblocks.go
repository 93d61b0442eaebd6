package capture

import (
	"encoding/binary"
	"fmt"
	"io"
)

// ngBlockFilter passes a pcapng stream through to pcapgo block by block,
// leaving out packet blocks whose captured length claims more bytes than
// the block holds: pcapgo would read the following blocks as that
// packet's data and end the file as truncated, losing everything after
// it. The block's total length (checked by pcapgo too) says where the next
// block starts, so reading goes on there. A block whose total length is
// itself impossible is passed on: the file's structure is broken and pcapgo
// says so.
type ngBlockFilter struct {
	r     io.Reader
	order binary.ByteOrder // of the current section
	left  int64            // bytes of the current block still to pass on
	buf   []byte           // a block's header being passed on
	off   int64            // file offset of the next block
	// Skipped counts the packet blocks left out; FirstSkipped is the file
	// offset of the first.
	Skipped      int64
	FirstSkipped int64
}

// errNgBlockCut is the end of the file inside a packet block left out. It
// wraps io.ErrUnexpectedEOF (a truncated file) without being it: pcapgo
// takes a bare io.ErrUnexpectedEOF at a block boundary for the file's end.
var errNgBlockCut = fmt.Errorf("%w: inside a pcapng packet block", io.ErrUnexpectedEOF)

const (
	ngSectionHeader  = 0x0a0d0d0a
	ngEnhancedPacket = 6
	ngSimplePacket   = 3
	ngObsoletePacket = 2
)

func newNgBlockFilter(r io.Reader) *ngBlockFilter {
	return &ngBlockFilter{r: r, order: binary.LittleEndian, FirstSkipped: -1}
}

func (f *ngBlockFilter) Read(p []byte) (int, error) {
	for {
		if len(f.buf) > 0 {
			n := copy(p, f.buf)
			f.buf = f.buf[n:]
			return n, nil
		}
		if f.left > 0 {
			if int64(len(p)) > f.left {
				p = p[:f.left]
			}
			n, err := f.r.Read(p)
			f.left -= int64(n)
			return n, err
		}
		if err := f.nextBlock(); err != nil {
			return 0, err
		}
	}
}

// nextBlock reads the next block's header and decides to pass the block on
// (f.buf, f.left) or leave it out.
func (f *ngBlockFilter) nextBlock() error {
	var hdr [28]byte
	if n, err := io.ReadFull(f.r, hdr[:8]); err != nil {
		if n > 0 { // a cut block: pass it on, pcapgo reports the truncation
			f.buf = append(f.buf[:0], hdr[:n]...)
			return nil
		}
		return err
	}
	typ := binary.LittleEndian.Uint32(hdr[:4])
	if typ == ngSectionHeader {
		// The byte-order magic follows the length: read it to know the
		// section's order.
		if n, err := io.ReadFull(f.r, hdr[8:12]); err != nil {
			f.buf = append(f.buf[:0], hdr[:8+n]...)
			return nil
		}
		if binary.BigEndian.Uint32(hdr[8:12]) == 0x1a2b3c4d {
			f.order = binary.BigEndian
		} else {
			f.order = binary.LittleEndian
		}
		return f.pass(hdr[:12])
	}
	typ = f.order.Uint32(hdr[:4])
	total := int64(f.order.Uint32(hdr[4:8]))
	var capOff int
	switch typ {
	case ngEnhancedPacket:
		capOff = 20 // interface, timestamp high and low, then captured length
	case ngObsoletePacket:
		capOff = 20 // interface and drops (2+2), timestamp high and low, captured length
	case ngSimplePacket:
		capOff = -1 // original length only: the block holds min(it, the block)
	}
	if capOff <= 0 || total < 12 || total%4 != 0 { // not a packet block with a captured length, or broken
		return f.pass(hdr[:8])
	}
	if n, err := io.ReadFull(f.r, hdr[8:capOff+4]); err != nil {
		f.buf = append(f.buf[:0], hdr[:8+n]...)
		return nil
	}
	// Block: 8 header bytes, the fields up to the captured length, the
	// data padded to 4 bytes, options, and the trailing length (4).
	room := total - int64(capOff) - 4 - 4
	if caplen := int64(f.order.Uint32(hdr[capOff : capOff+4])); caplen > room && total >= int64(capOff)+8 {
		rest := total - int64(capOff) - 4
		n, err := io.CopyN(io.Discard, f.r, rest)
		if err == io.EOF {
			return errNgBlockCut // the file ends inside the block: truncated
		}
		if err != nil {
			return err
		}
		f.Skipped++
		if f.FirstSkipped < 0 {
			f.FirstSkipped = f.off
		}
		f.off += int64(capOff) + 4 + n
		return nil
	}
	return f.pass(hdr[:capOff+4])
}

// pass passes on the block whose first bytes, hdr, were read: the rest of
// it is read through.
func (f *ngBlockFilter) pass(hdr []byte) error {
	total := int64(f.order.Uint32(hdr[4:8]))
	f.buf = append(f.buf[:0], hdr...)
	f.left = max(0, total-int64(len(hdr)))
	f.off += int64(len(hdr)) + f.left
	return nil
}
