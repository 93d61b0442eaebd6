package cli

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Hostile captures: each is built with pcapgo from real frames of
// testdata/pcaps/basic.pcap plus the hostile part, read through the CLI,
// and must finish with the documented exit code, the right problem, and
// bounded memory (peak heap measured with runtime.ReadMemStats; logged
// with -v, figures in docs/robustness.md).

const hostileHeapLimit = 48 << 20 // far below anything a claimed size could make us allocate

// baseConv starts a conversation with basic.pcap's CONNECT/CONNECTED.
func baseConv(t *testing.T, isn uint32) (*hconv, [2][][]byte) {
	fr := realFrames(t, "basic.pcap")
	v := newConv(40000, isn)
	v.handshake()
	v.send(0, fr[0][0])
	v.send(1, fr[1][0])
	return v, fr
}

// rest sends the remaining real frames, alternating directions.
func (v *hconv) rest(fr [2][][]byte) {
	for i := 1; i < max(len(fr[0]), len(fr[1])); i++ {
		for d := 0; d < 2; d++ {
			if i < len(fr[d]) {
				v.send(d, fr[d][i])
			}
		}
	}
}

func realFrameCount(fr [2][][]byte) int { return len(fr[0]) + len(fr[1]) }

func checkRun(t *testing.T, code, wantCode int, out *grepWriter, mem memUse, want ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit %d, want %d", code, wantCode)
	}
	for _, w := range want {
		if out.found[w] == 0 {
			t.Errorf("output lacks %s", w)
		}
	}
	if out.found[`"decoder-panic"`] > 0 {
		t.Errorf("decoder-panic in output")
	}
	if mem.PeakHeap > hostileHeapLimit {
		t.Errorf("peak heap %s over %s", byteSize(mem.PeakHeap), byteSize(hostileHeapLimit))
	}
}

// TestHostileFrameSize4GiB: a frame claiming totalSize 0xFFFFFFFF (4 GiB)
// in the middle of a real conversation: frame-too-large on a skipped
// event, the stream resynchronises on the next real frame, nothing near
// the claimed size is allocated.
func TestHostileFrameSize4GiB(t *testing.T) {
	v, fr := baseConv(t, 1000)
	junk := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
	junk = binary.BigEndian.AppendUint32(junk, 0xFFFFFFFB)
	junk = append(junk, bytes.Repeat([]byte{0xA5}, 64<<10)...)
	v.send(0, junk)
	v.rest(fr)
	v.fin()
	name := writeTemp(t, "4gib.pcap", writePcap(t, v.recs, 262144))
	code, out, _, mem := runMain(t, []string{"read", "-o", "json", name}, `"frame-too-large"`, `"bytes-skipped"`, "\n{\"n\":", `"type":"CLOSE_PRODUCER"`)
	checkRun(t, code, ExitOK, out, mem, `"frame-too-large"`, `"bytes-skipped"`, `"type":"CLOSE_PRODUCER"`)
	if n := out.found["\n{\"n\":"]; n != realFrameCount(fr) {
		t.Errorf("%d frames, want the %d real ones", n, realFrameCount(fr))
	}
}

// TestHostileClaimedSizeWithinLimit: with --max-frame-size 1024MiB a frame
// claiming 1 GiB is believed, but the decoder buffers only the bytes that
// arrive (2 MiB here): the stream ends inside it (truncated-frame).
func TestHostileClaimedSizeWithinLimit(t *testing.T) {
	v, _ := baseConv(t, 1000)
	claim := binary.BigEndian.AppendUint32(nil, 1<<30-8)
	claim = binary.BigEndian.AppendUint32(claim, 16)
	claim = append(claim, bytes.Repeat([]byte{0x5A}, 2<<20)...)
	v.send(0, claim)
	v.fin()
	name := writeTemp(t, "1gib.pcap", writePcap(t, v.recs, 262144))
	for _, args := range [][]string{{"read", "-o", "json"}, {"read", "-q"}, {"stats", "-o", "json"}} {
		code, out, _, mem := runMain(t, append(args, "--max-frame-size", "1024MiB", name), `truncated-frame`)
		checkRun(t, code, ExitOK, out, mem, `truncated-frame`)
		if mem.Allocated > 256<<20 {
			t.Errorf("%v: allocated %s for 2 MiB received", args, byteSize(mem.Allocated))
		}
	}
}

func compressBomb(t *testing.T, codec pulsarapi.CompressionType, plain []byte) []byte {
	switch codec {
	case pulsarapi.CompressionType_LZ4:
		dst := make([]byte, lz4.CompressBlockBound(len(plain)))
		n, err := lz4.CompressBlock(plain, dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		return dst[:n]
	case pulsarapi.CompressionType_ZLIB:
		var b bytes.Buffer
		w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
		w.Write(plain)
		w.Close()
		return b.Bytes()
	case pulsarapi.CompressionType_ZSTD:
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		defer enc.Close()
		return enc.EncodeAll(plain, nil)
	case pulsarapi.CompressionType_SNAPPY:
		return snappy.Encode(nil, plain)
	}
	t.Fatalf("codec %v", codec)
	return nil
}

// TestHostileDecompressionBombs: for each codec, a SEND whose payload
// decompresses to 64 MiB (100 MiB for ZSTD and ZLIB) while uncompressed_size claims 1000 bytes, 4 MiB or 4 GiB:
// decompression is bounded by --max-decompressed's 5 MiB default and
// reported (decompression-limit, or decompression-failed /
// uncompressed-size-mismatch when the lie is caught first); plus a SNAPPY
// block whose header claims 4 GiB.
func TestHostileDecompressionBombs(t *testing.T) {
	plain := make([]byte, 64<<20)
	for _, codec := range []pulsarapi.CompressionType{pulsarapi.CompressionType_LZ4, pulsarapi.CompressionType_ZLIB, pulsarapi.CompressionType_ZSTD, pulsarapi.CompressionType_SNAPPY} {
		bomb := compressBomb(t, codec, plain)
		for _, declared := range []uint32{1000, 4 << 20, 0xFFFFFFFF} {
			t.Run(fmt.Sprintf("%v/declared=%d", codec, declared), func(t *testing.T) {
				v, fr := baseConv(t, 1000)
				md := &pulsarapi.MessageMetadata{ProducerName: ptr("bomb"), SequenceId: ptr(uint64(1)), PublishTime: ptr(uint64(1764400000000)),
					Compression: codec.Enum(), UncompressedSize: ptr(declared)}
				v.send(0, payloadFrame(t, md, bomb))
				v.rest(fr)
				v.fin()
				name := writeTemp(t, "bomb.pcap", writePcap(t, v.recs, 262144))
				code, out, _, mem := runMain(t, []string{"read", "-o", "json", "--payload", "--max-frame-size", "6MiB", name},
					`"decompression-limit"`, `"decompression-failed"`, `"uncompressed-size-mismatch"`, "\n{\"n\":")
				checkRun(t, code, ExitOK, out, mem)
				if out.found[`"decompression-limit"`]+out.found[`"decompression-failed"`]+out.found[`"uncompressed-size-mismatch"`] == 0 {
					t.Errorf("%d-byte %v bomb (%d compressed): no problem reported", len(plain), codec, len(bomb))
				}
				if declared > 5<<20 && out.found[`"decompression-limit"`] == 0 {
					t.Errorf("declared %d over the limit: no decompression-limit", declared)
				}
				if n := out.found["\n{\"n\":"]; n != realFrameCount(fr)+1 {
					t.Errorf("%d frames, want %d", n, realFrameCount(fr)+1)
				}
				t.Logf("%v bomb: %d bytes compressed → %d; problems %v", codec, len(bomb), len(plain), out.found)
			})
		}
	}
	t.Run("SNAPPY/header-claims-4GiB", func(t *testing.T) {
		v, _ := baseConv(t, 1000)
		lie := binary.AppendUvarint(nil, 0xFFFFFFFF)
		lie = append(lie, 0, 0, 0, 0)
		md := &pulsarapi.MessageMetadata{ProducerName: ptr("bomb"), SequenceId: ptr(uint64(1)), PublishTime: ptr(uint64(1764400000000)),
			Compression: pulsarapi.CompressionType_SNAPPY.Enum(), UncompressedSize: ptr(uint32(100))}
		v.send(0, payloadFrame(t, md, lie))
		v.fin()
		name := writeTemp(t, "snappy.pcap", writePcap(t, v.recs, 262144))
		code, out, _, mem := runMain(t, []string{"read", "-o", "json", name}, `"decompression-limit"`, `"decompression-failed"`)
		checkRun(t, code, ExitOK, out, mem)
		if out.found[`"decompression-limit"`]+out.found[`"decompression-failed"`] == 0 {
			t.Error("no problem for a snappy header claiming 4 GiB")
		}
	})
}

func ptr[T any](v T) *T { return &v }

// ackFrame builds CommandAck (Individual) with n message ids.
func ackFrame(t *testing.T, n int) []byte {
	ids := make([]*pulsarapi.MessageIdData, n)
	for i := range ids {
		ids[i] = &pulsarapi.MessageIdData{LedgerId: ptr(uint64(7)), EntryId: ptr(uint64(i % 100))}
	}
	return frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_ACK.Enum(), Ack: &pulsarapi.CommandAck{
		ConsumerId: ptr(uint64(1)), AckType: pulsarapi.CommandAck_Individual.Enum(), MessageId: ids}})
}

// TestHostileAckMillionIDs: an ACK carrying 1,000,000 message ids (a 6.7 MB
// frame, read with --max-frame-size 8MiB) and one with 800,000 within
// the default 5 MiB. With --max-repeated 100000 its command is not
// decoded: too-many-elements, and little memory. By default (as many
// elements as a frame of --max-frame-size can hold: a legal frame always
// decodes, issue 16), and with --max-repeated raised, it is decoded,
// rendered and tracked in every streaming mode.
func TestHostileAckMillionIDs(t *testing.T) {
	for _, n := range []int{800_000, 1_000_000} {
		v, fr := baseConv(t, 1000)
		f := ackFrame(t, n)
		v.send(0, f)
		v.rest(fr)
		v.fin()
		name := writeTemp(t, "ack.pcap", writePcap(t, v.recs, 262144))
		t.Logf("ACK of %d ids: frame of %d bytes", n, len(f))
		for _, args := range [][]string{{"read", "-o", "json"}, {"read", "-q"}, {"stats", "-o", "json"}} {
			code, out, _, mem := runMain(t, append(args, "--max-repeated", "100000", "--max-frame-size", "8MiB", name), `too-many-elements`)
			if code != ExitOK || out.found[`too-many-elements`] == 0 {
				t.Errorf("%v: exit %d, too-many-elements %d", args, code, out.found[`too-many-elements`])
			}
			// Nothing decoded: the frame itself, a few times over.
			if limit := uint64(len(f))*4 + 32<<20; mem.PeakHeap > limit {
				t.Errorf("%v: peak heap %s over %s", args, byteSize(mem.PeakHeap), byteSize(limit))
			}
			t.Logf("%v, --max-repeated 100000: %s", args, mem)
			// The default (derived from --max-frame-size), raised, and for
			// the frame within 5 MiB no limit flag at all.
			limits := [][]string{{"--max-repeated", "0", "--max-frame-size", "8MiB"}, {"--max-repeated", "2000000", "--max-frame-size", "8MiB"}}
			if n == 800_000 {
				limits = append(limits, nil)
			}
			for _, limit := range limits {
				code, out, _, mem = runMain(t, append(append(args[:len(args):len(args)], limit...), name), `"type":"ACK"`, `frame-too-large`, `"ACK"`, `too-many-elements`)
				if code != ExitOK || out.found[`frame-too-large`] > 0 || out.found[`too-many-elements`] > 0 || out.found[`"decoder-panic"`] > 0 {
					t.Errorf("%v %v: exit %d, frame-too-large %d, too-many-elements %d", args, limit, code, out.found[`frame-too-large`], out.found[`too-many-elements`])
				}
				if args[0] != "read" || args[1] != "-q" {
					if out.found[`"ACK"`]+out.found[`"type":"ACK"`] == 0 {
						t.Errorf("%v: no ACK in the output", args)
					}
				}
				// Decoding n ids into protobuf messages takes ~100 bytes each.
				if limit := uint64(n)*400 + 64<<20; mem.PeakHeap > limit {
					t.Errorf("%v: peak heap %s over %s", args, byteSize(mem.PeakHeap), byteSize(limit))
				}
			}
		}
	}
}

// TestHostileAckEmptyIDs: CommandAck with an empty message id list (the
// Wireshark plugin crashes on it), in every output.
func TestHostileAckEmptyIDs(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.send(0, ackFrame(t, 0))
	v.rest(fr)
	v.fin()
	name := writeTemp(t, "ack0.pcap", writePcap(t, v.recs, 262144))
	for _, args := range [][]string{{"read", "-o", "json"}, {"read", "-V", "-x"}, {"read", "-o", "transcript"}, {"read", "-2", "-o", "json"}, {"read", "-q"}, {"stats"}} {
		code, out, _, mem := runMain(t, append(args, name), `ACK`, "decoder-panic")
		checkRun(t, code, ExitOK, out, mem)
		if args[len(args)-1] != "-q" && out.found[`ACK`] == 0 {
			t.Errorf("%v: no ACK", args)
		}
	}
}

// TestHostileSequenceWrap: both directions' sequence numbers wrap around
// 2^32 in the middle of frames: every frame decoded, nothing lost.
func TestHostileSequenceWrap(t *testing.T) {
	fr := realFrames(t, "basic.pcap")
	v := newConv(40000, 0xFFFFFFFF-300)
	v.sseq = 0xFFFFFFFF - 200
	v.mss = 100 // many segments, frames cut across the wrap
	v.handshake()
	v.send(0, fr[0][0])
	v.send(1, fr[1][0])
	v.rest(fr)
	v.fin()
	if v.cseq > 1<<20 || v.sseq > 1<<20 {
		t.Fatalf("no wrap: %x %x", v.cseq, v.sseq)
	}
	name := writeTemp(t, "wrap.pcap", writePcap(t, v.recs, 262144))
	if dir := os.Getenv("PULSARSCOPE_KEEP_HOSTILE"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "wrap.pcap"), writePcap(t, v.recs, 262144), 0o644)
	}
	code, out, _, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":", `"problems":[{`)
	checkRun(t, code, ExitOK, out, mem)
	if out.found["\n{\"n\":"] != realFrameCount(fr) || out.found[`"problems":[{`] > 0 {
		t.Errorf("%d frames (want %d), %d with decode problems", out.found["\n{\"n\":"], realFrameCount(fr), out.found[`"problems":[{`])
	}
}

// TestHostileSnaplen: (a) records longer than the file's snap length
// (64) but within 256 KiB are read (tcpdump and Wireshark do the same);
// (b) records cut by the snap length (orig_len > incl_len): the missing
// bytes are a gap with bytes-lost, the accounting balances; (c) a record
// longer than any packet (incl_len 300000 > snaplen) ends the read with
// exit 3.
func TestHostileSnaplen(t *testing.T) {
	t.Run("over-snaplen", func(t *testing.T) {
		v, fr := baseConv(t, 1000)
		v.rest(fr)
		v.fin()
		name := writeTemp(t, "over.pcap", writePcap(t, v.recs, 64))
		code, out, _, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":")
		checkRun(t, code, ExitOK, out, mem)
		if out.found["\n{\"n\":"] != realFrameCount(fr) {
			t.Errorf("%d frames, want %d", out.found["\n{\"n\":"], realFrameCount(fr))
		}
	})
	t.Run("cut-by-snaplen", func(t *testing.T) {
		v, fr := baseConv(t, 1000)
		v.rest(fr)
		v.fin()
		cut := 0
		for i := range v.recs {
			if len(v.recs[i].data) > 96 {
				v.recs[i].origLen = len(v.recs[i].data)
				v.recs[i].data = v.recs[i].data[:96]
				cut++
			}
		}
		name := writeTemp(t, "cut.pcap", writePcap(t, v.recs, 96))
		code, out, _, mem := runMain(t, []string{"read", "-o", "json", name}, `"bytes-lost"`, `cut by the snap length`)
		checkRun(t, code, ExitOK, out, mem, `"bytes-lost"`, `cut by the snap length`)
		t.Logf("%d records cut", cut)
	})
	t.Run("record-over-any-packet", func(t *testing.T) {
		v, fr := baseConv(t, 1000)
		v.rest(fr)
		data := writePcap(t, v.recs, 64)
		huge := make([]byte, 16)
		binary.LittleEndian.PutUint32(huge[8:], 300000)
		binary.LittleEndian.PutUint32(huge[12:], 300000)
		// pcapgo writes little-endian on little-endian hosts; use the file's magic
		if binary.BigEndian.Uint32(data) == 0xa1b2c3d4 {
			binary.BigEndian.PutUint32(huge[8:], 300000)
			binary.BigEndian.PutUint32(huge[12:], 300000)
		}
		data = append(append(data, huge...), make([]byte, 1000)...)
		name := writeTemp(t, "huge.pcap", data)
		code, out, stderr, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":")
		checkRun(t, code, ExitInput, out, mem)
		if out.found["\n{\"n\":"] != realFrameCount(fr) || stderr == "" {
			t.Errorf("%d frames before the bad record (want %d); stderr %q", out.found["\n{\"n\":"], realFrameCount(fr), stderr)
		}
		t.Logf("stderr: %s", stderr)
	})
}

// TestHostileTimestampsBackwards: timestamps jump back an hour in the
// middle of a conversation and go back and forth after: every frame is
// decoded, no idle close or gap timeout fires, latencies are never
// negative.
func TestHostileTimestampsBackwards(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.rest(fr)
	v.fin()
	for i := len(v.recs) / 2; i < len(v.recs); i++ {
		v.recs[i].ts = v.recs[i].ts.Add(-time.Hour)
		if i%3 == 0 {
			v.recs[i].ts = v.recs[i].ts.Add(-time.Duration(i) * time.Second)
		}
	}
	name := writeTemp(t, "back.pcap", writePcap(t, v.recs, 262144))
	if dir := os.Getenv("PULSARSCOPE_KEEP_HOSTILE"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "back.pcap"), writePcap(t, v.recs, 262144), 0o644)
	}
	code, out, _, mem := runMain(t, []string{"read", "-2", "-o", "json", name}, "\n{\"n\":", `"latency_us":-`, `"detail":"fin"`, `"code"`)
	checkRun(t, code, ExitOK, out, mem, `"detail":"fin"`)
	if out.found["\n{\"n\":"] != realFrameCount(fr) || out.found[`"latency_us":-`] > 0 {
		t.Errorf("%d frames (want %d), %d negative latencies", out.found["\n{\"n\":"], realFrameCount(fr), out.found[`"latency_us":-`])
	}
	code, out, _, _ = runMain(t, []string{"stats", "-o", "json", name}, `_us": -`)
	if code != ExitOK || out.found[`_us": -`] > 0 {
		t.Errorf("stats: exit %d, %d negative times", code, out.found[`_us": -`])
	}
}

// TestHostilePcapngUnknownBlocks: a pcapng file with blocks of unknown
// and custom types between every packet: they are skipped.
func TestHostilePcapngUnknownBlocks(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.rest(fr)
	v.fin()
	ng := writePcapng(t, v.recs)
	var out []byte
	blocks := 0
	for len(ng) >= 12 {
		n := int(binary.LittleEndian.Uint32(ng[4:8]))
		out = append(out, ng[:n]...)
		ng = ng[n:]
		blocks++
		if blocks >= 2 { // after the SHB and the IDB
			for _, typ := range []uint32{0x00000BAD, 0x40000BAD, 0x80000BAD, 0x00000BAD} {
				body := []byte("hostile unknown block")
				body = append(body, make([]byte, (4-len(body)%4)%4)...)
				b := binary.LittleEndian.AppendUint32(nil, typ)
				b = binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
				b = append(b, body...)
				b = binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
				out = append(out, b...)
			}
		}
	}
	name := writeTemp(t, "unknown.pcapng", out)
	code, o, _, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":")
	checkRun(t, code, ExitOK, o, mem)
	if o.found["\n{\"n\":"] != realFrameCount(fr) {
		t.Errorf("%d frames, want %d", o.found["\n{\"n\":"], realFrameCount(fr))
	}
}

// TestHostileCutMidRecord: a capture that ends in the middle of a record,
// itself in the middle of a frame: exit 3 with the cut named, every frame
// before it printed, the partial frame a truncated-frame.
func TestHostileCutMidRecord(t *testing.T) {
	v, fr := baseConv(t, 1000)
	md := &pulsarapi.MessageMetadata{ProducerName: ptr("big"), SequenceId: ptr(uint64(1)), PublishTime: ptr(uint64(1764400000000))}
	v.send(0, payloadFrame(t, md, bytes.Repeat([]byte("x"), 20000)))
	data := writePcap(t, v.recs, 262144)
	data = data[:len(data)-5000] // inside the last record of the big frame
	name := writeTemp(t, "cut.pcap", data)
	code, out, stderr, mem := runMain(t, []string{"read", "-o", "json", name}, "\n{\"n\":", `"truncated-frame"`)
	checkRun(t, code, ExitInput, out, mem, `"truncated-frame"`)
	if out.found["\n{\"n\":"] != 2 || !strings.Contains(stderr, "cut short") {
		t.Errorf("%d frames (want CONNECT, CONNECTED); stderr %q", out.found["\n{\"n\":"], stderr)
	}
	_ = fr
}

// TestHostileSendWithoutSubcommand: a frame of type SEND whose send
// sub-command is missing (another one set instead) crashed the tracker
// (nil CommandSend) and, with the parallel decoder, the whole process;
// found by FuzzPipeline (crasher kept in testdata/fuzz/FuzzPipeline).
func TestHostileSendWithoutSubcommand(t *testing.T) {
	v, fr := baseConv(t, 1000)
	v.send(0, frameOf(t, &pulsarapi.BaseCommand{Type: pulsarapi.BaseCommand_SEND.Enum(),
		Success: &pulsarapi.CommandSuccess{RequestId: ptr(uint64(1))}}))
	v.rest(fr)
	v.fin()
	name := writeTemp(t, "send.pcap", writePcap(t, v.recs, 262144))
	for _, args := range [][]string{{"read", "-q"}, {"read", "-o", "json"}, {"read", "-2", "-V"}, {"stats"}} {
		code, out, _, mem := runMain(t, append(args, name), "type-mismatch")
		checkRun(t, code, ExitOK, out, mem, "type-mismatch")
	}
}
