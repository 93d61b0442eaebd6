package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/pulsarscope/pulsarscope/capture"
)

// progressInterval is how often the bar is redrawn (at most).
const progressInterval = 100 * time.Millisecond

// progress draws a progress bar on stderr while capture files are read
// ('stats', 'read -q'), with github.com/schollz/progressbar/v3: the share
// of the input file's bytes read (compressed bytes for a gzip file), the
// rate and the time left. When the size is unknown (stdin, a pipe) it is a
// spinner with the bytes read and the rate. It is redrawn at most ten times
// a second, from its own goroutine, and cleared when the file is done.
type progress struct {
	w io.Writer
	// Set by runTracked for each run of runFiles: the pass (of passes)
	// and, for stdin spooled to a temporary file, the name to show.
	pass, passes int
	label        string
	files, nfile int

	read atomic.Int64 // bytes read from the current file
	bar  *progressbar.ProgressBar
	stop chan struct{}
	done chan struct{}
}

// newProgress returns the progress bar for mode (auto: when stderr is a
// terminal; always; never), or nil when none is drawn.
func newProgress(e *env, mode string) (*progress, error) {
	var show bool
	switch mode {
	case "always":
		show = true
	case "never":
	case "auto":
		if f, ok := e.stderr.(interface{ Fd() uintptr }); ok {
			show = isatty.IsTerminal(f.Fd())
		}
	default:
		return nil, usageErr("--progress must be auto, always or never, not %q", mode)
	}
	if !show {
		return nil, nil
	}
	return &progress{w: e.stderr}, nil
}

// setRun names the next run of runFiles: pass of passes over files;
// label, when not empty, is shown instead of the (temporary) file name.
func (p *progress) setRun(pass, passes int, files int, label string) {
	if p == nil {
		return
	}
	p.pass, p.passes, p.files, p.nfile, p.label = pass, passes, files, 0, label
}

// countingReader counts the bytes read from the input file.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// open opens a capture like capture.Open (stdin for "-") through a
// counting reader, and starts the bar. Errors are capture's own.
func (p *progress) open(e *env, name string) (*capture.Source, error) {
	var (
		r      io.Reader
		closer io.Closer
		size   int64 = -1
		srcNm        = name
	)
	if name == "-" {
		r, srcNm = e.stdin, "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return capture.Open(name) // worded by capture
		}
		fi, err := f.Stat()
		if err != nil || fi.IsDir() {
			f.Close()
			return capture.Open(name)
		}
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
		r, closer = f, f
	}
	p.read.Store(0)
	raw, err := capture.NewFileReader(srcNm, countingReader{r, &p.read}, closer)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, err
	}
	p.start(p.describe(name), size)
	return capture.NewSource(srcNm, raw), nil
}

// describe is the text before the bar: pass, file number and name.
func (p *progress) describe(name string) string {
	p.nfile++
	if p.label != "" {
		name = p.label
	}
	if name == "-" {
		name = "stdin"
	}
	d := filepath.Base(name)
	if p.files > 1 {
		d = fmt.Sprintf("[%d/%d] %s", p.nfile, p.files, d)
	}
	if p.passes > 1 {
		d = fmt.Sprintf("pass %d/%d %s", p.pass, p.passes, d)
	}
	return d
}

func (p *progress) start(desc string, size int64) {
	if size == 0 {
		size = -1
	}
	p.bar = progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(progressInterval),
		progressbar.OptionFullWidth(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetSpinnerChangeInterval(0), // no goroutine of its own: redrawn by ours
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func(bar *progressbar.ProgressBar, stop <-chan struct{}, done chan<- struct{}) {
		defer close(done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				bar.Set64(p.read.Load())
			}
		}
	}(p.bar, p.stop, p.done)
}

// end stops and clears the bar of the current file (nil-safe).
func (p *progress) end() {
	if p == nil || p.bar == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.bar.Finish() // with OptionClearOnFinish: clears the line
	p.bar = nil
}
