package render

import "testing"

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"persistent://public/default/t": "persistent://public/default/t",
		"héllo wörld":                   "héllo wörld",
		"a\x1b[31mb":                    `a\x1b[31mb`,
		"bell\x07":                      `bell\a`,
		"c1\u009b":                      `c1\u009b`,
		"bad\xffutf8":                   `bad\xffutf8`,
		"zero\u200bwidth":               `zero\u200bwidth`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
		if got := string(AppendSafe([]byte("x:"), in)); got != "x:"+want {
			t.Errorf("AppendSafe(%q) = %q", in, got)
		}
	}
}

func TestAppendJSONSafeAndEscaped(t *testing.T) {
	for _, c := range []struct{ in, json, text string }{
		{`{"a":"plain é 日本"}`, `{"a":"plain é 日本"}`, `{"a":"plain é 日本"}`},
		{"{\n\t\"a\": 1\r\n}", "{\n\t\"a\": 1\r\n}", "{\n\\x09\"a\": 1\\x0d\n}"},
		{"\"\x1b\x07\x7f\"", `"\u001b\u0007\u007f"`, `"\x1b\x07\x7f"`},
		{"\"\u009b\u202e\u200b\u2028\"", `"\u009b\u202e\u200b\u2028"`, `"\u009b\u202e\u200b\u2028"`},
		{"\"\U000e0001\"", `"\udb40\udc01"`, `"\U000e0001"`},
		{"\"\xff\"", `"\ufffd"`, `"\xff"`},
	} {
		if got := string(AppendJSONSafe([]byte("x"), []byte(c.in))); got != "x"+c.json {
			t.Errorf("AppendJSONSafe(%q) = %q, want %q", c.in, got[1:], c.json)
		}
		if got := string(AppendEscaped([]byte("x"), []byte(c.in))); got != "x"+c.text {
			t.Errorf("AppendEscaped(%q) = %q, want %q", c.in, got[1:], c.text)
		}
	}
}
