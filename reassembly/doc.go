// Package reassembly turns TCP segments into the ordered byte streams of
// Pulsar connections, delivered to a Handler (types.go). It is the
// project's own TCP reassembler (docs/architecture.md says why not
// gopacket's), with what a protocol inspector needs:
//
//   - roles: the server is the side on a Pulsar port (Options.Ports,
//     default 6650); TLS ports (Options.TLSPorts, default 6651) give
//     connections with Conn.TLS set, which are opened and closed but whose
//     bytes are only counted (Stats.TLSBytes), never delivered; with
//     Options.Detect, connections on other ports are accepted by content;
//   - connections whose handshake is not in the capture are decoded from
//     their first captured byte;
//   - exact gaps: bytes never captured, or given up on (the peer
//     acknowledged past them, GapTimeout, buffer limits, end of input), are
//     reported with their size and reason via Handler.Gap or
//     GapReasonHandler; bytes that waited behind a hole keep their own
//     packets' times;
//   - TCP port reuse: a SYN with a new initial sequence number on an open
//     or recently closed 4-tuple starts a new connection (CloseReused for
//     the open one);
//   - retransmissions with other bytes than the first copy are reported
//     (ConflictHandler); the first copy is used;
//   - closing with a reason: FIN, RST, idle (capture time), end of capture,
//     eviction by the connection-table limit, reuse;
//   - counters (Stats).
//
// Everything runs on the goroutine calling Assemble, in capture order.
// Typical use:
//
//	src, err := capture.Open(path)
//	...
//	asm := reassembly.New(handler, reassembly.Options{Detect: decode.Plausible})
//	err = asm.Run(ctx, src) // Assemble for each segment, then FlushAll
//
// Limitations: a hole is declared lost when the peer acknowledges past
// it, which trusts the capture's order (a packet captured after the ACK
// that covers it, as a capture merged from several interfaces may hold, is
// then a retransmission of bytes declared lost). Retransmissions of bytes
// already delivered are compared with the last 8 segments delivered that
// they cover whole (by CRC-32C), not byte by byte with all that came
// before. If a full retransmission of a snaplen-truncated segment follows,
// its bytes still count as lost.
package reassembly
