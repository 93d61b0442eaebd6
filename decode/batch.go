package decode

import (
	"strconv"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

// payloadSizeField is SingleMessageMetadata.payload_size.
const payloadSizeField = 3

// splitBatch splits an uncompressed batch payload into its entries: each a
// 4-byte big-endian size, a SingleMessageMetadata and payload_size bytes.
func (d *Decoder) splitBatch(f *Frame, data []byte, want int32) {
	if d.opts.Retain {
		f.Entries = nil
	} else {
		f.Entries = d.fb.entries[:0]
	}
	smmSchema := d.schema((*pulsarapi.SingleMessageMetadata)(nil))
	p := 0
	for p < len(data) {
		i := len(f.Entries)
		if len(data)-p < 4 {
			f.addProblem(CodeBatchMalformed, "entry %d: %d bytes left, too few for its 4-byte metadata size", i, len(data)-p)
			break
		}
		n := be32(data[p:])
		p += 4
		if int64(n) > int64(len(data)-p) {
			f.addProblem(CodeBatchMalformed, "entry %d: metadata size %d exceeds the %d bytes left", i, n, len(data)-p)
			break
		}
		meta := data[p : p+int(n)]
		// The fast path: a clean SingleMessageMetadata (see wireSchema.clean)
		// has nothing to report; its payload_size is read off the wire.
		v, clean := d.smmTmpl.match(meta, data[p:])
		if !clean {
			if v, _, clean = smmSchema.clean(meta, 0, payloadSizeField); clean {
				d.smmTmpl.add(smmSchema, meta, payloadSizeField)
			}
		}
		ps := int32(v)
		var smm *pulsarapi.SingleMessageMetadata
		if !clean || !d.opts.LazyEntryMetadata {
			if d.opts.LazyEntryMetadata {
				if d.smm == nil {
					d.smm = new(pulsarapi.SingleMessageMetadata)
				}
				smm = d.smm
			} else {
				smm = new(pulsarapi.SingleMessageMetadata)
			}
			if clean && proto.Unmarshal(meta, smm) != nil {
				clean = false // cannot happen; let the full check tell
			}
			if !clean {
				complete, err := d.unmarshal(meta, smm)
				if err != nil {
					protoProblem(f, "batch entry "+strconv.Itoa(i)+" metadata", err)
					break
				}
				d.validate(smm, meta, "entry", i, complete)
			}
			ps = smm.GetPayloadSize()
			if d.opts.LazyEntryMetadata {
				smm = nil // only Entry.DecodeMetadata gives it out
			}
		}
		p += int(n)
		if ps < 0 || int64(ps) > int64(len(data)-p) {
			f.addProblem(CodeBatchMalformed, "entry %d: payload_size %d exceeds the %d bytes left", i, ps, len(data)-p)
			break
		}
		// Field by field: appending a composite literal copies it with
		// typedmemmove, a call per entry.
		es := f.Entries
		if len(es) == cap(es) {
			es = append(es, Entry{})[:len(es)]
		}
		es = es[:len(es)+1]
		e := &es[len(es)-1]
		e.Metadata, e.RawMetadata, e.Payload = smm, meta, data[p:p+int(ps)]
		f.Entries = es
		p += int(ps)
	}
	d.check.flush(f)
	if !d.opts.Retain {
		d.fb.entries = f.Entries
	}
	if int64(len(f.Entries)) != int64(want) {
		f.addProblem(CodeBatchCountMismatch, "num_messages_in_batch %d but the payload holds %d entries", want, len(f.Entries))
	}
}

// DecodeMetadata returns the entry's SingleMessageMetadata: Metadata when
// set, else RawMetadata decoded (and stored in Metadata). Without
// Options.Retain it must be called during the Sink call, while RawMetadata
// is valid. The decoder has already reported every problem of the
// metadata; the error only says RawMetadata does not parse at all (such an
// entry ends the batch and is not in Entries).
func (e *Entry) DecodeMetadata() (*pulsarapi.SingleMessageMetadata, error) {
	if e.Metadata != nil || e.RawMetadata == nil {
		return e.Metadata, nil
	}
	m := new(pulsarapi.SingleMessageMetadata)
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(e.RawMetadata, m); err != nil {
		return nil, err
	}
	e.Metadata = m
	return m, nil
}
