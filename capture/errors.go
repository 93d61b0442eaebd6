package capture

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is on the *Error returned by Open,
// OpenReader and Source.Next.
var (
	// ErrEmpty means the input holds no bytes at all.
	ErrEmpty = errors.New("empty file")
	// ErrNotCapture means the input is neither pcap nor pcapng (nor gzip of them).
	ErrNotCapture = errors.New("not a pcap or pcapng capture")
	// ErrTruncated means the input ends in the middle of a header or record.
	// Every complete packet before it was delivered.
	ErrTruncated = errors.New("truncated capture (last record incomplete)")
	// ErrUnknownLinkType means the capture's link type cannot be decoded.
	ErrUnknownLinkType = errors.New("unsupported link type")
	// ErrIsDirectory means the path names a directory.
	ErrIsDirectory = errors.New("is a directory")
	// ErrCorrupt means a record header is invalid (the rest of the file
	// cannot be trusted).
	ErrCorrupt = errors.New("corrupt capture")
)

// Error is the error type of this package: it names the input (file path,
// or "-" for stdin) and, when the error happened while reading packets, the
// number of the record that failed (1-based; 0 when not reading packets).
type Error struct {
	File   string
	Packet int
	Err    error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Packet > 0 {
		return fmt.Sprintf("capture %s: record %d: %v", e.File, e.Packet, e.Err)
	}
	return fmt.Sprintf("capture %s: %v", e.File, e.Err)
}

// Unwrap returns the underlying error (a sentinel above, a *fs.PathError, ...).
func (e *Error) Unwrap() error { return e.Err }
