package capture

import (
	"time"

	"github.com/gopacket/gopacket/pcapgo"
)

// InterfaceStats are the capture counters of one interface: those of a
// pcapng Interface Statistics Block (ISB), or a live capture's kernel
// counters (LiveStats).
type InterfaceStats struct {
	// Index is the pcapng interface number (0 for a live capture).
	Index int
	// Name is the interface's name (if_name); "" when the file names none.
	Name string
	// Received is the number of packets received (isb_ifrecv; for a live
	// capture the kernel's count of packets that passed the filter,
	// dropped ones included), Dropped the number dropped by the kernel or
	// its capture buffer (isb_ifdrop). nil when not recorded.
	Received, Dropped *uint64
	// Start and End bound the span the counters cover (isb_starttime,
	// isb_endtime); zero when not recorded.
	Start, End time.Time
}

// interfaceStatser is a RawSource that knows its capture counters.
type interfaceStatser interface {
	InterfaceStats() []InterfaceStats
}

// InterfaceStats returns the capture counters the input holds, nil when it
// has none. For a pcapng file they are the Interface Statistics Blocks read
// so far, the last one of each interface of the current section (dumpcap
// and pulsarscope write them at the end of the file, so call it once Next
// has returned io.EOF); a pcap file has no place for them. For a live
// capture they are the kernel's counters now.
func (s *Source) InterfaceStats() []InterfaceStats { return InterfaceStatsOf(s.raw) }

// InterfaceStatsOf returns the capture counters of raw, nil when it has
// none: for RawSources that wrap another one and pass its counters on.
func InterfaceStatsOf(raw RawSource) []InterfaceStats {
	if r, ok := raw.(interfaceStatser); ok {
		return r.InterfaceStats()
	}
	return nil
}

// InterfaceStats returns the counters of the pcapng interfaces that had an
// Interface Statistics Block (pcapgo.NgReader parses them into the
// interface's Statistics as it looks for the next packet; a field the
// block did not hold is NgNoValue64).
func (f *fileRaw) InterfaceStats() []InterfaceStats {
	if f.ng == nil {
		return nil
	}
	var out []InterfaceStats
	for i := 0; i < f.ng.NInterfaces(); i++ {
		ifc, err := f.ng.Interface(i)
		if err != nil {
			continue
		}
		st := ifc.Statistics
		if st.LastUpdate.IsZero() {
			continue // no ISB for this interface: the reader sets LastUpdate from every one
		}
		out = append(out, InterfaceStats{Index: i, Name: ifc.Name,
			Start: isbTime(st.StartTime, ifc.TimestampResolution), End: isbTime(st.EndTime, ifc.TimestampResolution),
			Received: ngValue(st.PacketsReceived), Dropped: ngValue(st.PacketsDropped)})
	}
	return out
}

// isbTime corrects an ISB time that dumpcap wrote in microseconds: dumpcap
// (4.0 and since) writes isb_starttime and isb_endtime in microseconds
// whatever the interface's if_tsresol, so that with nanosecond interfaces
// (Linux) they read as dates in January 1970. A time before 2000 in a
// resolution finer than microseconds that is a date between 2000 and 2200
// when read as microseconds is taken as microseconds.
func isbTime(t time.Time, res pcapgo.NgResolution) time.Time {
	e := int(res.Exponent())
	if t.IsZero() || res.Binary() || e <= 6 || e > 9 || t.Year() >= 2000 {
		return t
	}
	raw := t.UnixNano()
	for ; e < 9; e++ {
		raw /= 10 // the value as written, in units of 10^-e s
	}
	if us := time.UnixMicro(raw).UTC(); us.Year() >= 2000 && us.Year() < 2200 {
		return us
	}
	return t
}

func ngValue(v uint64) *uint64 {
	if v == pcapgo.NgNoValue64 {
		return nil // absent, or "unknown" as dumpcap writes when pcap_stats fails
	}
	return &v
}

// InterfaceStats returns the kernel's counters as one interface (the live
// capture's), or nil when they cannot be read.
func (l *Live) InterfaceStats() []InterfaceStats {
	st, err := l.Stats()
	if err != nil {
		return nil
	}
	return []InterfaceStats{{Name: l.Name(), Received: &st.Received, Dropped: &st.Dropped, Start: st.Start, End: st.End}}
}
