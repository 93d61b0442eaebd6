package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated flag tables of docs/cli.md")

const cliDoc = "../docs/cli.md"

// flagTable renders flags as the Markdown table docs/cli.md shows: the
// same names, argument types, defaults and texts as --help (hidden flags
// and -h are left out).
func flagTable(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		typ, usage := pflag.UnquoteUsage(f)
		name := "`--" + f.Name
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + ", --" + f.Name
		}
		if typ != "" {
			name += " " + typ
		}
		name += "`"
		def := f.DefValue
		switch {
		case f.Value.Type() == "bool" && def == "false", def == "", def == "[]":
			def = ""
		default:
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", name, def, strings.ReplaceAll(usage, "|", `\|`))
	})
	return b.String()
}

// docFlagTables are the generated blocks of docs/cli.md by name: each
// command's own flags, the flags only the root command has (-r), and the
// global ones.
func docFlagTables(t *testing.T) map[string]string {
	t.Helper()
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	blocks := map[string]string{}
	var read *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		blocks[c.Name()] = flagTable(c.NonInheritedFlags())
		if c.Name() == "read" {
			read = c
		}
	}
	if read == nil {
		t.Fatal("no read command")
	}
	rootOnly := pflag.NewFlagSet("root", pflag.ContinueOnError)
	root.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if read.Flags().Lookup(f.Name) == nil {
			rootOnly.AddFlag(f)
		}
	})
	blocks["root"] = flagTable(rootOnly)
	blocks["global"] = flagTable(root.PersistentFlags())
	for k, v := range blocks {
		blocks[k] = "\n" + v + "\n" // blank lines around the table
	}
	return blocks
}

var docBlock = regexp.MustCompile(`(?s)<!-- flags:([a-z]+) \(generated: go test ./cli -run TestDocsCLIFlags -update-docs\) -->\n(.*?)<!-- /flags -->`)

// TestDocsCLIFlags checks that docs/cli.md documents every flag of every
// command exactly as --help does: its flag tables are generated from the
// commands (go test ./cli -run TestDocsCLIFlags -update-docs rewrites them).
func TestDocsCLIFlags(t *testing.T) {
	doc, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	want := docFlagTables(t)
	seen := map[string]bool{}
	stale := []string{}
	out := docBlock.ReplaceAllStringFunc(string(doc), func(m string) string {
		sub := docBlock.FindStringSubmatch(m)
		name, got := sub[1], sub[2]
		w, ok := want[name]
		if !ok {
			t.Errorf("docs/cli.md: flag table %q names no command", name)
			return m
		}
		seen[name] = true
		if got != w {
			stale = append(stale, name)
		}
		return m[:len(m)-len(got)-len("<!-- /flags -->")] + w + "<!-- /flags -->"
	})
	for name := range want {
		if !seen[name] {
			t.Errorf("docs/cli.md has no generated flag table for %q: add\n<!-- flags:%s (generated: go test ./cli -run TestDocsCLIFlags -update-docs) -->\n<!-- /flags -->", name, name)
		}
	}
	if len(stale) == 0 {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(cliDoc, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the flag tables of docs/cli.md: %v", stale)
		return
	}
	t.Errorf("docs/cli.md: the flag tables of %v differ from the commands' flags; run: go test ./cli -run TestDocsCLIFlags -update-docs", stale)
}

// TestDocsCLICommands checks that docs/cli.md has a section for every
// command and links every topic document.
func TestDocsCLICommands(t *testing.T) {
	doc, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			continue
		}
		if !bytes.Contains(doc, []byte("## `pulsarscope "+c.Name())) {
			t.Errorf("docs/cli.md has no section for %q", c.Name())
		}
	}
	for _, d := range []string{"json.md", "filters.md", "stats.md", "tui.md", "capture.md", "diff.md", "ci.md", "problems.md"} {
		if !bytes.Contains(doc, []byte("("+d+")")) {
			t.Errorf("docs/cli.md does not link %s", d)
		}
	}
}
