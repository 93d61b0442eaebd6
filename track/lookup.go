package track

import (
	"strings"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// maxRedirects is the longest redirect chain accepted before it is
// reported as a loop (the Java client gives up after a similar count).
const maxRedirects = 8

// chain is a topic's LOOKUP redirect chain: the brokers visited and the
// response that redirected last.
type chain struct {
	visited []string
	last    Link
	pending bool // a redirect was answered and not yet followed
	// authoritative is the last redirect's authoritative flag, which the
	// LOOKUP following it must repeat.
	authoritative bool
}

// onLookup links a LOOKUP to the redirect that caused it.
func (t *Tracker) onLookup(c *conn, f *decode.Frame, info *Info, p *pending) {
	if len(t.chains) == 0 {
		return // no redirect pending: no topic to hash
	}
	ch := t.chains[p.topic]
	if ch == nil || !ch.pending {
		return
	}
	ch.pending = false
	info.Redirect = &ch.last
	if got := f.Command.GetLookupTopic().GetAuthoritative(); got != ch.authoritative {
		t.problem(info, CodeLookupAuthoritative, "LOOKUP of "+p.topic+" after a redirect with authoritative="+boolText(ch.authoritative)+" sets authoritative="+boolText(got))
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// onLookupResponse extends or ends the topic's redirect chain.
func (t *Tracker) onLookupResponse(c *conn, f *decode.Frame, info *Info, req *pending) {
	r := f.Command.GetLookupTopicResponse()
	if r.GetResponse() != pulsarapi.CommandLookupTopicResponse_Redirect {
		if len(t.chains) > 0 {
			delete(t.chains, req.topic)
		}
		return
	}
	ch := t.chains[req.topic]
	if ch == nil {
		ch = &chain{}
		t.chains[req.topic] = ch
	}
	// The request went to this connection's broker.
	if server := c.s.Conn.Server.String(); len(ch.visited) == 0 || ch.visited[len(ch.visited)-1] != server {
		ch.visited = append(ch.visited, server)
	}
	target := hostPort(r.GetBrokerServiceUrl())
	if target == "" {
		target = hostPort(r.GetBrokerServiceUrlTls())
	}
	loop := false
	for _, v := range ch.visited {
		if v == target {
			loop = true
		}
	}
	if loop || len(ch.visited) > maxRedirects {
		t.problem(info, CodeRedirectLoop, "redirect of "+req.topic+" to "+target+" after visiting "+strings.Join(ch.visited, " → "))
		delete(t.chains, req.topic)
		return
	}
	ch.visited = append(ch.visited, target)
	ch.last = Link{N: f.N, Type: f.Type, Latency: max(f.Time.Sub(req.t), 0)}
	ch.pending = true
	ch.authoritative = r.GetAuthoritative()
}

// hostPort strips the scheme and path of a pulsar:// or pulsar+ssl:// URL.
func hostPort(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		u = u[:i]
	}
	return u
}
