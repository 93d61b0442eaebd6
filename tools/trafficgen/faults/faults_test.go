package faults

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// readBytes parses capture bytes.
func readBytes(t *testing.T, b []byte) *Capture {
	t.Helper()
	c, err := ReadCapture(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("reading capture: %v", err)
	}
	return c
}

// applySpecs applies the fault specs to a capture given as bytes and
// returns the output bytes and the log.
func applySpecs(t *testing.T, in []byte, specs ...string) ([]byte, []*Entry) {
	t.Helper()
	c := readBytes(t, in)
	var parsed []Spec
	for _, s := range specs {
		sp, err := ParseSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, sp)
	}
	entries, err := Apply(c, parsed, Options{})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	out, err := c.Bytes()
	if err != nil {
		t.Fatalf("writing: %v", err)
	}
	return out, entries
}

// checkChecksums verifies the IPv4 header and TCP checksums of every TCP
// packet with gopacket's checksum code.
func checkChecksums(t *testing.T, c *Capture) {
	t.Helper()
	for i, p := range c.Packets {
		pk := gopacket.NewPacket(p.Data, c.LinkType, gopacket.Default)
		if el := pk.ErrorLayer(); el != nil {
			t.Errorf("packet %d: decode error: %v", i+1, el.Error())
			continue
		}
		tcp, _ := pk.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil {
			t.Errorf("packet %d: no TCP layer", i+1)
			continue
		}
		if ip4, ok := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
			if s := gopacket.FoldChecksum(gopacket.ComputeChecksum(ip4.Contents, 0)); s != 0 {
				t.Errorf("packet %d: bad IPv4 header checksum", i+1)
			}
			if err := tcp.SetNetworkLayerForChecksum(ip4); err != nil {
				t.Fatal(err)
			}
		} else if ip6, ok := pk.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
			if err := tcp.SetNetworkLayerForChecksum(ip6); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("packet %d: no IP layer", i+1)
			continue
		}
		err, res := tcp.VerifyChecksum()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Valid {
			t.Errorf("packet %d: TCP checksum %#04x, want %#04x", i+1, res.Actual, res.Correct)
		}
	}
}

// crcKey names a frame.
type crcKey struct {
	conn  int
	dir   Dir
	index int
}

// badCRCs returns the frames whose CRC32-C does not match.
func badCRCs(c *Capture) []crcKey {
	a := analyze(c, []uint16{6650, 16650})
	var bad []crcKey
	for _, cn := range a.conns {
		for d, st := range cn.streams {
			for _, f := range st.frames {
				if !f.hasChecksum {
					continue
				}
				stored := binary.BigEndian.Uint32(st.data[f.checksumOff:])
				if crc32.Checksum(st.data[f.checksumOff+4:f.end()], castagnoli()) != stored {
					bad = append(bad, crcKey{cn.id, Dir(d), f.index})
				}
			}
		}
	}
	return bad
}

// diffPos returns the positions where a and b differ (same length).
func diffPos(t *testing.T, a, b []byte) []int {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths differ: %d, %d", len(a), len(b))
	}
	var out []int
	for i := range a {
		if a[i] != b[i] {
			out = append(out, i)
		}
	}
	return out
}

// changedPackets returns the IDs of packets whose bytes differ; both
// captures must have the same packets.
func changedPackets(t *testing.T, in, out *Capture) []int {
	t.Helper()
	if len(in.Packets) != len(out.Packets) {
		t.Fatalf("packet count changed: %d -> %d", len(in.Packets), len(out.Packets))
	}
	var ids []int
	for i := range in.Packets {
		if !bytes.Equal(in.Packets[i].Data, out.Packets[i].Data) {
			ids = append(ids, i+1)
		}
		if !in.Packets[i].Info.Timestamp.Equal(out.Packets[i].Info.Timestamp) {
			t.Errorf("packet %d: timestamp changed", i+1)
		}
	}
	return ids
}

// tcpSegment returns the TCP header and payload with the checksum zeroed.
func tcpSegment(c *Capture, p *Packet) []byte {
	v := parse(c.LinkType, p.Data)
	if !v.ok {
		return nil
	}
	s := bytes.Clone(p.Data[v.l4 : v.pay+v.capLen])
	s[16], s[17] = 0, 0
	return s
}

func TestFaults(t *testing.T) {
	eth := synthCapture(t, layers.LinkTypeEthernet)
	sll2 := synthCapture(t, layers.LinkTypeLinuxSLL2)
	raw := synthCapture(t, layers.LinkTypeRaw)
	tests := []struct {
		name  string
		in    []byte
		specs []string
		// lossless faults keep every frame's CRC32-C valid.
		lossless bool
		problems []string
		check    func(t *testing.T, in, out *Capture, es []*Entry)
	}{
		{
			name: "drop SEND by frame", in: eth, specs: []string{"drop:type=SEND,nth=1"},
			problems: []string{ProblemBytesLost},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				checkDropped(t, in, out, e.Packet)
				if e.FrameType != "SEND" || e.FrameIndex != 3 || e.Conn != 1 || e.Dir != "c2s" {
					t.Errorf("entry = %+v", e)
				}
				if len(e.FramesDestroyed) != 1 || e.FramesDestroyed[0].Lost != "absent" || len(e.MayProblems) != 0 {
					t.Errorf("destroyed = %+v, may %v", e.FramesDestroyed, e.MayProblems)
				}
			},
		},
		{
			name: "drop pure ACK by packet number", in: eth, specs: []string{"drop:packet=3"},
			problems: []string{}, lossless: true,
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				checkDropped(t, in, out, 3)
				if es[0].Bytes != 0 || es[0].OutPacket != 0 {
					t.Errorf("entry %+v", es[0])
				}
			},
		},
		{
			name: "drop second half of a split SEND by offset", in: eth, specs: []string{"drop:conn=1,dir=c2s,offset=200"},
			problems: []string{ProblemBytesLost},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				// Its header and command were captured: pulsarscope names it.
				if len(e.FramesDestroyed) != 1 || e.FramesDestroyed[0].Lost != "damaged" || !slices.Contains(e.MayProblems, ProblemBytesSkipped) {
					t.Errorf("entry = %+v", e)
				}
			},
		},
		{
			name: "reorder SEND after the next data packet", in: eth, specs: []string{"reorder:type=SEND,nth=2"},
			lossless: true, problems: []string{},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				if len(out.Packets) != len(in.Packets) {
					t.Fatal("packet count changed")
				}
				if e.OutPacket <= e.Packet {
					t.Fatalf("packet %d not moved later (out %d)", e.Packet, e.OutPacket)
				}
				want := slices.Clone(in.Packets)
				moved := want[e.Packet-1]
				want = slices.Delete(want, e.Packet-1, e.Packet)
				want = slices.Insert(want, e.OutPacket-1, moved)
				for i, p := range out.Packets {
					if !bytes.Equal(p.Data, want[i].Data) {
						t.Errorf("output packet %d is not input packet %d", i+1, want[i].ID)
					}
					if want[i] != moved && !p.Info.Timestamp.Equal(want[i].Info.Timestamp) {
						t.Errorf("timestamp of output packet %d changed", i+1)
					}
					if i > 0 && p.Info.Timestamp.Before(out.Packets[i-1].Info.Timestamp) {
						t.Errorf("time goes back at output packet %d", i+1)
					}
				}
				if got, want := Connections(out, Options{}), Connections(in, Options{}); !slices.Equal(got, want) {
					t.Errorf("frames changed: %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "duplicate SEND", in: eth, specs: []string{"duplicate:type=SEND,nth=3"},
			lossless: true, problems: []string{},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				if len(out.Packets) != len(in.Packets)+1 || len(e.OutPackets) != 2 {
					t.Fatalf("no copy: %+v", e)
				}
				a, b := out.Packets[e.OutPackets[0]-1], out.Packets[e.OutPackets[1]-1]
				if !bytes.Equal(a.Data, b.Data) || e.OutPackets[1] != e.OutPackets[0]+1 {
					t.Errorf("copy differs or is misplaced")
				}
			},
		},
		{
			name: "cut-start inside SEND 2", in: eth, specs: []string{"cut-start:conn=1,dir=c2s,type=SEND,nth=2,into=10"},
			problems: []string{ProblemBytesSkipped},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				ia, oa := analyze(in, []uint16{6650}), analyze(out, []uint16{6650})
				// conn 2 is untouched; conn 1 is now the second connection.
				if len(oa.conns) != 2 || oa.conns[0].cport() != 40002 || e.OutConn != 2 {
					t.Fatalf("connections: %+v, out_conn %d", oa.conns, e.OutConn)
				}
				inSt, outSt := ia.conns[0].streams[C2S], oa.conns[1].streams[C2S]
				f := inSt.frames[3]
				if !bytes.Equal(outSt.data, inSt.data[f.off+10:]) {
					t.Errorf("c2s stream does not start 10 bytes into SEND 2")
				}
				if e.OutStreamOffset == nil || *e.OutStreamOffset != 0 {
					t.Errorf("out_stream_offset = %v", e.OutStreamOffset)
				}
				if oa.conns[1].streams[C2S].synSeen {
					t.Error("handshake still there")
				}
				// Packets of conn 2 are all there, unchanged.
				var want, got [][]byte
				for i, p := range in.Packets {
					if ia.segs[i].cport() == 40002 {
						want = append(want, p.Data)
					}
				}
				for i, p := range out.Packets {
					if oa.segs[i].cport() == 40002 {
						got = append(got, p.Data)
					}
				}
				if !slices.EqualFunc(want, got, bytes.Equal) {
					t.Error("conn 2 changed")
				}
			},
		},
		{
			name: "corrupt SEND producer name", in: eth, specs: []string{"corrupt-payload:type=SEND,nth=1"},
			problems: []string{ProblemChecksumMismatch},
			check:    checkCorrupt(crcKey{1, C2S, 3}),
		},
		{
			name: "corrupt split SEND payload", in: eth, specs: []string{"corrupt-payload:type=SEND,nth=2,at=payload"},
			problems: []string{ProblemChecksumMismatch},
			check:    checkCorrupt(crcKey{1, C2S, 4}),
		},
		{
			name: "corrupt MESSAGE with broker entry metadata", in: eth, specs: []string{"corrupt-payload:conn=2,dir=s2c,type=MESSAGE,nth=2,at=metadata"},
			problems: []string{ProblemChecksumMismatch},
			check:    checkCorrupt(crcKey{2, S2C, 3}),
		},
		{
			name: "corrupt on SLL2", in: sll2, specs: []string{"corrupt-payload:type=SEND,nth=4"},
			problems: []string{ProblemChecksumMismatch},
			check:    checkCorrupt(crcKey{1, C2S, 6}),
		},
		{
			name: "bad totalSize", in: eth, specs: []string{"bad-totalsize:type=SEND,nth=3"},
			problems: []string{ProblemBytesSkipped, ProblemFrameTooLarge},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				e := es[0]
				ids := changedPackets(t, in, out)
				if len(ids) != 1 || ids[0] != e.Packet {
					t.Fatalf("changed packets %v, want [%d]", ids, e.Packet)
				}
				p := out.Packets[e.Packet-1]
				v := parse(out.LinkType, p.Data)
				pos := diffPos(t, in.Packets[e.Packet-1].Data, p.Data)
				for _, i := range pos {
					if i != v.l4+16 && i != v.l4+17 && (i < v.pay || i >= v.pay+4) {
						t.Errorf("byte %d changed", i)
					}
				}
				if binary.BigEndian.Uint32(p.Data[v.pay:]) != 0x40000000 {
					t.Errorf("totalSize not overwritten")
				}
			},
		},
		{
			name: "port rewrite", in: eth, specs: []string{"port-rewrite:to=7777"},
			lossless: true, problems: []string{},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				if !slices.Equal(es[0].NeedsFlags, []string{"--port", "7777"}) {
					t.Errorf("needs_flags %v", es[0].NeedsFlags)
				}
				for i, p := range out.Packets {
					v, iv := parse(out.LinkType, p.Data), parse(in.LinkType, in.Packets[i].Data)
					for _, pos := range diffPos(t, in.Packets[i].Data, p.Data) {
						if pos < v.l4 || pos > v.l4+3 && pos != v.l4+16 && pos != v.l4+17 {
							t.Errorf("packet %d: byte %d changed", i+1, pos)
						}
					}
					if iv.dst.Port() == 6650 && v.dst.Port() != 7777 || iv.src.Port() == 6650 && v.src.Port() != 7777 {
						t.Errorf("packet %d: port not rewritten", i+1)
					}
				}
			},
		},
		{name: "ipv6 loopback on Ethernet", in: eth, specs: []string{"ipv6"}, lossless: true, problems: []string{}, check: checkIPv6("::1")},
		{name: "ipv6 mapped on SLL2", in: sll2, specs: []string{"ipv6:mode=mapped"}, lossless: true, problems: []string{}, check: checkIPv6("::ffff:127.0.0.1")},
		{name: "ipv6 ula on raw IP", in: raw, specs: []string{"ipv6:mode=ula"}, lossless: true, problems: []string{}, check: checkIPv6("fd70:7363:6f70::7f00:1")},
		{name: "vlan on Ethernet", in: eth, specs: []string{"vlan:id=42"}, lossless: true, problems: []string{}, check: checkVLAN(42)},
		{name: "vlan on SLL2", in: sll2, specs: []string{"vlan"}, lossless: true, problems: []string{}, check: checkVLAN(100)},
		{
			name: "pcapng", in: sll2, specs: []string{"pcapng"}, lossless: true, problems: []string{},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				if out.Format != FormatPcapng || out.LinkType != in.LinkType {
					t.Errorf("format %s link %v", out.Format, out.LinkType)
				}
				if ids := changedPackets(t, in, out); len(ids) != 0 {
					t.Errorf("packets changed: %v", ids)
				}
			},
		},
		{
			name: "ipv6 vlan pcapng combined", in: eth, specs: []string{"ipv6", "vlan:id=7", "pcapng"}, lossless: true, problems: []string{},
			check: func(t *testing.T, in, out *Capture, es []*Entry) {
				checkIPv6("::1")(t, in, out, es)
				if out.Format != FormatPcapng {
					t.Error("not pcapng")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, es := applySpecs(t, tc.in, tc.specs...)
			again, _ := applySpecs(t, tc.in, tc.specs...)
			if !bytes.Equal(out, again) {
				t.Error("output is not deterministic")
			}
			in, oc := readBytes(t, tc.in), readBytes(t, out)
			checkChecksums(t, oc)
			if bad := badCRCs(oc); tc.lossless && len(bad) != 0 {
				t.Errorf("frames with bad CRC: %v", bad)
			}
			if got := Problems(es); !slices.Equal(got, tc.problems) {
				t.Errorf("problems %v, want %v", got, tc.problems)
			}
			for _, e := range es {
				if e.Detail == "" || e.Kind == "" {
					t.Errorf("entry without kind or detail: %+v", e)
				}
			}
			tc.check(t, in, oc, es)
		})
	}
}

// cport returns the client port of a connection.
func (c *conn) cport() uint16 { return c.client.Port() }

// cport returns the client port of a segment's connection.
func (s *seg) cport() uint16 { return s.conn.client.Port() }

// checkDropped checks that out is in without packet n (1-based).
func checkDropped(t *testing.T, in, out *Capture, n int) {
	t.Helper()
	want := slices.Delete(slices.Clone(in.Packets), n-1, n)
	if len(out.Packets) != len(want) {
		t.Fatalf("%d packets, want %d", len(out.Packets), len(want))
	}
	for i, p := range out.Packets {
		if !bytes.Equal(p.Data, want[i].Data) || !p.Info.Timestamp.Equal(want[i].Info.Timestamp) {
			t.Errorf("output packet %d is not input packet %d", i+1, want[i].ID)
		}
	}
}

// checkCorrupt checks that exactly one payload byte and the TCP checksum
// of the targeted packets changed and that only frame k's CRC is bad.
func checkCorrupt(k crcKey) func(t *testing.T, in, out *Capture, es []*Entry) {
	return func(t *testing.T, in, out *Capture, es []*Entry) {
		t.Helper()
		e := es[0]
		if e.Conn != k.conn || e.Dir != k.dir.String() || e.FrameIndex != k.index {
			t.Errorf("entry targets conn %d %s frame %d", e.Conn, e.Dir, e.FrameIndex)
		}
		ids := changedPackets(t, in, out)
		if len(ids) != 1 || ids[0] != e.Packet {
			t.Fatalf("changed packets %v, want [%d]", ids, e.Packet)
		}
		p := out.Packets[e.Packet-1]
		v := parse(out.LinkType, p.Data)
		pos := diffPos(t, in.Packets[e.Packet-1].Data, p.Data)
		var inPayload []int
		for _, i := range pos {
			switch {
			case i >= v.pay:
				inPayload = append(inPayload, i)
			case i != v.l4+16 && i != v.l4+17:
				t.Errorf("header byte %d changed", i)
			}
		}
		if len(inPayload) != 1 {
			t.Errorf("changed payload bytes at %v, want one", inPayload)
		}
		if bad := badCRCs(out); !slices.Equal(bad, []crcKey{k}) {
			t.Errorf("bad CRCs %v, want %v", bad, k)
		}
		if bad := badCRCs(in); len(bad) != 0 {
			t.Errorf("input has bad CRCs %v", bad)
		}
	}
}

// checkIPv6 checks that every packet is IPv6 with the given address and
// an unchanged TCP segment (checksum aside).
func checkIPv6(addr string) func(t *testing.T, in, out *Capture, es []*Entry) {
	want := netip.MustParseAddr(addr)
	return func(t *testing.T, in, out *Capture, es []*Entry) {
		t.Helper()
		if len(out.Packets) != len(in.Packets) {
			t.Fatal("packet count changed")
		}
		for i, p := range out.Packets {
			v := parse(out.LinkType, p.Data)
			if !v.v6 || v.src.Addr() != want || v.dst.Addr() != want {
				t.Errorf("packet %d: %v -> %v", i+1, v.src, v.dst)
			}
			if !bytes.Equal(tcpSegment(out, p), tcpSegment(in, in.Packets[i])) {
				t.Errorf("packet %d: TCP segment changed", i+1)
			}
			if p.Info.Length != len(p.Data) {
				t.Errorf("packet %d: length %d, data %d", i+1, p.Info.Length, len(p.Data))
			}
		}
		if got, want := Connections(out, Options{}), Connections(in, Options{}); len(got) != len(want) || got[0].FramesC2S != want[0].FramesC2S {
			t.Errorf("connections %+v, want %+v", got, want)
		}
	}
}

// checkVLAN checks the 802.1Q tag and that the IP packets are unchanged.
func checkVLAN(id uint16) func(t *testing.T, in, out *Capture, es []*Entry) {
	return func(t *testing.T, in, out *Capture, es []*Entry) {
		t.Helper()
		if out.LinkType != layers.LinkTypeEthernet {
			t.Fatalf("link type %v", out.LinkType)
		}
		for i, p := range out.Packets {
			pk := gopacket.NewPacket(p.Data, out.LinkType, gopacket.Default)
			q, ok := pk.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q)
			if !ok || q.VLANIdentifier != id {
				t.Errorf("packet %d: no VLAN %d tag", i+1, id)
				continue
			}
			iv, ov := parse(in.LinkType, in.Packets[i].Data), parse(out.LinkType, p.Data)
			if !bytes.Equal(in.Packets[i].Data[iv.l3:], p.Data[ov.l3:]) {
				t.Errorf("packet %d: IP packet changed", i+1)
			}
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	for _, s := range []string{"nope", "drop:bogus=1", "drop:packet", "drop:packet=1,packet=2", "vlan:id=1,type=SEND"} {
		if _, err := ParseSpec(s); err == nil {
			t.Errorf("ParseSpec(%q): no error", s)
		}
	}
	eth := synthCapture(t, layers.LinkTypeEthernet)
	for _, s := range []string{
		"drop:packet=999", "drop:conn=9", "corrupt-payload:type=CONNECT", "reorder:packet=1,type=SEND",
		"reorder:type=SEND,nth=1", // acknowledged before the next data packet: impossible on a wire
		"cut-start:frame=1,into=0", "bad-totalsize:value=-1", "port-rewrite:from=1234", "vlan:id=5000",
	} {
		sp, err := ParseSpec(s)
		if err != nil {
			t.Fatalf("ParseSpec(%q): %v", s, err)
		}
		if _, err := Apply(readBytes(t, eth), []Spec{sp}, Options{}); err == nil {
			t.Errorf("Apply(%q): no error", s)
		} else if !strings.Contains(err.Error(), s) {
			t.Errorf("Apply(%q): error %q lacks the spec", s, err)
		}
	}
}

func TestWalker(t *testing.T) {
	c := readBytes(t, synthCapture(t, layers.LinkTypeEthernet))
	got := Connections(c, Options{})
	if len(got) != 2 || got[0].FramesC2S != 6 || got[0].FramesS2C != 6 || got[1].FramesC2S != 2 || got[1].FramesS2C != 4 {
		t.Fatalf("connections %+v", got)
	}
	if !got[0].Handshake || got[1].Client != "127.0.0.1:40002" || got[1].Server != "127.0.0.1:6650" {
		t.Errorf("connections %+v", got)
	}
}

func TestPcapngInput(t *testing.T) {
	ng, _ := applySpecs(t, synthCapture(t, layers.LinkTypeLinuxSLL2), "pcapng")
	out, es := applySpecs(t, ng, "corrupt-payload:type=SEND,nth=2", "port-rewrite:to=7000")
	oc := readBytes(t, out)
	if oc.Format != FormatPcapng || oc.LinkType != layers.LinkTypeLinuxSLL2 || len(es) != 2 {
		t.Fatalf("format %s, link %v", oc.Format, oc.LinkType)
	}
	checkChecksums(t, oc)
	if bad := badCRCs(oc); !slices.Equal(bad, []crcKey{{1, C2S, 4}}) {
		t.Errorf("bad CRCs %v", bad)
	}
}

func TestAdjustCounts(t *testing.T) {
	base := []byte(`{"file":"x.pcap","packets":9,"connections":2,"frames":{"c2s":{"SEND":3,"ACK":1},"s2c":{"MESSAGE":2}},"frames_total":6,` +
		`"payload_frames":5,"checksummed_payload_frames":5,"broker_entry_metadata_frames":2,"batch_entries":40,"chunk_frames":1,"answered":{"SEND":3}}`)
	destroyed := []FrameRef{
		{Dir: "c2s", Type: "SEND", payload: true, checksum: true, batch: 10, chunk: true},
		{Dir: "s2c", Type: "MESSAGE", payload: true, checksum: true, bem: true, batch: 10},
	}
	x := &Expect{File: "y.pcap", Base: "x.pcap", Command: "c", Entries: []*Entry{{Kind: KindDrop, FramesDestroyed: destroyed, ExpectProblems: []string{ProblemBytesLost}}}, BaseExpect: base}
	b, err := x.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"file":"y.pcap","base":"x.pcap","command":"c","expect_problems":["bytes-lost"],"faults":[{"kind":"drop","spec":"",` +
		`"frames_destroyed":[{"conn":0,"dir":"c2s","frame_index":0,"frame_type":"SEND","stream_offset":0,"lost":""},` +
		`{"conn":0,"dir":"s2c","frame_index":0,"frame_type":"MESSAGE","stream_offset":0,"lost":""}],"expect_problems":["bytes-lost"],"detail":""}],` +
		`"connections":2,"frames":{"c2s":{"ACK":1,"SEND":2},"s2c":{"MESSAGE":1}},"frames_total":4,"payload_frames":3,"checksummed_payload_frames":3,` +
		`"broker_entry_metadata_frames":1,"batch_entries":20,"chunk_frames":0,"frames_destroyed_total":2,"counts_note":"counts of the base minus the frames_destroyed of the faults"}`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
}
