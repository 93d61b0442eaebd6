// Package bpf compiles a subset of the libpcap capture-filter syntax to
// classic BPF (golang.org/x/net/bpf), in pure Go, for the AF_PACKET live
// capture of package capture.
//
// Accepted syntax (docs/capture.md):
//
//	primitive  := [tcp] [src|dst] (host ADDR | net CIDR | port N | portrange N-M)
//	            | tcp | ip | ip6
//	expression := primitive | not E | ! E | E and E | E && E | E or E | E || E | ( E )
//
// ADDR is an IPv4 or IPv6 address, CIDR an address with a /prefix (or a
// plain address). port and portrange match TCP ports only (pulsarscope
// captures TCP), and never non-first IPv4 fragments; host and net match IPv4
// and IPv6 addresses. "not" binds tighter than "and", "and" tighter than
// "or". Anything else (udp, ether, vlan, less, [..] expressions, "port 1 or
// 2" shorthands) is an error naming the libpcap build.
package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrUnsupported is wrapped by the errors of Parse for syntax outside the
// subset.
var ErrUnsupported = errors.New("not in the capture-filter subset of the pure-Go backend (host, net, port, portrange, tcp, ip, ip6, src/dst, and/or/not, parentheses); build pulsarscope with -tags pcap for the full libpcap syntax")

// Expr is a parsed filter expression.
type Expr interface{ String() string }

// Dir says which address or port of a packet a primitive looks at.
type Dir int

// Directions.
const (
	SrcOrDst Dir = iota
	Src
	Dst
)

func (d Dir) prefix() string {
	switch d {
	case Src:
		return "src "
	case Dst:
		return "dst "
	}
	return ""
}

// Proto matches the network or transport protocol: "tcp", "ip" or "ip6".
type Proto struct{ Name string }

// Host matches an IPv4 or IPv6 network (a host is a full-length prefix).
type Host struct {
	Dir    Dir
	Prefix netip.Prefix
	IsNet  bool
}

// Port matches TCP ports Lo..Hi.
type Port struct {
	Dir    Dir
	Lo, Hi uint16
}

// And, Or, Not combine expressions.
type (
	And struct{ L, R Expr }
	Or  struct{ L, R Expr }
	Not struct{ E Expr }
)

func (p Proto) String() string { return p.Name }
func (h Host) String() string {
	if h.IsNet {
		return h.Dir.prefix() + "net " + h.Prefix.String()
	}
	return h.Dir.prefix() + "host " + h.Prefix.Addr().String()
}
func (p Port) String() string {
	if p.Lo == p.Hi {
		return fmt.Sprintf("%sport %d", p.Dir.prefix(), p.Lo)
	}
	return fmt.Sprintf("%sportrange %d-%d", p.Dir.prefix(), p.Lo, p.Hi)
}
func (a And) String() string { return "(" + a.L.String() + " and " + a.R.String() + ")" }
func (o Or) String() string  { return "(" + o.L.String() + " or " + o.R.String() + ")" }
func (n Not) String() string { return "not " + n.E.String() }

// TCPPorts returns the expression "tcp and (port P1 or port P2 ...)"; with
// no ports, "tcp".
func TCPPorts(ports ...uint16) Expr {
	var e Expr
	for _, p := range ports {
		var pe Expr = Port{Lo: p, Hi: p}
		if e == nil {
			e = pe
		} else {
			e = Or{e, pe}
		}
	}
	if e == nil {
		return Proto{"tcp"}
	}
	return e // Port implies TCP
}

// Parse parses a filter in the subset described in the package comment.
// An empty (or blank) filter returns nil, nil.
func Parse(s string) (Expr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, nil
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, p.errorf("unexpected %q", p.toks[p.i])
	}
	return e, nil
}

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		case c == '!':
			toks = append(toks, "not")
			i++
		case strings.HasPrefix(s[i:], "&&"):
			toks = append(toks, "and")
			i += 2
		case strings.HasPrefix(s[i:], "||"):
			toks = append(toks, "or")
			i += 2
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r()!&|", rune(s[j])) {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("filter %q: unexpected %q: %w", s, s[i:i+1], ErrUnsupported)
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks, nil
}

type parser struct {
	toks []string
	i    int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("filter %q: %s: %w", strings.Join(p.toks, " "), fmt.Sprintf(format, args...), ErrUnsupported)
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return strings.ToLower(p.toks[p.i])
	}
	return ""
}

func (p *parser) next() string {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
}

func (p *parser) or() (Expr, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peek() == "or" {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = Or{l, r}
	}
	return l, nil
}

func (p *parser) and() (Expr, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peek() == "and" {
		p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = And{l, r}
	}
	return l, nil
}

func (p *parser) unary() (Expr, error) {
	switch p.peek() {
	case "not":
		p.next()
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return Not{e}, nil
	case "(":
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, p.errorf("missing )")
		}
		return e, nil
	case "":
		return nil, p.errorf("expression ends too early")
	}
	return p.primitive()
}

func (p *parser) primitive() (Expr, error) {
	tcp := false
	switch t := p.peek(); t {
	case "ip", "ip6":
		p.next()
		return Proto{t}, nil
	case "tcp":
		p.next()
		tcp = true
	}
	dir := SrcOrDst
	switch p.peek() {
	case "src":
		p.next()
		dir = Src
	case "dst":
		p.next()
		dir = Dst
	}
	if (p.peek() == "or" || p.peek() == "and") && dir != SrcOrDst {
		return nil, p.errorf("'src %s dst' is not supported", p.peek())
	}
	kw := p.peek()
	switch kw {
	case "host", "net", "port", "portrange":
		p.next()
	default:
		if tcp && dir == SrcOrDst {
			return Proto{"tcp"}, nil
		}
		if kw == "" {
			return nil, p.errorf("expression ends too early")
		}
		return nil, p.errorf("unknown or unsupported primitive %q", p.toks[p.i])
	}
	arg := p.next()
	if arg == "" || arg == "(" || arg == ")" || arg == "and" || arg == "or" || arg == "not" {
		return nil, p.errorf("%s needs a value", kw)
	}
	var e Expr
	switch kw {
	case "host":
		a, err := netip.ParseAddr(arg)
		if err != nil || a.Zone() != "" {
			return nil, p.errorf("host %q: not an IP address (host names are not resolved)", arg)
		}
		a = a.Unmap()
		e = Host{Dir: dir, Prefix: netip.PrefixFrom(a, a.BitLen())}
	case "net":
		pf, err := netip.ParsePrefix(arg)
		if err != nil {
			a, aerr := netip.ParseAddr(arg)
			if aerr != nil {
				return nil, p.errorf("net %q: not an address/prefix", arg)
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		if pf.Addr().Is4In6() {
			pf = netip.PrefixFrom(pf.Addr().Unmap(), pf.Bits()-96)
		}
		e = Host{Dir: dir, Prefix: pf.Masked(), IsNet: true}
	case "port":
		n, err := parsePort(arg)
		if err != nil {
			return nil, p.errorf("port %q: %v", arg, err)
		}
		e = Port{Dir: dir, Lo: n, Hi: n}
	case "portrange":
		a, b, ok := strings.Cut(arg, "-")
		lo, err1 := parsePort(a)
		hi, err2 := parsePort(b)
		if !ok || err1 != nil || err2 != nil || lo > hi {
			return nil, p.errorf("portrange %q: expected LOW-HIGH", arg)
		}
		e = Port{Dir: dir, Lo: lo, Hi: hi}
	}
	if tcp {
		if _, isPort := e.(Port); !isPort {
			e = And{Proto{"tcp"}, e}
		}
	}
	return e, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, errors.New("not a port number (service names are not resolved)")
	}
	return uint16(n), nil
}
