// Command faultwriter writes a modified copy of a capture of Pulsar traffic
// and logs, as JSON, exactly what it changed.
//
//	faultwriter -in basic.pcap -out basic-corrupt.pcap -fault corrupt-payload:type=SEND,nth=2 [-fault ...]
//	            [-port 6650] [-log FILE|-] [-expect NAME.expect.json [-base-expect BASE.expect.json]]
//	faultwriter -list -in basic.pcap [-port 6650]   (connections and frames as the selectors number them)
//
// Fault specs are KIND[:key=value,...]; several -fault flags apply in order:
//
//	drop            packet=N | [conn=C,dir=c2s|s2c,] offset=X | frame=K | type=T[,nth=K][,seg=S]   (seg: the S-th segment carrying the frame)
//	reorder         (segment selector as for drop)[,after=M]   move the packet after packet M (default: next data packet of its stream; never past an ACK of its bytes)
//	duplicate       (segment selector as for drop)[,after=M]   insert a copy after packet M (default: right after the original)
//	cut-start       [conn=C,dir=D,]frame=K|type=T[,nth=K][,into=B]   start the connection B bytes into frame K (default: frame 2, middle)
//	corrupt-payload [conn=C,dir=D,]frame=K|type=T[,nth=K][,at=auto|producer-name|metadata|payload|N][,xor=M]
//	bad-totalsize   [conn=C,dir=D,]frame=K|type=T[,nth=K][,value=V] (default 0x40000000)
//	port-rewrite    [from=6650,][to=16650]
//	ipv6            [mode=loopback|mapped|ula]
//	vlan            [id=100,][pcp=0]
//	conflict        (segment selector as for drop)[,at=N][,xor=M]   insert after it a retransmission with payload byte N (default: last) XORed with M (default 0xff)
//	reuse           [conn=C,][close=fin|none|rst,][gap=1ms]   append a copy of connection C on the same 4-tuple with new ISNs (port reuse); close: how the first copy ends
//	snaplen         [len=96]   cut every packet to its first len bytes (a capture's snap length)
//	pcapng          write pcapng (also chosen by an -out name ending in .pcapng)
//	fix-checksums   recompute the IPv4/TCP checksums of every packet (loopback captures have offloaded, invalid ones)
//
// Frame selectors default to conn=1, dir=c2s; segment and frame selectors
// without frame= or type= target the first SEND.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulsarscope/pulsarscope/tools/trafficgen/faults"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

// String returns the values joined by spaces.
func (m *multiFlag) String() string { return strings.Join(*m, " ") }

// Set appends a value.
func (m *multiFlag) Set(s string) error {
	*m = append(*m, s)
	return nil
}

// logFile is the JSON log the command writes.
type logFile struct {
	In          string            `json:"in"`
	Out         string            `json:"out"`
	Format      faults.Format     `json:"format"`
	LinkType    string            `json:"link_type"`
	PacketsIn   int               `json:"packets_in"`
	PacketsOut  int               `json:"packets_out"`
	Problems    []string          `json:"expect_problems"`
	Faults      []*faults.Entry   `json:"faults"`
	Connections []faults.ConnInfo `json:"connections"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faultwriter:", err)
		os.Exit(1)
	}
}

// run is the command with its arguments and standard output.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("faultwriter", flag.ContinueOnError)
	in := fs.String("in", "", "input capture (pcap or pcapng)")
	out := fs.String("out", "", "output capture (pcapng when the name ends in .pcapng)")
	var specs multiFlag
	fs.Var(&specs, "fault", "fault spec KIND[:key=value,...] (repeatable, applied in order)")
	port := fs.Uint("port", faults.DefaultPort, "Pulsar server port (decides client and server roles)")
	logPath := fs.String("log", "-", "where to write the JSON log (- for standard output, empty for none)")
	expectPath := fs.String("expect", "", "also write the variant's .expect.json here")
	baseExpect := fs.String("base-expect", "", "base capture's .expect.json (default: IN without extension + .expect.json, if present)")
	command := fs.String("command", "", "command line recorded in the .expect.json (default: this invocation as go run ./cmd/faultwriter ...)")
	list := fs.Bool("list", false, "only list the connections and Pulsar frames of -in as the selectors number them (JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *port == 0 || *port > 65535 {
		return fmt.Errorf("-port %d: not a port", *port)
	}
	if *list && *in != "" && fs.NArg() == 0 {
		c, err := readCapture(*in)
		if err != nil {
			return err
		}
		opts := faults.Options{Ports: []uint16{uint16(*port)}}
		return faults.WriteJSON(stdout, map[string]any{"connections": faults.Connections(c, opts), "frames": faults.Frames(c, opts)})
	}
	if *in == "" || *out == "" || len(specs) == 0 || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("need -in, -out and at least one -fault")
	}
	var parsed []faults.Spec
	for _, s := range specs {
		sp, err := faults.ParseSpec(s)
		if err != nil {
			return err
		}
		parsed = append(parsed, sp)
	}
	c, err := readCapture(*in)
	if err != nil {
		return err
	}
	packetsIn := len(c.Packets)
	c.Format = faults.FormatPcap
	if strings.HasSuffix(*out, ".pcapng") {
		c.Format = faults.FormatPcapng
	}
	opts := faults.Options{Ports: []uint16{uint16(*port)}}
	inConns := faults.Connections(c, opts)
	entries, err := faults.Apply(c, parsed, opts)
	if err != nil {
		return err
	}
	data, err := c.Bytes()
	if err != nil {
		return fmt.Errorf("encoding output: %w", err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	lg := logFile{
		In: *in, Out: *out, Format: c.Format, LinkType: c.LinkType.String(),
		PacketsIn: packetsIn, PacketsOut: len(c.Packets),
		Problems: faults.Problems(entries), Faults: entries,
		Connections: faults.Connections(c, opts.After(entries)),
	}
	if err := writeTo(*logPath, stdout, &lg); err != nil {
		return err
	}
	if *expectPath == "" {
		return nil
	}
	x := &faults.Expect{File: filepath.Base(*out), Base: filepath.Base(*in), Command: *command, Entries: entries,
		InConns: inConns, OutConns: lg.Connections}
	if x.Command == "" {
		x.Command = "go run ./cmd/faultwriter " + shellJoin(args)
	}
	bp := *baseExpect
	if bp == "" {
		bp = strings.TrimSuffix(*in, filepath.Ext(*in)) + ".expect.json"
		if _, err := os.Stat(bp); err != nil {
			bp = ""
		}
	}
	if bp != "" {
		if x.BaseExpect, err = os.ReadFile(bp); err != nil {
			return fmt.Errorf("reading base expect: %w", err)
		}
	}
	return writeTo(*expectPath, stdout, x)
}

// readCapture reads the capture file at path.
func readCapture(path string) (*faults.Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening input: %w", err)
	}
	defer f.Close()
	c, err := faults.ReadCapture(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return c, nil
}

// writeTo writes v as JSON to path ("-": stdout, "": nowhere).
func writeTo(path string, stdout io.Writer, v any) error {
	switch path {
	case "":
		return nil
	case "-":
		return faults.WriteJSON(stdout, v)
	}
	var b bytes.Buffer
	if err := faults.WriteJSON(&b, v); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// shellJoin quotes args for a POSIX shell where needed.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
