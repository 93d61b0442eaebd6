package tui

// keyHelp is one line of the help screen: the keys and what they do.
type keyHelp struct {
	keys, what string
}

// helpSection is the keys of one context.
type helpSection struct {
	title string
	keys  []keyHelp
}

// helpSections lists every key, by context. docs/tui.md repeats it.
func helpSections() []helpSection {
	return []helpSection{
		{"Everywhere", []keyHelp{
			{"q, ctrl+c", "quit"},
			{"?", "this help (any key closes it)"},
			{"1 / 2 / 3 / 4", "timeline / connections / statistics (SRT) / problems view"},
			{"esc", "close the input, help, or view; in the timeline: clear the filter"},
		}},
		{"Timeline", []keyHelp{
			{"↑ ↓, k j", "previous / next frame"},
			{"pgup pgdn, ctrl+b ctrl+f", "page up / down"},
			{"home end, g G", "first / last frame (G follows new frames in live mode)"},
			{"enter", "open / close the detail and hex panes"},
			{"tab", "move the focus: timeline → detail → hex"},
			{"/", "search (text in type, fields and problems); n / N next / previous match"},
			{"f", "display filter (expr, docs/filters.md); error shown while typing"},
			{"p", "jump to the paired request / response"},
			{"c", "follow the frame's connection (filter to it)"},
			{"e", "follow the frame's producer or consumer (filter to it)"},
			{"!", "show only frames with problems"},
			{"m", "mark / unmark the frame; ' and \" next / previous mark"},
			{"t", "time column: relative → absolute → delta"},
			{"space", "live mode: pause / resume the timeline"},
			{"mouse", "wheel scrolls, click selects"},
		}},
		{"Detail pane", []keyHelp{
			{"↑ ↓, k j", "previous / next field (its bytes are highlighted in hex)"},
			{"← →, h l", "collapse / expand the field"},
			{"enter, space", "toggle the field"},
		}},
		{"Hex pane", []keyHelp{
			{"↑ ↓, k j", "scroll"},
		}},
		{"Connections, problems views", []keyHelp{
			{"↑ ↓, k j, pgup pgdn", "move"},
			{"enter", "connections: follow it in the timeline; problems: jump to its frame"},
		}},
	}
}
