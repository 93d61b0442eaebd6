package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// readOptions are the flags of 'read' (and of the root's -r).
type readOptions struct {
	rootFile     string
	output       string
	verbose      bool
	hex          bool
	payload      bool
	count        int
	maxFrameSize string
	ports        []uint
	detect       bool
	showSecrets  bool
	color        string
	strict       bool
	events       bool
	quiet        bool
	filter       string
	twoPass      bool
	progress     string
	limits       limitOptions
}

func addReadFlags(cmd *cobra.Command, o *readOptions) {
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json (NDJSON, see docs/json.md) or transcript (normalised JSON for 'diff', see docs/diff.md)")
	f.BoolVarP(&o.verbose, "verbose", "V", false, "print each frame's full decoded tree (like tshark -V)")
	f.BoolVarP(&o.hex, "hex", "x", false, "add a hex dump of each frame")
	f.BoolVar(&o.payload, "payload", false, "show message payloads (decompressed; text when printable, else hex)")
	f.IntVarP(&o.count, "count", "c", 0, "stop after this many frames (0: no limit)")
	f.StringVar(&o.maxFrameSize, "max-frame-size", "5MiB", "largest plausible frame; larger claimed sizes are a frame-too-large problem")
	f.UintSliceVar(&o.ports, "port", nil, "extra Pulsar server port (repeatable; 6650 is always one, 6651 is TLS)")
	f.BoolVar(&o.detect, "detect", false, "find Pulsar on any TCP port from the content of the first bytes")
	f.BoolVar(&o.showSecrets, "show-secrets", false, "print auth_data and tokens instead of redacting them")
	f.StringVar(&o.color, "color", "auto", "color the text output: auto, always or never (NO_COLOR is honoured by auto)")
	f.BoolVar(&o.strict, "strict", false, "exit 1 when any problem is found (for CI)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print no frames, only a summary at the end (decode and validate everything)")
	f.BoolVar(&o.events, "events", false, "text output: also print stream events (connection open/close, gaps, skips)")
	f.StringVarP(&o.filter, "display-filter", "Y", "", "show only frames matching this filter (docs/filters.md), e.g. 'type == \"SEND\" && latency_ms > 5'")
	f.BoolVarP(&o.twoPass, "two-pass", "2", false, "read the input twice so requests show their response (stdin is spooled to a temporary file)")
	f.StringVar(&o.progress, "progress", "auto", "with -q, a progress bar on stderr: auto (when stderr is a terminal), always or never")
	addLimitFlags(f, &o.limits)
}

func newReadCmd(e *env) *cobra.Command {
	o := &readOptions{}
	cmd := &cobra.Command{
		Use:   "read FILE...",
		Short: "Decode captures (pcap, pcapng, gzip; '-' for stdin) and print every Pulsar frame",
		Example: `  pulsarscope read testdata/pcaps/basic.pcap
  pulsarscope read -V -x capture.pcapng
  pulsarscope read -o json capture.pcap.gz | jq 'select(.problems | length > 0)'
  tcpdump -w - -i lo port 6650 | pulsarscope read -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRead(cmd.Context(), e, o, args)
		},
	}
	addReadFlags(cmd, o)
	return cmd
}

// parseSize reads sizes like 5MiB, 512KiB, 1000000.
func parseSize(s string) (int, error) {
	mult := 1
	u := strings.ToLower(strings.TrimSpace(s))
	for _, suf := range []struct {
		s string
		m int
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1000}, {"mb", 1000 * 1000}, {"k", 1 << 10}, {"m", 1 << 20}, {"b", 1}} {
		if strings.HasSuffix(u, suf.s) {
			mult, u = suf.m, strings.TrimSuffix(u, suf.s)
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(u))
	if err != nil || n <= 0 || n > (1<<31)/mult {
		return 0, fmt.Errorf("%q is not a size (examples: 5MiB, 512KiB, 1048576)", s)
	}
	return n * mult, nil
}

// useColor decides whether text output is colored.
func useColor(e *env, mode string, out any) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		if e.getenv("NO_COLOR") != "" {
			return false, nil
		}
		if f, ok := out.(interface{ Fd() uintptr }); ok {
			return isatty.IsTerminal(f.Fd()), nil
		}
		return false, nil
	}
	return false, usageErr("--color must be auto, always or never, not %q", mode)
}
