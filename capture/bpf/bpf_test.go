package bpf

import (
	"errors"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	xbpf "golang.org/x/net/bpf"
)

type pkt struct {
	src, dst     string
	sport, dport uint16
	udp          bool
	fragOff      uint16 // IPv4 fragment offset (8-byte units)
}

// frame builds an Ethernet frame (or, with network, the IP packet alone).
func (p pkt) frame(t *testing.T, network bool) []byte {
	t.Helper()
	src, dst := net.ParseIP(p.src), net.ParseIP(p.dst)
	var ls []gopacket.SerializableLayer
	eth := &layers.Ethernet{SrcMAC: make(net.HardwareAddr, 6), DstMAC: make(net.HardwareAddr, 6)}
	var tr gopacket.SerializableLayer
	var ipl gopacket.NetworkLayer
	proto := layers.IPProtocolTCP
	if p.udp {
		proto = layers.IPProtocolUDP
	}
	if v4 := src.To4(); v4 != nil {
		eth.EthernetType = layers.EthernetTypeIPv4
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: v4, DstIP: dst.To4(), FragOffset: p.fragOff}
		ipl = ip
		ls = append(ls, ip)
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src, DstIP: dst}
		ipl = ip
		ls = append(ls, ip)
	}
	if p.udp {
		u := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		u.SetNetworkLayerForChecksum(ipl)
		tr = u
	} else {
		tc := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport), DataOffset: 5, ACK: true, Window: 100}
		tc.SetNetworkLayerForChecksum(ipl)
		tr = tc
	}
	ls = append(ls, tr, gopacket.Payload("hello"))
	if !network {
		ls = append([]gopacket.SerializableLayer{eth}, ls...)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCompile(t *testing.T) {
	c4 := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 6650}
	s4 := pkt{src: "10.0.0.2", dst: "10.0.0.1", sport: 6650, dport: 40000}
	o4 := pkt{src: "192.168.1.5", dst: "10.0.0.2", sport: 40001, dport: 7000}
	c6 := pkt{src: "fd00::1", dst: "fd00::2", sport: 40000, dport: 6650}
	o6 := pkt{src: "2001:db8::9", dst: "fd00::2", sport: 40000, dport: 80}
	u4 := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 6650, dport: 6650, udp: true}
	frag := pkt{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 6650, fragOff: 100}
	all := map[string]pkt{"c4": c4, "s4": s4, "o4": o4, "c6": c6, "o6": o6, "u4": u4, "frag": frag}
	cases := []struct {
		filter string
		match  []string
	}{
		{"", []string{"c4", "s4", "o4", "c6", "o6", "u4", "frag"}},
		{"tcp", []string{"c4", "s4", "o4", "c6", "o6", "frag"}},
		{"ip", []string{"c4", "s4", "o4", "u4", "frag"}},
		{"ip6", []string{"c6", "o6"}},
		{"port 6650", []string{"c4", "s4", "c6"}},
		{"tcp port 6650", []string{"c4", "s4", "c6"}},
		{"dst port 6650", []string{"c4", "c6"}},
		{"src port 6650", []string{"s4"}},
		{"portrange 6000-7000", []string{"c4", "s4", "o4", "c6"}},
		{"not port 6650", []string{"o4", "o6", "u4", "frag"}},
		{"host 10.0.0.1", []string{"c4", "s4", "u4", "frag"}},
		{"src host 10.0.0.1", []string{"c4", "u4", "frag"}},
		{"dst host 10.0.0.1", []string{"s4"}},
		{"host fd00::1", []string{"c6"}},
		{"net 192.168.0.0/16", []string{"o4"}},
		{"net 2001:db8::/32 or net 10.0.0.0/31", []string{"c4", "s4", "o6", "u4", "frag"}},
		{"net 0.0.0.0/0", []string{"c4", "s4", "o4", "u4", "frag"}},
		{"host 10.0.0.2 and (port 6650 or port 7000)", []string{"c4", "s4", "o4"}},
		{"host 10.0.0.2 && !(port 6650 || port 7000)", []string{"u4", "frag"}},
		{"tcp and not ip6 and src net 10.0.0.0/8", []string{"c4", "s4", "frag"}},
	}
	for _, network := range []bool{false, true} {
		link := Ethernet
		if network {
			link = Network
		}
		for _, tc := range cases {
			e, err := Parse(tc.filter)
			if err != nil {
				t.Fatalf("%q: %v", tc.filter, err)
			}
			prog, err := Compile(e, link, Options{Snaplen: 1000})
			if err != nil {
				t.Fatalf("%q: %v", tc.filter, err)
			}
			insns, _ := xbpf.Disassemble(prog)
			vm, err := xbpf.NewVM(insns)
			if err != nil {
				t.Fatalf("%q: %v", tc.filter, err)
			}
			want := map[string]bool{}
			for _, m := range tc.match {
				want[m] = true
			}
			for name, p := range all {
				n, err := vm.Run(p.frame(t, network))
				if err != nil {
					t.Fatalf("%q %s: %v", tc.filter, name, err)
				}
				if got := n > 0; got != want[name] {
					t.Errorf("network=%v filter %q packet %s: match %v, want %v", network, tc.filter, name, got, want[name])
				}
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, f := range []string{"udp", "port", "port 6650 or 6651", "host example.com", "ether host 00:11:22:33:44:55",
		"(port 1", "port 1)", "tcp[13] & 2 != 0", "port 70000", "portrange 9-3", "src or dst port 1", "less 100", "and"} {
		if _, err := Parse(f); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Parse(%q) = %v, want ErrUnsupported", f, err)
		}
	}
}

func TestTCPPortsAndDropOutgoing(t *testing.T) {
	e := TCPPorts(6650, 6651)
	if e.String() != "(port 6650 or port 6651)" {
		t.Fatal(e)
	}
	if _, err := Compile(e, Ethernet, Options{DropOutgoingOn: []int{1, 5}}); err != nil {
		t.Fatal(err)
	}
	if TCPPorts().String() != "tcp" {
		t.Fatal("no ports")
	}
}
