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
