// Package decode turns the reassembled byte streams of Pulsar connections
// into decoded, validated frames and stream events.
//
//   - Decoder / Decode: one whole frame (from the totalSize field on): sizes,
//     BaseCommand, and for SEND and MESSAGE the optional 0x0e02 broker entry
//     metadata, the 0x0e01 CRC32-C, MessageMetadata, payload, decompression
//     (LZ4 block, ZLIB, ZSTD, SNAPPY block; bounded) and batch entries.
//   - StreamDecoder: a reassembly.Handler that frames each direction of
//     each connection, resynchronises after gaps and untrustworthy sizes,
//     and accounts for every byte (StreamStats).
//   - CheckFrame / Plausible: does a frame start here (resync, detection).
//   - Redact: a copy of a command with its credentials replaced.
//
// Problems carry stable codes (Code* constants), documented in
// docs/problems.md.
package decode
