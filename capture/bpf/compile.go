package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	xbpf "golang.org/x/net/bpf"
)

// Link is the layout of the frames the program runs on.
type Link int

const (
	// Ethernet frames (AF_PACKET SOCK_RAW on Ethernet and loopback
	// devices): EtherType at offset 12, network header at 14. VLAN tags
	// stripped by the NIC are not seen by the program.
	Ethernet Link = iota
	// Network: the frame starts at the IP header (AF_PACKET SOCK_DGRAM,
	// "cooked" capture); IPv4 and IPv6 are told apart by the version nibble.
	Network
)

// Options of Compile.
type Options struct {
	// Snaplen is the number of bytes of a matching packet kept (the
	// program's return value); 0 means 262144.
	Snaplen uint32
	// DropOutgoingOn lists interface indexes whose outgoing packets are
	// dropped: the loopback device shows every packet twice to packet
	// sockets, once outgoing and once incoming (libpcap drops the first).
	// These tests use Linux BPF extensions (pkttype, ifindex): such a
	// program only runs in the kernel, not in x/net/bpf's VM.
	DropOutgoingOn []int
}

const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	packetOutgoing = 4 // PACKET_OUTGOING
	protoTCP       = 6
)

// Compile compiles e (nil matches everything) for frames of the given
// link layout.
func Compile(e Expr, link Link, opts Options) ([]xbpf.RawInstruction, error) {
	g := &gen{link: link}
	if link == Ethernet {
		g.base = 14
	}
	accept, reject := g.label(), g.label()
	if len(opts.DropOutgoingOn) > 0 {
		start := g.label()
		incoming := g.label()
		g.emit(xbpf.LoadExtension{Num: xbpf.ExtType})
		g.jeq(packetOutgoing, start, incoming)
		g.place(start)
		g.emit(xbpf.LoadExtension{Num: xbpf.ExtInterfaceIndex})
		for i, idx := range opts.DropOutgoingOn {
			next := incoming
			if i < len(opts.DropOutgoingOn)-1 {
				next = g.label()
			}
			g.jeq(uint32(idx), reject, next)
			if next != incoming {
				g.place(next)
			}
		}
		g.place(incoming)
	}
	if e == nil {
		g.emit(xbpf.Jump{}) // placeholder resolved below
		g.code[len(g.code)-1].ja = accept
	} else if err := g.expr(e, accept, reject); err != nil {
		return nil, err
	}
	snap := opts.Snaplen
	if snap == 0 {
		snap = 262144
	}
	g.place(accept)
	g.emit(xbpf.RetConstant{Val: snap})
	g.place(reject)
	g.emit(xbpf.RetConstant{Val: 0})
	return g.assemble()
}

// ins is an instruction whose jumps still name labels.
type ins struct {
	i        xbpf.Instruction
	jt, jf   int // labels of a JumpIf (-1: none)
	ja       int // label of a Jump (-1: none)
	isJumpIf bool
}

type gen struct {
	link   Link
	base   uint32
	code   []ins
	labels []int // label → instruction index (-1: not placed)
}

func (g *gen) label() int {
	g.labels = append(g.labels, -1)
	return len(g.labels) - 1
}

func (g *gen) place(l int) { g.labels[l] = len(g.code) }

func (g *gen) emit(i xbpf.Instruction) {
	g.code = append(g.code, ins{i: i, jt: -1, jf: -1, ja: -1})
}

// jump emits "if A cond val goto t else goto f".
func (g *gen) jump(cond xbpf.JumpTest, val uint32, t, f int) {
	g.code = append(g.code, ins{i: xbpf.JumpIf{Cond: cond, Val: val}, jt: t, jf: f, ja: -1, isJumpIf: true})
}

func (g *gen) jeq(val uint32, t, f int) { g.jump(xbpf.JumpEqual, val, t, f) }

func (g *gen) assemble() ([]xbpf.RawInstruction, error) {
	out := make([]xbpf.Instruction, len(g.code))
	for pc, c := range g.code {
		switch {
		case c.isJumpIf:
			ji := c.i.(xbpf.JumpIf)
			st, sf := g.labels[c.jt]-pc-1, g.labels[c.jf]-pc-1
			if st < 0 || sf < 0 || st > 255 || sf > 255 {
				return nil, errors.New("capture filter too long for classic BPF conditional jumps; simplify it or use the libpcap build (-tags pcap)")
			}
			ji.SkipTrue, ji.SkipFalse = uint8(st), uint8(sf)
			out[pc] = ji
		case c.ja >= 0:
			out[pc] = xbpf.Jump{Skip: uint32(g.labels[c.ja] - pc - 1)}
		default:
			out[pc] = c.i
		}
	}
	if len(out) > 4096 {
		return nil, fmt.Errorf("capture filter compiles to %d instructions (the kernel takes 4096)", len(out))
	}
	return xbpf.Assemble(out)
}

// expr emits code that jumps to t when e matches, else to f.
func (g *gen) expr(e Expr, t, f int) error {
	switch e := e.(type) {
	case And:
		mid := g.label()
		if err := g.expr(e.L, mid, f); err != nil {
			return err
		}
		g.place(mid)
		return g.expr(e.R, t, f)
	case Or:
		mid := g.label()
		if err := g.expr(e.L, t, mid); err != nil {
			return err
		}
		g.place(mid)
		return g.expr(e.R, t, f)
	case Not:
		return g.expr(e.E, f, t)
	case Proto:
		switch e.Name {
		case "ip":
			g.isIPv4(t, f)
		case "ip6":
			g.isIPv6(t, f)
		case "tcp":
			v6 := g.label()
			v4 := g.label()
			g.ipVersion(v4, v6, f)
			g.place(v4)
			g.emit(xbpf.LoadAbsolute{Off: g.base + 9, Size: 1})
			g.jeq(protoTCP, t, f)
			g.place(v6)
			g.emit(xbpf.LoadAbsolute{Off: g.base + 6, Size: 1})
			g.jeq(protoTCP, t, f)
		default:
			return fmt.Errorf("protocol %q: %w", e.Name, ErrUnsupported)
		}
	case Port:
		g.port(e, t, f)
	case Host:
		g.host(e, t, f)
	default:
		return fmt.Errorf("expression %v: %w", e, ErrUnsupported)
	}
	return nil
}

// ipVersion jumps to v4 for IPv4, v6 for IPv6, else to other.
func (g *gen) ipVersion(v4, v6, other int) {
	if g.link == Ethernet {
		chk6 := g.label()
		g.emit(xbpf.LoadAbsolute{Off: 12, Size: 2})
		g.jeq(etherTypeIPv4, v4, chk6)
		g.place(chk6)
		g.jeq(etherTypeIPv6, v6, other)
		return
	}
	chk6 := g.label()
	g.emit(xbpf.LoadAbsolute{Off: 0, Size: 1})
	g.emit(xbpf.ALUOpConstant{Op: xbpf.ALUOpAnd, Val: 0xf0})
	g.jeq(0x40, v4, chk6)
	g.place(chk6)
	g.jeq(0x60, v6, other)
}

func (g *gen) isIPv4(t, f int) { g.ipVersion(t, f, f) }
func (g *gen) isIPv6(t, f int) { g.ipVersion(f, t, f) }

// port: TCP, not a non-first IPv4 fragment, port in range.
func (g *gen) port(p Port, t, f int) {
	v4, v6 := g.label(), g.label()
	g.ipVersion(v4, v6, f)
	// IPv4: protocol TCP, fragment offset 0, X = header length.
	g.place(v4)
	tcp4, first := g.label(), g.label()
	g.emit(xbpf.LoadAbsolute{Off: g.base + 9, Size: 1})
	g.jeq(protoTCP, tcp4, f)
	g.place(tcp4)
	g.emit(xbpf.LoadAbsolute{Off: g.base + 6, Size: 2})
	g.jump(xbpf.JumpBitsSet, 0x1fff, f, first)
	g.place(first)
	g.emit(xbpf.LoadMemShift{Off: g.base})
	g.ports(p, true, g.base, t, f)
	// IPv6: next header TCP (no extension headers), fixed 40-byte header.
	g.place(v6)
	tcp6 := g.label()
	g.emit(xbpf.LoadAbsolute{Off: g.base + 6, Size: 1})
	g.jeq(protoTCP, tcp6, f)
	g.place(tcp6)
	g.ports(p, false, g.base+40, t, f)
}

// ports tests the source and/or destination port at off (+X when indirect).
func (g *gen) ports(p Port, indirect bool, off uint32, t, f int) {
	var offs []uint32
	switch p.Dir {
	case Src:
		offs = []uint32{off}
	case Dst:
		offs = []uint32{off + 2}
	default:
		offs = []uint32{off, off + 2}
	}
	for i, o := range offs {
		miss := f
		if i < len(offs)-1 {
			miss = g.label()
		}
		if indirect {
			g.emit(xbpf.LoadIndirect{Off: o, Size: 2})
		} else {
			g.emit(xbpf.LoadAbsolute{Off: o, Size: 2})
		}
		if p.Lo == p.Hi {
			g.jeq(uint32(p.Lo), t, miss)
		} else {
			geLo := g.label()
			g.jump(xbpf.JumpGreaterOrEqual, uint32(p.Lo), geLo, miss)
			g.place(geLo)
			g.jump(xbpf.JumpGreaterThan, uint32(p.Hi), miss, t)
		}
		if miss != f {
			g.place(miss)
		}
	}
}

func (g *gen) host(h Host, t, f int) {
	v4, v6 := g.label(), g.label()
	a := h.Prefix.Addr()
	if a.Is4() {
		g.ipVersion(v4, f, f)
		g.place(v4)
		g.addr(h.Dir, a, h.Prefix.Bits(), g.base+12, g.base+16, t, f)
	} else {
		g.ipVersion(f, v6, f)
		g.place(v6)
		g.addr(h.Dir, a, h.Prefix.Bits(), g.base+8, g.base+24, t, f)
	}
	// The unused label stays unplaced; no instruction refers to it.
	_ = v6
}

// addr tests whether the source (at src) and/or destination (at dst)
// address lies in a/bits.
func (g *gen) addr(dir Dir, a netip.Addr, bits int, src, dst uint32, t, f int) {
	var offs []uint32
	switch dir {
	case Src:
		offs = []uint32{src}
	case Dst:
		offs = []uint32{dst}
	default:
		offs = []uint32{src, dst}
	}
	b := a.AsSlice()
	for i, o := range offs {
		miss := f
		if i < len(offs)-1 {
			miss = g.label()
		}
		// Compare word by word; words wholly outside the prefix are skipped.
		words := 0
		for w := 0; w*32 < bits; w++ {
			words++
		}
		if words == 0 {
			g.emit(xbpf.Jump{})
			g.code[len(g.code)-1].ja = t
		}
		for w := 0; w < words; w++ {
			val := binary.BigEndian.Uint32(b[4*w:])
			mask := uint32(0xffffffff)
			if rem := bits - 32*w; rem < 32 {
				mask = ^uint32(0) << (32 - rem)
			}
			g.emit(xbpf.LoadAbsolute{Off: o + uint32(4*w), Size: 4})
			if mask != 0xffffffff {
				g.emit(xbpf.ALUOpConstant{Op: xbpf.ALUOpAnd, Val: mask})
			}
			next := t
			if w < words-1 {
				next = g.label()
			}
			g.jeq(val&mask, next, miss)
			if next != t {
				g.place(next)
			}
		}
		if miss != f {
			g.place(miss)
		}
	}
}
