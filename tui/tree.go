package tui

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pulsarscope/pulsarscope/render"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"github.com/pulsarscope/pulsarscope/decode/secret"
)

// node is one line of the detail tree: a label and, when known, the byte
// range [start, end) of the frame it was decoded from.
type node struct {
	label      string
	start, end int
	kids       []*node
	open       bool
	problem    bool
}

func leaf(label string, start, end int) *node { return &node{label: label, start: start, end: end} }

// wireTree decodes the protobuf message in b (at frame offset base) field by
// field with its descriptor, so that every field knows its bytes. Secret
// fields are shown redacted unless showSecrets (their bytes are masked in
// the hex pane by frameTree's ranges, render.SecretRanges).
func wireTree(b []byte, base int, md protoreflect.MessageDescriptor, showSecrets bool) []*node {
	var out []*node
	pos := 0
	for pos < len(b) {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			out = append(out, leaf(fmt.Sprintf("(invalid protobuf at +%d)", pos), base+pos, base+len(b)))
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[pos+n:])
		if m < 0 {
			out = append(out, leaf(fmt.Sprintf("(truncated field %d)", num), base+pos, base+len(b)))
			break
		}
		start, vstart, end := pos, pos+n, pos+n+m
		pos = end
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			out = append(out, leaf(fmt.Sprintf("unknown field %d (wire type %d)", num, typ), base+start, base+end))
			continue
		}
		val := b[vstart:end]
		name := string(fd.Name())
		if typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(val)
			if k < 0 {
				out = append(out, leaf(name+": (bad length)", base+start, base+end))
				continue
			}
			inner := base + vstart + (k - len(v))
			switch {
			case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
				kids := wireTree(v, inner, fd.Message(), showSecrets)
				nd := &node{label: name + summaryOf(fd.Message(), kids), start: base + start, end: base + end, kids: kids}
				out = append(out, nd)
			case secret.Field(fd) && !showSecrets:
				out = append(out, leaf(name+": "+secret.Marker(len(v)), base+start, base+end))
			case fd.Kind() == protoreflect.StringKind:
				out = append(out, leaf(name+": "+strconv.Quote(string(v)), base+start, base+end))
			case fd.Kind() == protoreflect.BytesKind:
				out = append(out, leaf(name+": "+bytesText(v), base+start, base+end))
			default: // packed repeated scalars
				nd := &node{label: name + ": [packed]", start: base + start, end: base + end}
				p := 0
				for p < len(v) {
					s, w := packedValue(fd, v[p:])
					if w <= 0 {
						break
					}
					nd.kids = append(nd.kids, leaf(s, inner+p, inner+p+w))
					p += w
				}
				nd.label = fmt.Sprintf("%s: [%d values]", name, len(nd.kids))
				out = append(out, nd)
			}
			continue
		}
		out = append(out, leaf(name+": "+scalarText(fd, typ, val), base+start, base+end))
	}
	return out
}

// summaryOf shortens a message node's label: message ids as ledger:entry.
func summaryOf(md protoreflect.MessageDescriptor, kids []*node) string {
	if md.Name() == "MessageIdData" {
		var l, e string
		for _, k := range kids {
			if v, ok := strings.CutPrefix(k.label, "ledgerId: "); ok {
				l = v
			}
			if v, ok := strings.CutPrefix(k.label, "entryId: "); ok {
				e = v
			}
		}
		return " " + l + ":" + e
	}
	return ""
}

func bytesText(v []byte) string {
	printable := len(v) <= 64
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
	}
	if printable {
		return strconv.Quote(string(v))
	}
	if len(v) <= 16 {
		return "0x" + hex.EncodeToString(v)
	}
	return fmt.Sprintf("%d bytes", len(v))
}

func scalarText(fd protoreflect.FieldDescriptor, typ protowire.Type, val []byte) string {
	switch typ {
	case protowire.VarintType:
		v, _ := protowire.ConsumeVarint(val)
		return varintText(fd, v)
	case protowire.Fixed32Type:
		v, _ := protowire.ConsumeFixed32(val)
		switch fd.Kind() {
		case protoreflect.FloatKind:
			return strconv.FormatFloat(float64(math.Float32frombits(v)), 'g', -1, 32)
		case protoreflect.Sfixed32Kind:
			return strconv.FormatInt(int64(int32(v)), 10)
		}
		return strconv.FormatUint(uint64(v), 10)
	case protowire.Fixed64Type:
		v, _ := protowire.ConsumeFixed64(val)
		switch fd.Kind() {
		case protoreflect.DoubleKind:
			return strconv.FormatFloat(math.Float64frombits(v), 'g', -1, 64)
		case protoreflect.Sfixed64Kind:
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatUint(v, 10)
	}
	return fmt.Sprintf("(wire type %d)", typ)
}

func varintText(fd protoreflect.FieldDescriptor, v uint64) string {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.FormatBool(v != 0)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(protoreflect.EnumNumber(int32(v))); ev != nil {
			return string(ev.Name())
		}
		return strconv.FormatInt(int64(int32(v)), 10)
	case protoreflect.Int32Kind:
		return strconv.FormatInt(int64(int32(v)), 10)
	case protoreflect.Int64Kind:
		return strconv.FormatInt(int64(v), 10)
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return strconv.FormatInt(protowire.DecodeZigZag(v), 10)
	}
	return strconv.FormatUint(v, 10)
}

func packedValue(fd protoreflect.FieldDescriptor, b []byte) (string, int) {
	switch fd.Kind() {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		if len(b) < 4 {
			return "", -1
		}
		return scalarText(fd, protowire.Fixed32Type, b[:4]), 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		if len(b) < 8 {
			return "", -1
		}
		return scalarText(fd, protowire.Fixed64Type, b[:8]), 8
	}
	v, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return "", -1
	}
	return varintText(fd, v), n
}

// frameTree builds the detail tree of frame f (decoded with KeepRaw): one
// node per header field, protobuf field, checksum and payload part, each
// with its byte range, then ctx's nodes and the problems.
func frameTree(f *decode.Frame, ctx frameContext, showSecrets bool) (roots []*node, secrets [][2]int) {
	regions := map[string]decode.Region{}
	for _, r := range f.Regions {
		regions[r.Name] = r
	}
	dir := "client → broker"
	if f.Dir != 0 {
		dir = "broker → client"
	}
	top := &node{label: fmt.Sprintf("Frame %d: %d bytes, connection #%d %s, stream offset %d", f.N, f.Size, ctx.conn, dir, f.Offset),
		start: 0, end: len(f.Raw), open: true}
	if r, ok := regions[decode.RegionTotalSize]; ok {
		top.kids = append(top.kids, leaf(fmt.Sprintf("totalSize: %d", f.TotalSize), r.Start, r.End))
	}
	if r, ok := regions[decode.RegionCommandSize]; ok {
		top.kids = append(top.kids, leaf(fmt.Sprintf("commandSize: %d", f.CommandSize), r.Start, r.End))
	}
	roots = append(roots, top)
	if r, ok := regions[decode.RegionCommand]; ok && r.End <= len(f.Raw) {
		kids := wireTree(f.Raw[r.Start:r.End], r.Start, (&pulsarapi.BaseCommand{}).ProtoReflect().Descriptor(), showSecrets)
		roots = append(roots, &node{label: "Command: " + f.Type.String(), start: r.Start, end: r.End, kids: kids, open: true})
		for _, k := range kids {
			k.open = true
		}
	}
	if r, ok := regions[decode.RegionBrokerEntryMetadata]; ok && r.End <= len(f.Raw) {
		nd := &node{label: "Broker entry metadata", start: r.Start, end: r.End, open: true}
		if r.End-r.Start > 6 {
			nd.kids = wireTree(f.Raw[r.Start+6:r.End], r.Start+6, (&pulsarapi.BrokerEntryMetadata{}).ProtoReflect().Descriptor(), showSecrets)
		}
		roots = append(roots, nd)
	}
	if r, ok := regions[decode.RegionMagic]; ok {
		roots = append(roots, leaf("Magic: 0x0e01 (checksum follows)", r.Start, r.End))
	}
	if r, ok := regions[decode.RegionChecksum]; ok && f.Checksum != nil {
		verdict := "ok"
		if !f.Checksum.OK() {
			verdict = "BAD"
		}
		nd := leaf(fmt.Sprintf("Checksum: stored 0x%08x computed 0x%08x %s", f.Checksum.Stored, f.Checksum.Computed, verdict), r.Start, r.End)
		nd.problem = !f.Checksum.OK()
		roots = append(roots, nd)
	}
	if r, ok := regions[decode.RegionMetadataSize]; ok && r.End <= len(f.Raw) && r.End-r.Start == 4 {
		roots = append(roots, leaf(fmt.Sprintf("Metadata size: %d", binary.BigEndian.Uint32(f.Raw[r.Start:r.End])), r.Start, r.End))
	}
	if r, ok := regions[decode.RegionMetadata]; ok && r.End <= len(f.Raw) {
		kids := wireTree(f.Raw[r.Start:r.End], r.Start, (&pulsarapi.MessageMetadata{}).ProtoReflect().Descriptor(), showSecrets)
		roots = append(roots, &node{label: "Message metadata", start: r.Start, end: r.End, kids: kids, open: true})
	}
	if r, ok := regions[decode.RegionPayload]; ok {
		label := fmt.Sprintf("Payload: %d bytes", r.End-r.Start)
		if f.Encrypted() {
			label += " (encrypted)"
		}
		if f.Uncompressed != nil && len(f.Uncompressed) != len(f.Payload) {
			label += fmt.Sprintf(" (%d uncompressed)", len(f.Uncompressed))
		}
		nd := &node{label: label, start: r.Start, end: r.End}
		if len(f.Entries) == 0 && f.Uncompressed != nil {
			nd.kids = append(nd.kids, leaf("data: "+payloadText(f.Uncompressed), -1, -1))
		}
		for i, e := range f.Entries {
			en := &node{label: fmt.Sprintf("Entry %d: %d bytes %s", i, len(e.Payload), payloadText(e.Payload)), start: -1, end: -1}
			if b := e.RawMetadata; len(b) > 0 || e.Metadata != nil {
				var err error
				if len(b) == 0 {
					b, err = marshalMeta(e.Metadata)
				}
				if err == nil {
					en.kids = wireTree(b, -1<<30, e.Metadata.ProtoReflect().Descriptor(), showSecrets)
					markNoRange(en.kids)
				}
			}
			nd.kids = append(nd.kids, en)
		}
		roots = append(roots, nd)
	}
	roots = append(roots, ctx.nodes...)
	if !showSecrets {
		// every byte that holds a secret, wherever it lies in the frame,
		// as the -x dump masks it
		secrets = render.SecretRanges(nil, f)
	}
	if len(f.Problems) > 0 {
		pn := &node{label: fmt.Sprintf("Problems (%d)", len(f.Problems)), start: -1, end: -1, open: true, problem: true}
		for _, p := range f.Problems {
			k := leaf(p.Code+": "+p.Detail, -1, -1)
			k.problem = true
			pn.kids = append(pn.kids, k)
		}
		roots = append(roots, pn)
	}
	return roots, secrets
}

func markNoRange(ns []*node) {
	for _, n := range ns {
		n.start, n.end = -1, -1
		markNoRange(n.kids)
	}
}

func payloadText(p []byte) string {
	const max = 48
	s := p
	if len(s) > max {
		s = s[:max]
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return "(binary)"
		}
	}
	q := strconv.Quote(string(s))
	if len(p) > max {
		q += "…"
	}
	return q
}

// frameContext is what the index knows about a frame beyond its bytes:
// extra tree nodes (pair, entity) and its connection.
type frameContext struct {
	conn  int32
	nodes []*node
}
