package decode

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Worst-case expansion ratios, used to bound output buffers by the bytes
// actually received rather than by a claimed size.
const (
	lz4MaxRatio    = 255
	zlibMaxRatio   = 1032
	snappyMaxRatio = 64
)

// decompress returns the uncompressed payload of f, reporting problems.
// ok is false when there is no trustworthy uncompressed payload.
func (d *Decoder) decompress(f *Frame, md *pulsarapi.MessageMetadata) (out []byte, ok bool) {
	codec := md.GetCompression()
	src := f.Payload
	declared := int64(md.GetUncompressedSize())
	hasDeclared := md.UncompressedSize != nil
	if codec == pulsarapi.CompressionType_NONE {
		if hasDeclared && declared != int64(len(src)) {
			f.addProblem(CodeUncompressedSizeMismatch, "uncompressed_size %d but the uncompressed payload has %d bytes", declared, len(src))
		}
		return src, true
	}
	limit := int64(d.opts.MaxDecompressed)
	if hasDeclared && declared > limit {
		f.addProblem(CodeDecompressionLimit, "%s payload declares uncompressed_size %d, over the limit of %d", codec, declared, limit)
		return nil, false
	}
	if !hasDeclared {
		f.addProblem(CodeUncompressedSizeMismatch, "%s payload without uncompressed_size", codec)
	}

	var err error
	switch codec {
	case pulsarapi.CompressionType_LZ4:
		out, err = d.lz4(src, declared, hasDeclared, limit)
	case pulsarapi.CompressionType_ZLIB:
		out, err = d.zlibDecode(src, declared, limit)
	case pulsarapi.CompressionType_ZSTD:
		out, err = d.zstdDecode(src, limit)
	case pulsarapi.CompressionType_SNAPPY:
		out, err = d.snappyDecode(src, limit)
	default:
		f.addProblem(CodeUnknownCompression, "compression %d not supported", int32(codec))
		return nil, false
	}
	switch {
	case err == nil:
	case isLimit(err):
		f.addProblem(CodeDecompressionLimit, "%s payload: %v", codec, err)
		return nil, false
	case err != nil:
		f.addProblem(CodeDecompressionFailed, "%s payload of %d bytes: %v", codec, len(src), err)
		return nil, false
	}
	if hasDeclared && int64(len(out)) != declared {
		f.addProblem(CodeUncompressedSizeMismatch, "uncompressed_size %d but %s decompressed to %d bytes", declared, codec, len(out))
	}
	return out, true
}

type limitError struct{ limit int64 }

// isLimit reports whether err is a *limitError (kept out of line: the
// target of errors.As escapes, an allocation per call).
func isLimit(err error) bool {
	var lim *limitError
	return errors.As(err, &lim)
}

func (e *limitError) Error() string {
	return fmt.Sprintf("output exceeds the decompression limit of %d bytes", e.limit)
}

// outBuf returns an empty buffer of capacity n: the reused one unless
// frames are retained.
func (d *Decoder) outBuf(n int) []byte {
	if d.opts.Retain {
		return make([]byte, 0, n)
	}
	if cap(d.fb.dbuf) < n {
		d.fb.dbuf = make([]byte, 0, n)
	}
	return d.fb.dbuf[:0]
}

// keep records a grown buffer for reuse.
func (d *Decoder) keep(b []byte) {
	if !d.opts.Retain && cap(b) > cap(d.fb.dbuf) {
		d.fb.dbuf = b[:0]
	}
}

func (d *Decoder) lz4(src []byte, declared int64, hasDeclared bool, limit int64) ([]byte, error) {
	n := int64(len(src))*lz4MaxRatio + 16
	if hasDeclared && declared < n {
		n = declared
	}
	if n > limit {
		n = limit
	}
	buf := d.outBuf(int(n))[:n]
	m, err := lz4.UncompressBlock(src, buf)
	if err != nil {
		return nil, fmt.Errorf("lz4 block: %w", err)
	}
	return buf[:m], nil
}

func (d *Decoder) zlibDecode(src []byte, declared, limit int64) ([]byte, error) {
	r := bytes.NewReader(src)
	var err error
	if d.zlib == nil {
		d.zlib, err = zlib.NewReader(r)
	} else {
		err = d.zlib.(zlib.Resetter).Reset(r, nil)
	}
	if err != nil {
		d.zlib = nil
		return nil, fmt.Errorf("zlib header: %w", err)
	}
	bound := int64(len(src))*zlibMaxRatio + 64
	if bound > limit+1 {
		bound = limit + 1
	}
	hint := declared + 1
	if hint <= 1 || hint > bound {
		hint = min(bound, 4*int64(len(src))+64)
	}
	out, err := readBounded(d.zlib, d.outBuf(int(hint)), bound)
	d.keep(out)
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if int64(len(out)) > limit {
		return nil, &limitError{limit}
	}
	return out, nil
}

// readBounded reads r to EOF into buf, growing it as data arrives, but
// never past max bytes (a longer stream is cut at max+0 and returned).
func readBounded(r io.Reader, buf []byte, max int64) ([]byte, error) {
	for int64(len(buf)) < max {
		if len(buf) == cap(buf) {
			grow := int64(cap(buf))
			if grow < 512 {
				grow = 512
			}
			if int64(cap(buf))+grow > max {
				grow = max - int64(cap(buf))
			}
			buf = append(buf[:cap(buf)], make([]byte, grow)...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), max)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func (d *Decoder) zstdDecode(src []byte, limit int64) ([]byte, error) {
	if d.zstd == nil {
		dec, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)),
			zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			return nil, fmt.Errorf("zstd init: %w", err)
		}
		d.zstd = dec
	}
	out, err := d.zstd.DecodeAll(src, d.outBuf(0))
	d.keep(out)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, &limitError{limit}
	}
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if int64(len(out)) > limit {
		return nil, &limitError{limit}
	}
	return out, nil
}

func (d *Decoder) snappyDecode(src []byte, limit int64) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy header: %w", err)
	}
	if int64(n) > limit {
		return nil, &limitError{limit}
	}
	if int64(n) > int64(len(src))*snappyMaxRatio+64 {
		return nil, fmt.Errorf("snappy header claims %d bytes from %d, impossible", n, len(src))
	}
	buf := d.outBuf(n)[:n]
	out, err := snappy.Decode(buf, src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return out, nil
}
