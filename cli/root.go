// Package cli holds pulsarscope's cobra commands: it parses flags, wires the
// pipeline stages together and maps outcomes to exit codes (docs/cli.md).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pulsarscope/pulsarscope/render"

	"github.com/spf13/cobra"
)

// Exit codes, documented in docs/cli.md.
const (
	// ExitOK: the input was read to its end (problems in the traffic do not count).
	ExitOK = 0
	// ExitProblems: --strict was given and at least one problem was found.
	ExitProblems = 1
	// ExitUsage: bad flags or arguments.
	ExitUsage = 2
	// ExitInput: an input could not be opened or read to its end.
	ExitInput = 3
	// ExitInternal: a bug in pulsarscope (a panic) stopped the run; the
	// output printed so far stands. diff uses 2 for every error instead.
	ExitInternal = 4
	// ExitInterrupted: stopped by SIGINT or SIGTERM before the end of input.
	ExitInterrupted = 130
)

// exitError carries an exit code with the message the user sees.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// env is what a command needs from the process, passed down instead of
// reaching for globals.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// Main runs pulsarscope with args and returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainWith(stdin, stdout, stderr, nil, args...)
}

// mainWith is Main with a hook to add commands (tests).
func mainWith(stdin io.Reader, stdout, stderr io.Writer, extend func(*cobra.Command), args ...string) (code int) {
	// A bug must not end in a Go stack trace: say what happened in one line
	// (PULSARSCOPE_TRACEBACK=1 re-panics, for a bug report with the stack).
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if os.Getenv("PULSARSCOPE_TRACEBACK") != "" {
			panic(r)
		}
		fmt.Fprintf(stderr, "pulsarscope: internal error: %s (this is a bug: please report it with the command line and, if you can share it, the capture; PULSARSCOPE_TRACEBACK=1 shows the stack)\n", render.SafeLines(fmt.Sprint(r)))
		code = ExitInternal
		if len(args) > 0 && args[0] == "diff" {
			code = 2
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := newRoot(e)
	if extend != nil {
		extend(root)
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != errSilent {
			fmt.Fprintln(stderr, "pulsarscope: "+render.SafeLines(ee.Error()))
		}
		return ee.code
	}
	// Anything cobra rejects itself (unknown flag, bad value) is a usage error.
	fmt.Fprintln(stderr, "pulsarscope: "+render.SafeLines(err.Error()))
	fmt.Fprintln(stderr, "Run 'pulsarscope --help' for usage.")
	return ExitUsage
}

// errSilent marks an exit code whose message was already printed.
var errSilent = errors.New("")

func newRoot(e *env) *cobra.Command {
	ro := &readOptions{}
	root := &cobra.Command{
		Use:   "pulsarscope",
		Short: "Inspect Apache Pulsar binary-protocol traffic",
		Long: `pulsarscope decodes the Apache Pulsar binary protocol from packet captures:
it reassembles TCP, splits and validates every frame (sizes, magic numbers,
CRC32-C checksums, protobuf), and prints each frame or a machine-readable record.

Like tshark, "pulsarscope -r FILE" is the same as "pulsarscope read FILE".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ro.rootFile == "" {
				return cmd.Help()
			}
			return runRead(cmd.Context(), e, ro, []string{ro.rootFile})
		},
	}
	var cpuProfile, memProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for reporting slowness)")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a heap profile to this file when done")
	var stopProfile func()
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		var err error
		stopProfile, err = startProfiles(cpuProfile, memProfile)
		return err
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) {
		if stopProfile != nil {
			stopProfile()
		}
	}
	addReadFlags(root, ro)
	root.Flags().StringVarP(&ro.rootFile, "read-file", "r", "", "read this capture file (tshark style; same as 'read FILE')")
	root.AddCommand(newReadCmd(e))
	root.AddCommand(newDiffCmd(e))
	root.AddCommand(newStatsCmd(e))
	root.AddCommand(newCaptureCmd(e))
	root.AddCommand(newTUICmd(e))
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}
