package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Fault kinds.
const (
	KindDrop           = "drop"
	KindReorder        = "reorder"
	KindDuplicate      = "duplicate"
	KindCutStart       = "cut-start"
	KindCorruptPayload = "corrupt-payload"
	KindBadTotalSize   = "bad-totalsize"
	KindPortRewrite    = "port-rewrite"
	KindIPv6           = "ipv6"
	KindVLAN           = "vlan"
	KindPcapng         = "pcapng"
	KindFixChecksums   = "fix-checksums"
	KindReuse          = "reuse"
	KindConflict       = "conflict"
	KindSnaplen        = "snaplen"
)

// segmentKeys are the selector keys of faults that target a segment.
func segmentKeys() []string {
	return []string{"packet", "conn", "dir", "offset", "frame", "type", "nth", "seg"}
}

// frameKeys are the selector keys of faults that target a frame.
func frameKeys() []string { return []string{"conn", "dir", "frame", "type", "nth"} }

// allowedKeys lists the option keys of each fault kind.
func allowedKeys(kind string) ([]string, bool) {
	switch kind {
	case KindDrop:
		return segmentKeys(), true
	case KindReorder, KindDuplicate:
		return append(segmentKeys(), "after"), true
	case KindCutStart:
		return append(frameKeys(), "into"), true
	case KindCorruptPayload:
		return append(frameKeys(), "at", "xor"), true
	case KindBadTotalSize:
		return append(frameKeys(), "value"), true
	case KindPortRewrite:
		return []string{"from", "to"}, true
	case KindIPv6:
		return []string{"mode"}, true
	case KindVLAN:
		return []string{"id", "pcp"}, true
	case KindPcapng, KindFixChecksums:
		return nil, true
	case KindReuse:
		return []string{"conn", "close", "gap"}, true
	case KindConflict:
		return append(segmentKeys(), "at", "xor"), true
	case KindSnaplen:
		return []string{"len"}, true
	}
	return nil, false
}

// Spec is one parsed fault specification: KIND[:key=value,...].
type Spec struct {
	// Kind is the fault kind, e.g. "drop".
	Kind string
	// Args are the options, by key.
	Args map[string]string
	// Raw is the spec as written.
	Raw string
}

// ParseSpec parses a fault spec such as "corrupt-payload:type=SEND,nth=2".
func ParseSpec(s string) (Spec, error) {
	kind, rest, _ := strings.Cut(s, ":")
	sp := Spec{Kind: kind, Args: map[string]string{}, Raw: s}
	keys, ok := allowedKeys(kind)
	if !ok {
		return sp, fmt.Errorf("fault %q: unknown kind %q", s, kind)
	}
	if rest == "" {
		return sp, nil
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return sp, fmt.Errorf("fault %q: option %q is not key=value", s, kv)
		}
		if !slices.Contains(keys, k) {
			return sp, fmt.Errorf("fault %q: unknown option %q (allowed: %s)", s, k, strings.Join(keys, ", "))
		}
		if _, dup := sp.Args[k]; dup {
			return sp, fmt.Errorf("fault %q: option %q given twice", s, k)
		}
		sp.Args[k] = v
	}
	return sp, nil
}

// has reports whether the option key was given.
func (sp Spec) has(key string) bool {
	_, ok := sp.Args[key]
	return ok
}

// int returns the integer option key (decimal or 0x hex), or def.
func (sp Spec) int(key string, def int64) (int64, error) {
	s, ok := sp.Args[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("fault %q: option %s: %w", sp.Raw, key, err)
	}
	return n, nil
}

// str returns the string option key, or def.
func (sp Spec) str(key, def string) string {
	if s, ok := sp.Args[key]; ok {
		return s
	}
	return def
}

// commandTypeByName parses a BaseCommand type name such as "SEND".
func commandTypeByName(s string) (pulsarapi.BaseCommand_Type, error) {
	v, ok := pulsarapi.BaseCommand_Type_value[strings.ToUpper(s)]
	if !ok {
		return 0, fmt.Errorf("unknown command type %q", s)
	}
	return pulsarapi.BaseCommand_Type(v), nil
}
