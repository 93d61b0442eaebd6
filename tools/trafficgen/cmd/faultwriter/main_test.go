package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "basic.pcap")
	data, err := os.ReadFile("../../faults/testdata/loopback-basic.pcap")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	base := `{"file":"basic.pcap","packets":62,"connections":1,"frames":{"c2s":{"CONNECT":1,"SEND":10},"s2c":{"MESSAGE":10}},` +
		`"frames_total":56,"payload_frames":20,"checksummed_payload_frames":20,"batch_entries":0,"answered":{"SEND":10}}`
	if err := os.WriteFile(filepath.Join(dir, "basic.expect.json"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, out string
		faults    []string
		check     func(t *testing.T, x map[string]any)
	}{
		{"corrupt", "basic-corrupt.pcap", []string{"corrupt-payload:type=SEND,nth=2"}, func(t *testing.T, x map[string]any) {
			if x["frames_total"] != 56.0 || x["connections"] != 1.0 || x["batch_entries"] != 0.0 || x["packets"] != nil || x["answered"] != nil {
				t.Errorf("counts not carried over: %v", x)
			}
			f := x["faults"].([]any)[0].(map[string]any)
			if f["frame_type"] != "SEND" || f["frame_index"] == nil || f["packet"] == nil || f["stream_offset"] == nil {
				t.Errorf("fault entry %v", f)
			}
		}},
		{"drop", "basic-drop.pcap", []string{"drop:type=SEND,nth=2"}, func(t *testing.T, x map[string]any) {
			c2s := x["frames"].(map[string]any)["c2s"].(map[string]any)
			if x["frames_total"] != 55.0 || c2s["SEND"] != 9.0 || x["payload_frames"] != 19.0 || x["checksummed_payload_frames"] != 19.0 {
				t.Errorf("counts not adjusted: %v", x)
			}
			if x["batch_entries"] != 0.0 || x["counts_note"] == nil {
				t.Errorf("batch_entries or note wrong: %v", x)
			}
		}},
		{"port and pcapng", "basic-port.pcapng", []string{"port-rewrite:to=7000"}, func(t *testing.T, x map[string]any) {
			if flags, _ := json.Marshal(x["needs_flags"]); string(flags) != `["--port","7000"]` {
				t.Errorf("needs_flags %s", flags)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.out)
			expect := strings.TrimSuffix(out, filepath.Ext(out)) + ".expect.json"
			args := []string{"-in", in, "-out", out, "-expect", expect}
			for _, f := range tc.faults {
				args = append(args, "-fault", f)
			}
			var stdout bytes.Buffer
			if err := run(args, &stdout); err != nil {
				t.Fatal(err)
			}
			var lg logFile
			if err := json.Unmarshal(stdout.Bytes(), &lg); err != nil {
				t.Fatalf("log: %v\n%s", err, stdout.String())
			}
			if lg.PacketsIn != 62 || len(lg.Faults) != len(tc.faults) {
				t.Errorf("log %+v", lg)
			}
			b, err := os.ReadFile(expect)
			if err != nil {
				t.Fatal(err)
			}
			var x map[string]any
			if err := json.Unmarshal(b, &x); err != nil {
				t.Fatal(err)
			}
			if x["file"] != tc.out || x["base"] != "basic.pcap" || !strings.HasPrefix(x["command"].(string), "go run ./cmd/faultwriter -in ") {
				t.Errorf("header %v %v %v", x["file"], x["base"], x["command"])
			}
			tc.check(t, x)
			o, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if ng := bytes.HasPrefix(o, []byte{0x0a, 0x0d, 0x0d, 0x0a}); ng != strings.HasSuffix(out, ".pcapng") {
				t.Errorf("pcapng magic %v for %s", ng, out)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-in", "x.pcap", "-out", "y.pcap"},
		{"-in", "/nonexistent.pcap", "-out", "y.pcap", "-fault", "vlan"},
		{"-in", "x.pcap", "-out", "y.pcap", "-fault", "bogus"},
		{"-port", "70000", "-list", "-in", "x.pcap"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q): no error", args)
		}
	}
}

func TestList(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-list", "-in", "../../faults/testdata/loopback-basic.pcap"}, &out); err != nil {
		t.Fatal(err)
	}
	var l struct {
		Connections []map[string]any `json:"connections"`
		Frames      []map[string]any `json:"frames"`
	}
	if err := json.Unmarshal(out.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Connections) != 1 || len(l.Frames) != 56 {
		t.Errorf("%d connections, %d frames", len(l.Connections), len(l.Frames))
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"-log", "", "-fault", "drop:type=SEND,nth=2", "a b", "it's"})
	want := `-log '' -fault drop:type=SEND,nth=2 'a b' 'it'\''s'`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
