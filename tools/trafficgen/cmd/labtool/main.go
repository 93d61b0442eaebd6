// Command labtool turns traffic-lab logs into expectation files and renders
// the captures' README.
//
//	labtool expect -scenario S -pcap OUT.pcap -file NAME -command CMD -broker-log L -driver-result R -out OUT.expect.json
//	labtool derive -from A.expect.json -pcap B.pcapng -file NAME -command CMD -out B.expect.json
//	labtool readme -dir testdata/pcaps
//	labtool info FILE
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulsarscope/pulsarscope/tools/trafficgen/lab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labtool expect|derive|readme|info ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "expect":
		err = expect(os.Args[2:])
	case "derive":
		err = derive(os.Args[2:])
	case "readme":
		err = readme(os.Args[2:])
	case "info":
		err = info(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labtool:", err)
		os.Exit(1)
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func expect(args []string) error {
	fs := flag.NewFlagSet("expect", flag.ExitOnError)
	scenario := fs.String("scenario", "", "scenario name")
	pcap := fs.String("pcap", "", "capture file")
	file := fs.String("file", "", "file name recorded in the expectations (default: base name of -pcap)")
	command := fs.String("command", "", "command that made the capture")
	brokerLog := fs.String("broker-log", "", "broker log (JSON lines)")
	driverResult := fs.String("driver-result", "", "driver result JSON")
	out := fs.String("out", "", "output expect.json")
	_ = fs.Parse(args)
	if *file == "" {
		*file = filepath.Base(*pcap)
	}
	e, err := lab.Build(*scenario, *file, *pcap, *command, *brokerLog, *driverResult)
	if err != nil {
		return err
	}
	return writeJSON(*out, e)
}

func derive(args []string) error {
	fs := flag.NewFlagSet("derive", flag.ExitOnError)
	from := fs.String("from", "", "expect.json of the original capture")
	pcap := fs.String("pcap", "", "the converted capture")
	file := fs.String("file", "", "file name (default: base name of -pcap)")
	command := fs.String("command", "", "command that made the converted capture")
	out := fs.String("out", "", "output expect.json")
	_ = fs.Parse(args)
	if *file == "" {
		*file = filepath.Base(*pcap)
	}
	raw, err := os.ReadFile(*from)
	if err != nil {
		return fmt.Errorf("read %s: %w", *from, err)
	}
	var e lab.Expect
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("parse %s: %w", *from, err)
	}
	ci, err := lab.ReadCaptureInfo(*pcap)
	if err != nil {
		return err
	}
	if ci.Packets != e.Packets {
		return fmt.Errorf("%s has %d packets, %s expects %d", *pcap, ci.Packets, *from, e.Packets)
	}
	e.File, e.Command, e.Format, e.LinkType, e.Bytes = *file, *command, ci.Format, ci.LinkType, ci.Bytes
	e.Description = "The same packets as " + strings.TrimSuffix(filepath.Base(*from), ".expect.json") + " in pcapng format. " + e.Description
	return writeJSON(*out, e)
}

func readme(args []string) error {
	fs := flag.NewFlagSet("readme", flag.ExitOnError)
	dir := fs.String("dir", "testdata/pcaps", "folder with *.expect.json")
	_ = fs.Parse(args)
	b, err := lab.RenderReadme(*dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "README.md"), b, 0o644); err != nil {
		return fmt.Errorf("write README: %w", err)
	}
	return nil
}

func info(args []string) error {
	for _, p := range args {
		ci, err := lab.ReadCaptureInfo(p)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\t%d packets\t%d bytes\n", p, ci.Format, ci.LinkType, ci.Packets, ci.Bytes)
	}
	return nil
}
