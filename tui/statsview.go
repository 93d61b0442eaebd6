package tui

import (
	"fmt"
	"strings"
	"time"
)

// statsLines renders the statistics view from track/stats: service
// response times, then commands, producers and consumers. It scrolls.
func (m *Model) statsLines() []string {
	r := m.report
	if r == nil {
		return nil
	}
	us := func(v int64) string { return fmtLatency(time.Duration(v) * time.Microsecond) }
	var out []string
	section := func(title, head string) {
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, m.st.title.Render(fit(" "+title, m.w)), m.st.header.Render(fit(head, m.w)))
	}
	section("Service response time (request → response, capture time)",
		fmt.Sprintf("%-30s %7s %9s %9s %9s %9s %9s %6s", "Request", "Count", "Min", "P50", "P90", "P99", "Max", "Unans."))
	for _, s := range r.SRT {
		if s.Count == 0 {
			out = append(out, fmt.Sprintf("%-30s %7d %9s %9s %9s %9s %9s %6d", s.Request, 0, "-", "-", "-", "-", "-", s.Unanswered))
			continue
		}
		out = append(out, fmt.Sprintf("%-30s %7d %9s %9s %9s %9s %9s %6d", s.Request, s.Count,
			us(s.MinUS), us(s.P50US), us(s.P90US), us(s.P99US), us(s.MaxUS), s.Unanswered))
	}
	section("Commands", fmt.Sprintf("%-30s %9s %9s %10s", "Type", "c2s", "s2c", "Bytes"))
	for _, c := range r.Commands {
		out = append(out, fmt.Sprintf("%-30s %9d %9d %10s", c.Type, c.C2S, c.S2C, fmtBytes(c.Bytes)))
	}
	if len(r.Producers) > 0 {
		section("Producers", fmt.Sprintf("%-16s %8s %9s %10s %8s %9s %9s  %s", "Name", "Sends", "Messages", "Bytes", "Receipts", "P50", "P99", "Topic"))
		for _, p := range r.Producers {
			out = append(out, fmt.Sprintf("%-16s %8d %9d %10s %8d %9s %9s  %s", p.Name, p.Sends, p.Messages, fmtBytes(p.Bytes), p.Receipts, usOf(p.Latencies, p.P50US), usOf(p.Latencies, p.P99US), p.Topic))
		}
	}
	if len(r.Consumers) > 0 {
		section("Consumers", fmt.Sprintf("%-16s %-16s %9s %9s %8s %8s  %s", "Name", "Subscription", "Messages", "Acks", "Redeliv.", "Permits", "Topic"))
		for _, c := range r.Consumers {
			out = append(out, fmt.Sprintf("%-16s %-16s %9d %9d %8d %8d  %s", c.Name, c.Subscription, c.Messages, c.Acks, c.Redelivered, c.Permits, c.Topic))
		}
	}
	for i, l := range out {
		if !strings.HasPrefix(l, "\x1b") {
			out[i] = fit(l, m.w)
		}
	}
	return out
}

// reportEvery bounds how often the statistics are recomputed while frames
// arrive (a report sorts every latency seen).
const reportEvery = time.Second

// refreshReport recomputes the statistics when frames arrived since, at
// most once every reportEvery.
func (m *Model) refreshReport() {
	n := m.x.Len()
	if m.report != nil && (n == m.reportAt || time.Since(m.reportTime) < reportEvery) {
		return
	}
	m.report, m.reportAt, m.reportTime = m.x.report(), n, time.Now()
}

// usOf is us(v), or "-" when v was computed from no sample (n == 0).
func usOf(n int, v int64) string {
	if n == 0 {
		return "-"
	}
	return fmtLatency(time.Duration(v) * time.Microsecond)
}
