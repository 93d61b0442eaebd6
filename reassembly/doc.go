// Package reassembly turns TCP segments into the ordered byte streams of
// Pulsar connections, delivered to a Handler (types.go). It wraps
// github.com/gopacket/gopacket/reassembly and adds what a protocol
// inspector needs on top:
//
//   - roles: the server is the side on a Pulsar port (Options.Ports,
//     default 6650); TLS ports (Options.TLSPorts, default 6651) give
//     connections with Conn.TLS set, which are opened and closed but whose
//     bytes are only counted (Stats.TLSBytes), never delivered; with
//     Options.Detect, connections on other ports are accepted by content;
//   - connections whose handshake is not in the capture are decoded from
//     their first captured byte;
//   - exact gaps: bytes never captured, or given up on (GapTimeout, buffer
//     limits, end of input), are reported with their size via Handler.Gap;
//   - closing with a reason: FIN, RST, idle (capture time), end of capture,
//     eviction by the connection-table limit;
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
// Limitations: after a RST the connection is closed at once (Close with
// CloseRST), but its table entry lingers until IdleTimeout, so a new
// connection on the same 4-tuple within IdleTimeout is not seen. Bytes
// missing from snaplen-truncated segments (capture.Packet.Missing) are
// reported as Gaps in place (AssemblePacket, AssembleTruncated); if a full
// retransmission of such a segment follows, its bytes still count as lost.
package reassembly
