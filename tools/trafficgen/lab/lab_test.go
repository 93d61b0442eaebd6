package lab

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pcapFile(linkType uint32, packets ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0xa1b2c3d4)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = binary.LittleEndian.AppendUint32(b, 262144)
	b = binary.LittleEndian.AppendUint32(b, linkType)
	for _, p := range packets {
		b = append(b, make([]byte, 8)...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

func TestParseCapture(t *testing.T) {
	info, err := parseCapture(pcapFile(276, []byte("abc"), []byte("defg")))
	if err != nil || info.Format != "pcap" || info.LinkType != "LINUX_SLL2" || info.Packets != 2 {
		t.Fatalf("got %+v, %v", info, err)
	}
	if _, err := parseCapture(pcapFile(1, []byte("abc"))[:30]); err == nil {
		t.Error("truncated capture: want an error")
	}
}

func TestFromBrokerLog(t *testing.T) {
	log := `{"t":"x","ev":"accept","conn":1}
{"t":"x","ev":"frame","conn":1,"dir":"c2s","type":"CONNECT"}
{"t":"x","ev":"frame","conn":1,"dir":"s2c","type":"CONNECTED","answers":"CONNECT"}
{"t":"x","ev":"frame","conn":1,"dir":"c2s","type":"SEND","payload":true,"checksum":true,"batch":4}
{"t":"x","ev":"frame","conn":1,"dir":"s2c","type":"MESSAGE","payload":true,"checksum":true,"entry_meta":true,"batch":4}
`
	var e Expect
	if err := e.FromBrokerLog(strings.NewReader(log)); err != nil {
		t.Fatal(err)
	}
	if e.Connections != 1 || e.FramesTotal != 4 || e.PayloadFrames != 2 || e.ChecksummedPayloadFrames != 2 ||
		e.BrokerEntryMetadataFrames != 1 || e.BatchEntries != 8 || e.Answered["CONNECT"] != 1 || e.Frames.C2S["SEND"] != 1 {
		t.Errorf("got %+v", e)
	}
}

func TestRenderReadmeGeneric(t *testing.T) {
	dir := t.TempDir()
	base := `{"file":"basic.pcap","scenario":"basic","command":"tools/trafficgen/capture.sh basic testdata/pcaps/basic.pcap",
"link_type":"EN10MB","connections":1,"frames":{"c2s":{"CONNECT":1},"s2c":{"CONNECTED":1}},"frames_total":2,"answered":{"CONNECT":1}}`
	variant := `{"file":"basic-corrupt.pcap","base":"basic.pcap","faults":[{"kind":"corrupt-payload","frame":3},"second"],"frames_total":2}`
	for name, body := range map[string]string{"basic.expect.json": base, "basic-corrupt.expect.json": variant} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := RenderReadme(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"## basic.pcap", "## basic-corrupt.pcap", "- base: `basic.pcap`",
		"- faults:\n  - `{\"frame\":3,\"kind\":\"corrupt-payload\"}`\n  - `second`", "| CONNECT | 1 | – |",
		"`tools/trafficgen/capture.sh basic testdata/pcaps/basic.pcap`"} {
		if !strings.Contains(s, want) {
			t.Errorf("README lacks %q:\n%s", want, s)
		}
	}
}
