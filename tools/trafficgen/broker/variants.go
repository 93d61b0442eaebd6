package broker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// replyLater queues a reply after d without holding up other replies; b.mu
// is held by the caller and taken again when the delay has passed.
func (c *conn) replyLater(d time.Duration, f outFrame) {
	c.note("reply to %s delayed by %s", f.answers, d)
	time.AfterFunc(d, func() {
		c.b.mu.Lock()
		defer c.b.mu.Unlock()
		c.send(f)
	})
}

// failFirst answers the first PRODUCER or SUBSCRIBE named in
// Config.FailFirst with an ERROR and reports whether it did; b.mu is held.
func (c *conn) failFirst(bc *pulsarapi.BaseCommand) bool {
	t := bc.GetType().String()
	code, ok := c.b.cfg.FailFirst[t]
	if !ok || c.b.failedFirst[t] {
		return false
	}
	var rid uint64
	switch bc.GetType() {
	case pulsarapi.BaseCommand_PRODUCER:
		rid = bc.GetProducer().GetRequestId()
	case pulsarapi.BaseCommand_SUBSCRIBE:
		rid = bc.GetSubscribe().GetRequestId()
	default:
		return false
	}
	if c.b.failedFirst == nil {
		c.b.failedFirst = map[string]bool{}
	}
	c.b.failedFirst[t] = true
	c.fail(t, rid, code, "scripted: first "+t+" fails")
	return true
}

// ParseDelay reads a -delay value "TYPE=DURATION" (e.g. LOOKUP=50ms) into m.
func ParseDelay(m map[string]time.Duration, v string) error {
	t, ds, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("delay %q: want TYPE=DURATION, e.g. LOOKUP=50ms", v)
	}
	t = strings.ToUpper(strings.TrimSpace(t))
	if _, known := pulsarapi.BaseCommand_Type_value[t]; !known {
		return fmt.Errorf("delay %q: %q is not a command type", v, t)
	}
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil || d < 0 {
		return fmt.Errorf("delay %q: bad duration", v)
	}
	m[t] = d
	return nil
}

// ParseFailFirst reads a -fail-first value "TYPE=ERROR" (TYPE PRODUCER or
// SUBSCRIBE, ERROR a ServerError name, e.g. PRODUCER=ServiceNotReady) into m.
func ParseFailFirst(m map[string]pulsarapi.ServerError, v string) error {
	t, es, ok := strings.Cut(v, "=")
	t = strings.ToUpper(strings.TrimSpace(t))
	if !ok || (t != "PRODUCER" && t != "SUBSCRIBE") {
		return fmt.Errorf("fail-first %q: want PRODUCER=ERROR or SUBSCRIBE=ERROR", v)
	}
	code, known := pulsarapi.ServerError_value[strings.TrimSpace(es)]
	if !known {
		names := make([]string, 0, len(pulsarapi.ServerError_value))
		for n := range pulsarapi.ServerError_value {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("fail-first %q: %q is not a ServerError (one of %s)", v, es, strings.Join(names, ", "))
	}
	m[t] = pulsarapi.ServerError(code)
	return nil
}
