package tui

import (
	"runtime/debug"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/track/stats"
)

// screen is what fills the window.
type screen int

const (
	screenTimeline screen = iota
	screenConns
	screenStats
	screenProblems
	screenHelp
)

// focus is the timeline pane that takes the keys.
type focus int

const (
	focusTimeline focus = iota
	focusDetail
	focusHex
)

// timeFormat is how the time column is shown.
type timeFormat int

const (
	timeRelative timeFormat = iota
	timeAbsolute
	timeDelta
)

// inputKind says what the input line is for.
type inputKind int

const (
	inputNone inputKind = iota
	inputFilter
	inputSearch
)

// tickInterval is how often the model looks at the index while frames arrive.
const tickInterval = 100 * time.Millisecond

type tickMsg struct{}

// Model is the TUI's bubbletea model. It reads the Index (filled by the
// session's collector on another goroutine) and formats only what is on
// screen.
type Model struct {
	s    *session
	x    *Index
	opts Options
	st   styles
	w, h int

	screen, back screen
	focus        focus

	// Timeline.
	view     viewList
	cur, top int
	follow   bool // keep the cursor on the last frame as frames arrive
	paused   bool
	pausedAt int // frames shown while paused
	timeFmt  timeFormat
	marks    map[int32]bool
	cache    rowCache
	dec      *decode.Decoder
	buf      []byte

	// Detail and hex panes.
	detailOpen bool
	det        *detail

	// Input line (filter, search).
	input     textinput.Model
	inputKind inputKind
	inputErr  string

	filter  filterState
	search  searchState
	message string

	// Other views.
	listCur, listTop int
	report           *stats.Report
	reportAt         int
	reportTime       time.Time

	loaded  bool
	loadErr error
	drops   uint64
}

func newModel(s *session, opts Options) *Model {
	ti := textinput.New()
	ti.Prompt = ""
	m := &Model{
		s:      s,
		x:      s.index,
		opts:   opts,
		st:     newStyles(opts.NoColor),
		w:      80,
		h:      24,
		marks:  map[int32]bool{},
		dec:    decode.NewDecoder(s.decOpts),
		input:  ti,
		follow: s.src.Live(),
		cache:  newRowCache(),
	}
	if opts.Width > 0 {
		m.w = opts.Width
	}
	if opts.Height > 0 {
		m.h = opts.Height
	}
	return m
}

// Init starts the refresh tick.
func (m *Model) Init() tea.Cmd { return tick() }

func tick() tea.Cmd {
	return tea.Tick(tickInterval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = max(msg.Width, 20), max(msg.Height, 6)
		m.clamp()
		return m, nil
	case tickMsg:
		cmd := m.refresh()
		if m.loaded && !m.s.src.Live() {
			return m, cmd
		}
		return m, tea.Batch(cmd, tick())
	case loadDoneMsg:
		m.loaded, m.loadErr = true, msg.err
		// Loading leaves garbage behind (decoder, reassembly): give the
		// memory back now rather than keep the GC's headroom.
		return m, tea.Batch(m.refresh(), func() tea.Msg { debug.FreeOSMemory(); return nil })
	case scanMsg:
		return m, m.onScan(msg)
	case searchMsg:
		m.onSearch(msg)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case tea.MouseWheelMsg:
		m.onWheel(msg)
		return m, nil
	case tea.MouseClickMsg:
		m.onClick(msg)
		return m, nil
	case tea.PasteMsg:
		if m.inputKind != inputNone {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(msg)
			m.onInputChange()
			return m, cmd
		}
	}
	if m.inputKind != inputNone {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// refresh picks up new frames: it grows the view, keeps following the end,
// and continues a filter scan over the new rows.
func (m *Model) refresh() tea.Cmd {
	m.drops = m.s.src.Drops()
	n := m.x.Len()
	if m.paused {
		n = m.pausedAt
	}
	var cmd tea.Cmd
	if m.filter.active() {
		cmd = m.continueScan(n)
	} else {
		m.view.setAll(n)
	}
	if m.follow && m.view.len() > 0 {
		m.cur = m.view.len() - 1
	}
	m.clamp()
	m.syncDetail()
	return cmd
}

// visibleFrames returns how many frames the timeline may show (all of the
// index, or those there were when paused).
func (m *Model) visibleFrames() int {
	if m.paused {
		return m.pausedAt
	}
	return m.x.Len()
}
