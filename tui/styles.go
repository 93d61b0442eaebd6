package tui

import (
	"charm.land/lipgloss/v2"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/render"
)

// styles are the TUI's lipgloss styles. With NoColor every style keeps
// only attributes that need no color (reverse, bold).
type styles struct {
	title, header, status, dim, problem, mark, cursor, selField, inputErr lipgloss.Style
	family                                                                map[render.Family]lipgloss.Style
	region                                                                map[string]lipgloss.Style
}

func newStyles(noColor bool) styles {
	c := func(s lipgloss.Style, fg string) lipgloss.Style {
		if noColor {
			return s
		}
		return s.Foreground(lipgloss.Color(fg))
	}
	plain := lipgloss.NewStyle()
	st := styles{
		title:    plain.Bold(true).Reverse(true),
		header:   plain.Bold(true).Underline(true),
		status:   plain.Reverse(true),
		dim:      c(plain, "8"),
		problem:  c(plain.Bold(true), "1"),
		mark:     c(plain.Bold(true), "3"),
		cursor:   plain.Reverse(true),
		selField: plain.Reverse(true),
		inputErr: c(plain.Bold(true), "1"),
		family: map[render.Family]lipgloss.Style{
			render.FamilyConnection:  c(plain, "6"),
			render.FamilyProducer:    c(plain, "2"),
			render.FamilyConsumer:    c(plain.Bold(!noColor), "4"),
			render.FamilyLookup:      c(plain, "5"),
			render.FamilyTransaction: c(plain, "3"),
			render.FamilyError:       c(plain, "1"),
		},
		region: map[string]lipgloss.Style{
			decode.RegionTotalSize:           c(plain, "2"),
			decode.RegionCommandSize:         c(plain, "2"),
			decode.RegionCommand:             c(plain, "6"),
			decode.RegionBrokerEntryMetadata: c(plain, "4"),
			decode.RegionMagic:               c(plain, "3"),
			decode.RegionChecksum:            c(plain, "3"),
			decode.RegionMetadataSize:        c(plain, "2"),
			decode.RegionMetadata:            c(plain, "5"),
			decode.RegionPayload:             plain,
		},
	}
	return st
}
