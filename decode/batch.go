package decode

import (
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// splitBatch splits an uncompressed batch payload into its entries: each a
// 4-byte big-endian size, a SingleMessageMetadata and payload_size bytes.
func (d *Decoder) splitBatch(f *Frame, data []byte, want int32) {
	if d.opts.Retain {
		f.Entries = nil
	} else {
		f.Entries = d.entries[:0]
	}
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
		smm := new(pulsarapi.SingleMessageMetadata)
		complete, err := d.unmarshal(data[p:p+int(n)], smm)
		if err != nil {
			f.addProblem(CodeProtobufInvalid, "batch entry %d metadata: %v", i, err)
			break
		}
		d.validate(smm, data[p:p+int(n)], &d.smmSchema, "entry", i, complete)
		p += int(n)
		ps := smm.GetPayloadSize()
		if ps < 0 || int64(ps) > int64(len(data)-p) {
			f.addProblem(CodeBatchMalformed, "entry %d: payload_size %d exceeds the %d bytes left", i, ps, len(data)-p)
			break
		}
		f.Entries = append(f.Entries, Entry{Metadata: smm, Payload: data[p : p+int(ps)]})
		p += int(ps)
	}
	d.check.flush(f)
	if !d.opts.Retain {
		d.entries = f.Entries
	}
	if int64(len(f.Entries)) != int64(want) {
		f.addProblem(CodeBatchCountMismatch, "num_messages_in_batch %d but the payload holds %d entries", want, len(f.Entries))
	}
}
