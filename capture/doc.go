// Package capture reads packets from capture files and decodes them down
// to TCP, in pure Go (no cgo, no libpcap).
//
// Reading and decoding are separate: a RawSource delivers link-layer frames
// with their link type (NewFileReader for pcap/pcapng, plain or gzip, a file
// or stdin; later a live AF_PACKET source), a Decoder turns a frame into a
// TCP segment, and a Source combines the two, skipping and counting what is
// not TCP:
//
//	src, err := capture.Open(path) // or "-" for stdin
//	if err != nil { ... }          // *capture.Error: errors.Is(err, capture.ErrEmpty), ...
//	defer src.Close()
//	for {
//		p, err := src.Next(ctx) // p and its bytes are reused by the next call
//		if err == io.EOF { break }
//		if err != nil { ... }   // errors.Is(err, capture.ErrTruncated): all complete records came before
//		use(p.NetFlow, p.TCP, p.Time)
//	}
//
// Supported link types: Ethernet (802.1Q and QinQ tags), Linux SLL and SLL2,
// raw IP (101, 228, 229), BSD loopback (0) and OpenBSD loopback (108); IPv4
// and IPv6. IP fragments are counted, not reassembled. Nothing is
// allocated per packet on the path from file to decoded TCP segment.
package capture
