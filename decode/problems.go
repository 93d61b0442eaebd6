package decode

import "fmt"

// Problem codes. They are stable; docs/problems.md explains each one.
const (
	CodeChecksumMismatch         = "checksum-mismatch"
	CodeBadMagic                 = "bad-magic"
	CodeFrameTooLarge            = "frame-too-large"
	CodeBadCommandSize           = "bad-command-size"
	CodeBadMetadataSize          = "bad-metadata-size"
	CodeProtobufInvalid          = "protobuf-invalid"
	CodeTooManyElements          = "too-many-elements"
	CodeUnknownCommandType       = "unknown-command-type"
	CodeTypeMismatch             = "type-mismatch"
	CodeMissingRequiredField     = "missing-required-field"
	CodeUnknownFields            = "unknown-fields"
	CodeMissingPayload           = "missing-payload"
	CodeTrailingBytes            = "trailing-bytes"
	CodeBatchCountMismatch       = "batch-count-mismatch"
	CodeBatchMalformed           = "batch-malformed"
	CodeUnknownCompression       = "unknown-compression"
	CodeUncompressedSizeMismatch = "uncompressed-size-mismatch"
	CodeDecompressionFailed      = "decompression-failed"
	CodeDecompressionLimit       = "decompression-limit"
	CodeTruncatedFrame           = "truncated-frame"
	CodeBytesLost                = "bytes-lost"
	// CodeSegmentOutOfWindow: a TCP segment whose sequence number lies more
	// than 2^30 bytes from the next expected byte, ignored.
	CodeSegmentOutOfWindow = "segment-out-of-window"
	// CodeRetransmissionConflict: a TCP retransmission carried other bytes
	// than the copy captured first; the first copy is the one decoded.
	CodeRetransmissionConflict = "retransmission-conflict"
	CodeBytesSkipped           = "bytes-skipped"
	CodeDecoderPanic           = "decoder-panic"
)

// AllCodes lists every problem code the package can emit, in doc order.
func AllCodes() []string {
	return []string{
		CodeChecksumMismatch, CodeBadMagic, CodeFrameTooLarge, CodeBadCommandSize,
		CodeBadMetadataSize, CodeProtobufInvalid, CodeTooManyElements, CodeUnknownCommandType,
		CodeTypeMismatch, CodeMissingRequiredField, CodeUnknownFields,
		CodeMissingPayload, CodeTrailingBytes, CodeBatchCountMismatch,
		CodeBatchMalformed, CodeUnknownCompression, CodeUncompressedSizeMismatch,
		CodeDecompressionFailed, CodeDecompressionLimit, CodeTruncatedFrame,
		CodeBytesLost, CodeSegmentOutOfWindow, CodeRetransmissionConflict, CodeBytesSkipped, CodeDecoderPanic,
	}
}

// HasProblem reports whether ps holds a problem with the given code.
func HasProblem(ps []Problem, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

func (f *Frame) addProblem(code, format string, args ...any) {
	f.Problems = append(f.Problems, Problem{Code: code, Detail: fmt.Sprintf(format, args...)})
}
