// Package filter compiles display filters (-Y) over tracked frames. A
// filter is an expr-lang expression (github.com/expr-lang/expr) over the
// fields of Env, compiled once and evaluated per frame; see docs/filters.md.
package filter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track"
)

// Filter is a compiled display filter. It is safe to reuse, not for
// concurrent use (it reuses its Env).
type Filter struct {
	src     string
	prog    *vm.Program
	vm      vm.VM
	env     Env
	wantCmd bool
	// showSecrets: see ShowSecrets.
	showSecrets bool
}

// SyntaxError is a filter that does not compile, with where it is wrong.
type SyntaxError struct {
	Source  string
	Column  int // 0-based column of the error (-1 when unknown)
	Message string
}

// Error shows the message, the filter and a caret under the column.
func (e *SyntaxError) Error() string {
	if e.Column < 0 {
		return fmt.Sprintf("bad filter: %s\n  %s", e.Message, e.Source)
	}
	return fmt.Sprintf("bad filter: %s (column %d)\n  %s\n  %s^", e.Message, e.Column+1, e.Source, strings.Repeat(" ", e.Column))
}

// Compile compiles src; the expression must be boolean.
func Compile(src string) (*Filter, error) {
	prog, err := expr.Compile(src, expr.Env(Env{}), expr.AsBool())
	if err != nil {
		se := &SyntaxError{Source: src, Column: -1, Message: err.Error()}
		var fe *file.Error
		if errors.As(err, &fe) {
			se.Message, se.Column = fe.Message, fe.Column
		}
		return nil, se
	}
	return &Filter{src: src, prog: prog, wantCmd: strings.Contains(src, "cmd")}, nil
}

// ShowSecrets makes the filter see secrets' values (--show-secrets); by
// default a secret field is seen as as many asterisks as it has bytes, and
// credentials by shape in strings as redaction markers (decode/secret), so
// a filter can test that a secret is present and its length, never its
// value. It returns f.
func (f *Filter) ShowSecrets(show bool) *Filter {
	f.showSecrets = show
	return f
}

// String returns the filter's source.
func (f *Filter) String() string { return f.src }

// Match reports whether a tracked frame passes the filter.
func (f *Filter) Match(fr *decode.Frame, info *track.Info) (bool, error) {
	f.env.fromFrame(fr, info, f.wantCmd, f.showSecrets)
	return f.run()
}

// MatchEvent reports whether a stream event passes: its type is the kind in
// parentheses, e.g. "(gap)".
func (f *Filter) MatchEvent(e *decode.Event) (bool, error) {
	f.env.fromEvent(e)
	return f.run()
}

// MatchFinding reports whether a conformance finding passes: its fields
// are those of the frame it concerns (n, type) and its one problem.
func (f *Filter) MatchFinding(fd *track.Finding) (bool, error) {
	f.env.fromFinding(fd)
	return f.run()
}

func (f *Filter) run() (bool, error) {
	out, err := f.vm.Run(f.prog, &f.env)
	if err != nil {
		return false, fmt.Errorf("filter %q: %w", f.src, err)
	}
	b, _ := out.(bool)
	return b, nil
}
