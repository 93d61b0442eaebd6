package diff

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// conform returns t reduced to rules: the data of names now ignored but
// recorded is dropped, and recorded secrets are redacted unless
// showSecrets. t itself is not modified.
func conform(t *Transcript, rules map[string]Mode, showSecrets bool) (*Transcript, error) {
	if t == nil {
		return nil, fmt.Errorf("no transcript")
	}
	drop, err := reconcile(t.Rules, rules)
	if err != nil {
		return nil, err
	}
	redact := t.SecretsShown && !showSecrets
	if len(drop) == 0 && !redact {
		return t, nil
	}
	dropSet := map[string]bool{}
	for _, n := range drop {
		dropSet[n] = true
	}
	// Listed entries asked summarised are reduced to their count.
	entries := dropSet[PseudoEntries] && rules[PseudoEntries] == Summarise
	out := &Transcript{Format: t.Format, Rules: rules, SecretsShown: t.SecretsShown && !redact,
		Outcomes: map[string]int{}, Problems: t.Problems, Latency: t.Latency}
	dropType := func(typ string) bool {
		return (dropSet[PseudoKeepalive] && (typ == "PING" || typ == "PONG")) ||
			(dropSet[PseudoAckFrames] && (typ == "ACK" || typ == "ACK_RESPONSE"))
	}
	for k, v := range t.Outcomes {
		req, _, _ := strings.Cut(k, " -> ")
		if !dropType(req) {
			out.Outcomes[k] = v
		}
	}
	for _, s := range t.Streams {
		ns := Stream{Key: s.Key}
		if dropSet[PseudoServer] && strings.HasPrefix(s.Key, "connection #") {
			prefix, n, _ := keyParts(s.Key)
			ns.Key = fmt.Sprintf("%s #%d", prefix, n)
		}
		for _, c := range s.Commands {
			if dropType(c.Type) {
				continue
			}
			if len(c.Fields) > 0 {
				f, err := filterFields(c, dropSet, entries, redact)
				if err != nil {
					return nil, fmt.Errorf("stream %q: %w", s.Key, err)
				}
				c.Fields = f
			}
			ns.Commands = append(ns.Commands, c)
		}
		out.Streams = append(out.Streams, ns)
	}
	out.fill()
	return out, nil
}

// filterFields drops the members a rule now ignores from a command's
// fields, at any depth, reduces listed batch entries to their count when
// entries is set, and redacts secrets when redact is set.
func filterFields(c Command, drop map[string]bool, entries, redact bool) (json.RawMessage, error) {
	summary := c.Type == "ACK" && bytes.HasPrefix(c.Fields, []byte(`{"summary":true`))
	edit := func(key string, v json.RawMessage) (json.RawMessage, bool) {
		switch {
		case key == PseudoEntries && entries:
			return countEntries(v), true
		case drop[key]:
			return nil, false
		case drop[PseudoMessageID] && (key == "ledger_entry" || key == "ledgerId" || key == "entryId"):
			return nil, false
		case drop[PseudoMessageID] && summary && (key == "individual" || key == "cumulative"):
			return json.RawMessage("true"), true
		case redact && secret.Name(key):
			return redactValue(v), true
		}
		return v, true
	}
	out, err := walkJSON(c.Fields, edit, 0)
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", c.Type, err)
	}
	return out, nil
}

// countEntries reduces a listed entries array to {"count":N}; a value that
// is already a summary is kept.
func countEntries(v json.RawMessage) json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil {
		return v
	}
	return json.RawMessage(`{"count":` + strconv.Itoa(len(list)) + `}`)
}

// redactValue replaces a recorded secret (text or "base64:…") by the
// redaction marker of its length.
func redactValue(v json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return v
	}
	n := len(s)
	if b64, ok := strings.CutPrefix(s, "base64:"); ok {
		if raw, err := base64.StdEncoding.DecodeString(b64); err == nil {
			n = len(raw)
		}
	}
	return appendString(nil, secret.Marker(n))
}

// walkJSON rewrites raw JSON, keeping member order, passing every object
// member through edit (which may drop or replace it).
func walkJSON(raw json.RawMessage, edit func(string, json.RawMessage) (json.RawMessage, bool), depth int) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return raw, nil
	}
	if depth > 64 {
		return nil, fmt.Errorf("fields nested too deep")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("bad fields: %w", err)
	}
	isObj := open == json.Delim('{')
	out := []byte{raw[0]}
	first := true
	for dec.More() {
		key := ""
		if isObj {
			tk, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("bad fields: %w", err)
			}
			key, _ = tk.(string)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("bad fields: %w", err)
		}
		if isObj {
			nv, keep := edit(key, v)
			if !keep {
				continue
			}
			v = nv
		}
		v, err = walkJSON(v, edit, depth+1)
		if err != nil {
			return nil, err
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		if isObj {
			out = appendString(out, key)
			out = append(out, ':')
		}
		out = append(out, v...)
	}
	if isObj {
		out = append(out, '}')
	} else {
		out = append(out, ']')
	}
	return out, nil
}
