package decode

import (
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Decoder decodes and validates single frames. It keeps buffers, and
// unless Options.Retain the Frame it returns, from one call to the next.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	opts  Options
	unm   proto.UnmarshalOptions
	check checker

	// What the returned Frame points into when !opts.Retain: own, or the
	// slot of a parallel batch.
	fb  *frameBufs
	own frameBufs

	smm        *pulsarapi.SingleMessageMetadata // scratch, LazyEntryMetadata
	shapeBuf   []uint32                         // scratch of unmarshalShaped
	merged     int                              // messages merged by unmarshalShaped (tests)
	replayed   int                              // of which by a mergeTemplate (tests)
	tmplBuilds int                              // mergeTemplates made (tests)
	ptrBuf     []unsafe.Pointer                 // scratch of mergeTemplate.apply
	// Templates of the reused messages: per command type of shapedTypes,
	// and the metadata's last.
	tmpl    [len(shapedTypes) + 1]templates
	smmTmpl templateCache // shapes of the last clean entry metadata
	subs    []string

	zstd *zstd.Decoder
	zlib io.ReadCloser

	// ackPool holds the ids of ACKs delivered (decodeAck) that a slot
	// gave back, for the next slot to decode an ACK into (nil: none).
	ackPool *sync.Pool

	// Wire tables of the four decoded messages, built on first use
	// (schema).
	cmdSchema, mdSchema, smmSchema, bemSchema *wireSchema
	// Go struct layouts of the reused messages, built on first use
	// (layout).
	cmdLayout, mdLayout *goLayout
}

// frameBufs are the Frame and buffers a Decoder reuses from one frame to
// the next unless Options.Retain.
type frameBufs struct {
	frame   Frame
	cmd     *pulsarapi.BaseCommand // commands of other types, and big ones
	ackCmd  *pulsarapi.BaseCommand // an ACK decoded by decodeAck
	acks    *ackIDs                // its ids
	cmds    [len(shapedTypes)]*shaped[*pulsarapi.BaseCommand]
	md      shaped[*pulsarapi.MessageMetadata]
	bem     *pulsarapi.BrokerEntryMetadata
	sum     Checksum
	dbuf    []byte
	entries []Entry
}

// Reuse by shape (unmarshalShaped) is for the commands of every message
// and their metadata, small: what a slot of the parallel decoder keeps is
// then bounded (7 commands and a metadata of at most shapedMaxBytes, with
// shapes of at most shapedMaxTokens), whatever a hostile capture holds.
// Anything else is decoded into the one message reset every time.
const (
	shapedMaxBytes  = 1024
	shapedMaxTokens = 64
)

// shapedTypes are the command types with a reused message each, and
// shapedIndex their index there plus one (0: none).
var (
	shapedTypes = [...]pulsarapi.BaseCommand_Type{
		pulsarapi.BaseCommand_SEND, pulsarapi.BaseCommand_SEND_RECEIPT, pulsarapi.BaseCommand_MESSAGE,
		pulsarapi.BaseCommand_FLOW, pulsarapi.BaseCommand_PING, pulsarapi.BaseCommand_PONG,
		pulsarapi.BaseCommand_ACK_RESPONSE,
	}
	shapedIndex = func() (x [128]uint8) {
		for i, t := range shapedTypes {
			x[t] = uint8(i + 1)
		}
		return x
	}()
)

// shaped is a message a Decoder reuses, with the wire shape of what it
// holds (see wireSchema.shape); ok is false when it holds something else
// (not clean, or decoded by another path).
type shaped[M proto.Message] struct {
	m     M
	shape []uint32
	ok    bool
	// of says m holds a message that matched template of at version
	// ofVer: its shape, and its enum and fixed values (a shape
	// comparison and their stores saved).
	of    *mergeTemplate
	ofVer uint64
}

// mergeOpts decodes into a message without resetting it first.
var mergeOpts = proto.UnmarshalOptions{Merge: true, AllowPartial: true}

// unmarshalShaped decodes b into s.m. A message of the same wire shape as
// the one s.m holds (the same tags at every level, no repeated field,
// clean) is merged into it: each of its fields is overwritten, so nothing
// of the earlier message is left, and nothing is allocated but strings
// and bytes (protobuf's Unmarshal resets the message and allocates every
// optional field and nested message anew). A message that matches one of
// tm, the templates of recent messages of its kind (mergeTemplate: the
// same bytes but for varint values), is merged without protobuf, by
// storing its varints into s.m when s.m holds the template's shape.
// Otherwise s.m is reset and decoded as unmarshal does. clean says b is
// clean (wireSchema.clean): complete, without unknown fields, nothing for
// validate to find. ext is b and the bytes that follow it in memory.
// replay false skips the templates (the caller tried them).
func unmarshalShaped[M proto.Message](d *Decoder, b, ext []byte, s *shaped[M], tm *templates, typ int32, replay bool) (clean, complete bool, err error) {
	if replay { // false: the caller tried tm already, and none matched
		if done, clean, complete, err := replayShaped(d, b, ext, s, tm, typ); done {
			return clean, complete, err
		}
	}
	var ok bool
	d.shapeBuf, ok = d.schema(s.m).shape(b, 0, d.shapeBuf[:0])
	if ok && s.ok && slices.Equal(d.shapeBuf, s.shape) {
		s.of = nil // b did not match it: another enum value, maybe
		if mergeOpts.Unmarshal(b, s.m) == nil {
			d.merged++
			d.newTemplate(s.m, b, tm)
			return true, true, nil
		}
	}
	complete, err = d.unmarshal(b, s.m)
	s.ok = ok && complete && err == nil
	s.of = nil
	if s.ok {
		s.shape = append(s.shape[:0], d.shapeBuf...)
		d.newTemplate(s.m, b, tm)
	}
	return s.ok, complete, err
}

// replayShaped is unmarshalShaped by a template of tm, when one matches
// b (done). typ, for a command, is the command type b must have, with its
// one sub-command: a template of a command of another type, or with
// other sub-commands, is not used; -1 for metadata.
func replayShaped[M proto.Message](d *Decoder, b, ext []byte, s *shaped[M], tm *templates, typ int32) (done, clean, complete bool, err error) {
	for i, t := range tm.t {
		if t == nil || !t.valid || t.cmdType != typ {
			continue
		}
		if _, _, ok := t.match(b, ext); !ok {
			continue
		}
		if i == 1 {
			tm.t[0], tm.t[1] = t, tm.t[0]
		}
		t.hits++
		held := s.ok && s.of == t && s.ofVer == t.ver
		if !s.ok || !held && !slices.Equal(s.shape, t.shape) {
			// s.m holds another shape: b, of the template's shape (and
			// so clean), is decoded into it afresh.
			complete, err = d.unmarshal(b, s.m)
			s.ok = complete && err == nil
			s.of = nil
			if s.ok {
				s.shape = append(s.shape[:0], t.shape...)
				s.of, s.ofVer = t, t.ver
			}
			return true, s.ok, complete, err
		}
		s.of, s.ofVer = t, t.ver
		var ok bool
		if d.ptrBuf, ok = t.apply(b, reflectPointer(s.m), held, d.ptrBuf); ok {
			d.merged++
			d.replayed++
			return true, true, true, nil
		}
		// Not expected (s.m holds the template's shape): protobuf's merge.
		if mergeOpts.Unmarshal(b, s.m) == nil {
			d.merged++
			return true, true, true, nil
		}
		return false, false, false, nil
	}
	return false, false, false, nil
}

// reflectPointer is the address of the struct m points to.
func reflectPointer(m proto.Message) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

// newTemplate makes b, clean, of shape d.shapeBuf and just decoded into
// m, the first of tm in place of the least recently used one (unless tm
// backs off).
func (d *Decoder) newTemplate(m proto.Message, b []byte, tm *templates) {
	if tm.backoff > 0 {
		tm.backoff--
		return
	}
	if len(b) > templateMaxBytes {
		return
	}
	t := tm.t[1]
	if t == nil {
		t = new(mergeTemplate)
	} else if t.valid && t.hits == 0 {
		tm.backoff = templateBackoff
	}
	tm.t[0], tm.t[1] = t, tm.t[0]
	d.tmplBuilds++
	if t.build(d.schema(m), d.layout(m), b, d.shapeBuf) {
		t.cmdType = -1
		if _, ok := m.(*pulsarapi.BaseCommand); ok {
			t.cmdType = -2 // not replayed
			if typ, ok, subs := rawCommand(b); ok && onlySub(subs, typ) {
				t.cmdType = typ
			}
		}
	}
}

// cmdTemplates returns the templates of commands of type t, which has a
// reused message (cmdFor).
func (d *Decoder) cmdTemplates(t pulsarapi.BaseCommand_Type) *templates {
	if t < 0 || int(t) >= len(shapedIndex) || shapedIndex[t] == 0 {
		return nil
	}
	return &d.tmpl[shapedIndex[t]-1]
}

// cmdFor returns the reused command message of type t, nil when t has
// none.
func (fb *frameBufs) cmdFor(t pulsarapi.BaseCommand_Type) *shaped[*pulsarapi.BaseCommand] {
	if t < 0 || int(t) >= len(shapedIndex) || shapedIndex[t] == 0 {
		return nil
	}
	i := shapedIndex[t] - 1
	s := fb.cmds[i]
	if s == nil {
		s = &shaped[*pulsarapi.BaseCommand]{m: new(pulsarapi.BaseCommand)}
		fb.cmds[i] = s
	}
	return s
}

// validate looks for unset required fields and unknown fields in m,
// decoded from b, cheaply; only when there is something to report does it
// walk m by reflection (collecting into d.check; the caller flushes).
// A non-negative idx makes the path root[idx].
// complete says the required fields are known to be set.
func (d *Decoder) validate(m proto.Message, b []byte, root string, idx int, complete bool) {
	if complete && !d.schema(m).hasUnknown(b, 0) {
		return
	}
	if idx >= 0 {
		root += "[" + strconv.Itoa(idx) + "]"
	}
	d.check.walk(m.ProtoReflect(), root)
}

// NewDecoder returns a Decoder with the given options (zero fields take
// their defaults).
func NewDecoder(opts Options) *Decoder {
	d := &Decoder{opts: opts.withDefaults(), unm: proto.UnmarshalOptions{AllowPartial: true}}
	d.fb = &d.own
	return d
}

// Decode decodes the single frame at the start of raw (from the totalSize
// field on) with a fresh Decoder. The Frame's slices may alias raw;
// nothing else is shared. Frame.Size says how many bytes the frame claims.
func Decode(raw []byte, opts Options) *Frame {
	return NewDecoder(opts).Decode(raw)
}

// Decode decodes the single frame at the start of raw (from the totalSize
// field on). Bytes beyond Frame.Size are ignored; a raw shorter than the
// frame gives a truncated-frame problem. Without Options.Retain the
// returned Frame, its Command and Entries are reused by the next call, and
// its byte slices alias raw and the Decoder's buffers. Decode never panics:
// a panic inside it becomes a decoder-panic problem.
func (d *Decoder) Decode(raw []byte) (f *Frame) {
	f = d.frame()
	defer recoverInto(f)
	d.decode(f, raw)
	return f
}

// frame returns the Frame to decode into: a fresh one with Retain, else the
// Decoder's own, reset.
func (d *Decoder) frame() *Frame {
	if d.opts.Retain {
		return new(Frame)
	}
	f := &d.fb.frame
	f.reset()
	return f
}

// recoverInto, deferred, turns a panic of the decoding into a
// decoder-panic problem on f.
func recoverInto(f *Frame) {
	if r := recover(); r != nil {
		f.addProblem(CodeDecoderPanic, "%v: %s", r, firstLines(debug.Stack(), 12))
	}
}

// DecodeDamaged decodes the start of a frame, raw (its header, its command
// and maybe part of what follows), of which the next lost bytes were not
// captured: the frame's sizes, type and command, and a bytes-lost problem
// naming it ("SEND producer_id 11 sequence_id 0: 47616 of 307294 bytes not
// captured"); nothing after the command is decoded. Frame.Raw, with
// KeepRaw, holds the captured bytes only.
func (d *Decoder) DecodeDamaged(raw []byte, lost int64) (f *Frame) {
	f = d.frame()
	defer recoverInto(f)
	if len(raw) < 8 {
		f.Size = len(raw)
		f.addProblem(CodeBytesLost, "%d bytes of a frame, then %d not captured", len(raw), lost)
		return f
	}
	if d.opts.Retain {
		raw = append([]byte(nil), raw...)
	}
	if d.opts.KeepRaw {
		f.Raw = raw
	}
	f.TotalSize, f.CommandSize = be32(raw), be32(raw[4:])
	f.Size = int(f.TotalSize) + 4
	f.region(RegionTotalSize, 0, 4)
	f.region(RegionCommandSize, 4, 8)
	if end := 8 + int(f.CommandSize); f.CommandSize >= minCommandSize && end <= len(raw) {
		f.region(RegionCommand, 8, end)
		d.decodeCommand(f, raw[8:end], raw[8:end])
	}
	f.Missing = int(min(lost, int64(max(0, f.Size-len(raw)))))
	f.addProblem(CodeBytesLost, "%s: %d of %d bytes not captured (from byte %d of the frame)", frameIDs(f), lost, f.Size, len(raw))
	return f
}

// frameIDs names a frame by its type and the ids its command carries.
func frameIDs(f *Frame) string {
	s := typeName(f.Type)
	if f.Command == nil {
		return s
	}
	var sub protoreflect.Message
	f.Command.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() {
			sub = v.Message()
			return false
		}
		return true
	})
	if sub == nil {
		return s
	}
	for _, name := range []protoreflect.Name{"producer_id", "consumer_id", "sequence_id", "request_id"} {
		if fd := sub.Descriptor().Fields().ByName(name); fd != nil && sub.Has(fd) {
			s += fmt.Sprintf(" %s %d", name, sub.Get(fd).Uint())
		}
	}
	return s
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

// unmarshal decodes b into m. complete reports whether every required
// field is set: checked for free by a strict unmarshal, and only on its
// failure is b decoded again, leniently, to tell a missing field from
// invalid bytes.
func (d *Decoder) unmarshal(b []byte, m proto.Message) (complete bool, err error) {
	if err := d.checkRepeated(b, m); err != nil {
		return false, err
	}
	if proto.Unmarshal(b, m) == nil {
		return true, nil
	}
	return false, d.unm.Unmarshal(b, m)
}

// tooManyError says a message holds more repeated elements than
// Options.MaxRepeated (too-many-elements).
type tooManyError struct{ limit int }

func (e tooManyError) Error() string {
	return fmt.Sprintf("more than %d elements in repeated fields, not decoded (raise the limit with --max-repeated)", e.limit)
}

// checkRepeated fails when b, encoded m, holds more repeated elements
// than Options.MaxRepeated. Each element takes at least a byte, so only
// messages longer than the limit are counted.
func (d *Decoder) checkRepeated(b []byte, m proto.Message) error {
	if len(b) <= d.opts.MaxRepeated {
		return nil
	}
	if d.schema(m).countRepeated(b, 0, d.opts.MaxRepeated) > d.opts.MaxRepeated {
		return tooManyError{d.opts.MaxRepeated}
	}
	return nil
}

// schema returns the wire table of m, one of the four messages a Decoder
// decodes, building it on first use.
func (d *Decoder) schema(m proto.Message) *wireSchema {
	var ws **wireSchema
	switch m.(type) {
	case *pulsarapi.BaseCommand:
		ws = &d.cmdSchema
	case *pulsarapi.MessageMetadata:
		ws = &d.mdSchema
	case *pulsarapi.SingleMessageMetadata:
		ws = &d.smmSchema
	case *pulsarapi.BrokerEntryMetadata:
		ws = &d.bemSchema
	default:
		return newWireSchema(m.ProtoReflect().Descriptor()) // no other message is decoded: not kept
	}
	if *ws == nil {
		*ws = newWireSchema(m.ProtoReflect().Descriptor())
	}
	return *ws
}

// layout returns the Go struct layout of m, a BaseCommand or a
// MessageMetadata (the messages unmarshalShaped reuses), building it on
// first use; nil for other messages.
func (d *Decoder) layout(m proto.Message) *goLayout {
	var l **goLayout
	switch m.(type) {
	case *pulsarapi.BaseCommand:
		l = &d.cmdLayout
	case *pulsarapi.MessageMetadata:
		l = &d.mdLayout
	default:
		return nil
	}
	if *l == nil {
		*l = newGoLayout(reflect.TypeOf(m).Elem(), m.ProtoReflect().Descriptor(), map[reflect.Type]*goLayout{})
	}
	return *l
}

// protoProblem reports err, from decoding the message what, as a problem
// of f: too-many-elements or protobuf-invalid.
func protoProblem(f *Frame, what string, err error) {
	if tm, ok := err.(tooManyError); ok {
		f.addProblem(CodeTooManyElements, "%s: %v", what, tm)
		return
	}
	f.addProblem(CodeProtobufInvalid, "%s: %v", what, err)
}

// reset clears f for reuse, keeping slice capacity.
func (f *Frame) reset() {
	*f = Frame{
		Regions:  f.Regions[:0],
		Problems: f.Problems[:0],
	}
}

func (f *Frame) region(name string, start, end int) {
	f.Regions = append(f.Regions, Region{Name: name, Start: start, End: end})
}

func (d *Decoder) decode(f *Frame, raw []byte) {
	if len(raw) < 4 {
		f.Size = len(raw)
		f.addProblem(CodeTruncatedFrame, "%d bytes, not even the 4-byte totalSize", len(raw))
		return
	}
	f.TotalSize = be32(raw)
	size := int64(f.TotalSize) + 4
	f.Size = int(size)
	if size > int64(d.opts.MaxFrameSize) {
		f.addProblem(CodeFrameTooLarge, "frame of %d bytes (4 + totalSize %d) exceeds the maximum of %d", size, f.TotalSize, d.opts.MaxFrameSize)
		return
	}
	if int64(len(raw)) < size {
		f.addProblem(CodeTruncatedFrame, "frame of %d bytes but only %d present", size, len(raw))
		return
	}
	raw = raw[:size]
	if d.opts.Retain {
		raw = append([]byte(nil), raw...)
	}
	if d.opts.KeepRaw {
		f.Raw = raw
	}
	f.region(RegionTotalSize, 0, 4)
	if f.TotalSize < 4+minCommandSize {
		f.addProblem(CodeBadCommandSize, "totalSize %d leaves no room for commandSize and a command", f.TotalSize)
		return
	}
	f.CommandSize = be32(raw[4:])
	f.region(RegionCommandSize, 4, 8)
	if f.CommandSize < minCommandSize || f.CommandSize > f.TotalSize-4 {
		f.addProblem(CodeBadCommandSize, "commandSize %d impossible with totalSize %d (must be %d..%d)", f.CommandSize, f.TotalSize, minCommandSize, f.TotalSize-4)
		return
	}
	end := 8 + int(f.CommandSize)
	f.region(RegionCommand, 8, end)
	d.decodeCommand(f, raw[8:end], raw[8:])

	rest := raw[end:]
	switch {
	case IsPayloadCommand(f.Type):
		if len(rest) == 0 {
			f.addProblem(CodeMissingPayload, "%s frame ends after its command", f.Type)
			return
		}
		d.decodePayload(f, rest, end)
	case len(rest) == 0:
	case !KnownCommandType(f.Type) && len(rest) >= 2 && (be16(rest) == MagicChecksum || be16(rest) == MagicBrokerEntryMetadata):
		// A command type newer than the schema that carries a payload.
		d.decodePayload(f, rest, end)
	default:
		f.addProblem(CodeTrailingBytes, "%d bytes after a %s command, which carries no payload", len(rest), typeName(f.Type))
		f.region(RegionPayload, end, len(raw))
	}
}

func typeName(t pulsarapi.BaseCommand_Type) string {
	if KnownCommandType(t) {
		return t.String()
	}
	return fmt.Sprintf("type %d", int32(t))
}

// decodeCommand parses and validates the BaseCommand.
// ext is b and the bytes that follow it in memory.
func (d *Decoder) decodeCommand(f *Frame, b, ext []byte) {
	if !d.opts.Retain && len(b) >= 2 && b[0] == 1<<3|byte(protowire.VarintType) && b[1] == byte(pulsarapi.BaseCommand_ACK) {
		if cmd := d.ack(b); cmd != nil {
			f.Type, f.Command = pulsarapi.BaseCommand_ACK, cmd
			return
		}
	}
	tried := int32(-1) // the type whose templates b was tried against
	if !d.opts.Retain && len(b) >= 2 && len(b) <= shapedMaxBytes && b[0] == 1<<3|byte(protowire.VarintType) && b[1] < 0x80 {
		// The type comes first (as every client writes it): a command
		// that matches a template of its type has the template's one
		// sub-command and is clean.
		t := pulsarapi.BaseCommand_Type(b[1])
		if tm := d.cmdTemplates(t); tm != nil {
			s := d.fb.cmdFor(t)
			done, clean, _, err := replayShaped(d, b, ext, s, tm, int32(t))
			if done && clean && err == nil {
				f.Type, f.Command = t, s.m
				return
			}
			if !done {
				tried = int32(t)
			}
		}
	}
	t, hasType, subs := rawCommand(b)
	f.Type = pulsarapi.BaseCommand_Type(t)
	known := hasType && KnownCommandType(f.Type)
	if hasType && !known {
		f.Problems = append(f.Problems, Problem{Code: CodeUnknownCommandType, Detail: unknownTypeDetail(t)})
	}

	var (
		cmd             *pulsarapi.BaseCommand
		clean, complete bool
		err             error
	)
	var (
		s  *shaped[*pulsarapi.BaseCommand]
		tm *templates
	)
	if !d.opts.Retain && len(b) <= shapedMaxBytes {
		s, tm = d.fb.cmdFor(f.Type), d.cmdTemplates(f.Type)
	}
	switch {
	case d.opts.Retain:
		cmd = new(pulsarapi.BaseCommand)
		complete, err = d.unmarshal(b, cmd)
	case s != nil:
		cmd = s.m
		clean, complete, err = unmarshalShaped(d, b, ext, s, tm, t, t != tried)
	default:
		if d.fb.cmd == nil {
			d.fb.cmd = new(pulsarapi.BaseCommand)
		}
		cmd = d.fb.cmd
		complete, err = d.unmarshal(b, cmd)
	}
	if err != nil {
		protoProblem(f, "command", err)
		return
	}
	f.Command = cmd

	d.check.reset()
	if !clean {
		d.check.skipRootType, d.check.rootSub = hasType && !known, protowire.Number(t)
		d.validate(cmd, b, "", -1, complete)
		d.check.skipRootType, d.check.rootSub = false, 0
		d.check.flush(f)
	}
	if known && !onlySub(subs, t) {
		d.checkSubCommand(f, cmd)
	}
}

// ack decodes b, an ACK, by decodeAck into the slot's ACK message and
// ids; nil when decodeAck leaves it to protobuf.
func (d *Decoder) ack(b []byte) *pulsarapi.BaseCommand {
	fb := d.fb
	if fb.acks != nil && len(fb.acks.ids) > maxPooledIDs {
		fb.acks = nil // the decoder's own, after a big ACK: not kept
	}
	if fb.acks == nil {
		if d.ackPool != nil {
			fb.acks, _ = d.ackPool.Get().(*ackIDs)
		}
		if fb.acks == nil {
			fb.acks = new(ackIDs)
		}
	}
	if fb.ackCmd == nil {
		fb.ackCmd = new(pulsarapi.BaseCommand)
	}
	if d.checkRepeated(b, fb.ackCmd) != nil {
		return nil // too many ids: none is decoded (protobuf's path says so)
	}
	if !decodeAck(b, fb.ackCmd, fb.acks, d.opts.MaxRepeated) {
		return nil
	}
	return fb.ackCmd
}

// giveBackAcks gives the ids of the ACK decoded into fb back to pool,
// once the frame is done with; more than maxPooledIDs of them are left to
// the garbage collector instead (an ACK of a hundred thousand ids must
// not be kept for the ones after it).
func (fb *frameBufs) giveBackAcks(pool interface{ Put(any) }) {
	if fb.acks == nil {
		return
	}
	if a := fb.ackCmd.GetAck(); a != nil {
		a.MessageId = nil
	}
	if len(fb.acks.ids) <= maxPooledIDs {
		pool.Put(fb.acks)
	}
	fb.acks = nil
}

// maxPooledIDs bounds the ids of a list given back to the pool (about
// 100 bytes each).
const maxPooledIDs = 4096

// checkSubCommand reports a type that does not match the one sub-command
// set. The sub-command field of each type has the type's number.
func (d *Decoder) checkSubCommand(f *Frame, cmd *pulsarapi.BaseCommand) {
	d.subs = d.subs[:0]
	want := false
	cmd.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.Message() != nil {
			d.subs = append(d.subs, string(fd.Name()))
			if int32(fd.Number()) == int32(f.Type) {
				want = true
			}
		}
		return true
	})
	switch {
	case !want:
		name := "(none)"
		if fd := cmd.ProtoReflect().Descriptor().Fields().ByNumber(protoreflect.FieldNumber(f.Type)); fd != nil {
			name = string(fd.Name())
		}
		f.addProblem(CodeTypeMismatch, "type %s but its sub-command %s is not set (set: %s)", f.Type, name, listOrNone(d.subs))
	case len(d.subs) > 1:
		f.addProblem(CodeTypeMismatch, "type %s but several sub-commands are set: %s", f.Type, strings.Join(d.subs, ", "))
	}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
