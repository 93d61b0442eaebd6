package tui

import (
	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/reassembly"
)

func connID(c *reassembly.Conn) int {
	if c == nil {
		return 0
	}
	return c.ID
}

func connID32(e *decode.Event) int32 { return int32(connID(e.Conn)) }
