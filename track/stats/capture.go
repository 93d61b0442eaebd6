package stats

// AddCapture adds the capture counters of an input's interfaces to the
// Capture table (the caller reads them from the input:
// capture.Source.InterfaceStats). SpanUS is computed from Start and End
// when both are set.
func (c *Collector) AddCapture(rows ...CaptureRow) {
	for _, r := range rows {
		if r.Start != nil && r.End != nil && r.SpanUS == nil {
			us := r.End.Sub(*r.Start).Microseconds()
			r.SpanUS = &us
		}
		c.capture = append(c.capture, r)
	}
}
