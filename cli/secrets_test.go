package cli

import (
	"strings"
	"testing"
)

// TestSecretsRedacted reads a real capture of a client authenticating with
// a token (the lab's auth scenario: CONNECT, AUTH_CHALLENGE, AUTH_RESPONSE
// carry credentials) in every output format: the token must never appear
// unless --show-secrets is given, and then it must.
func TestSecretsRedacted(t *testing.T) {
	const token = "lab-token.eyJzdWIiOiJwdWxzYXJzY29wZS1sYWIifQ" // tools/trafficgen/cmd/driver LabToken
	const b64 = "bGFiLXRva2Vu"                                   // base64 of "lab-token", as protojson writes bytes
	capture := "../testdata/pcaps/auth.pcap"
	outputs := []struct {
		name string
		args []string
	}{
		{"text", nil},
		{"text -V", []string{"-V"}},
		{"text -x", []string{"-x"}},
		{"text -V -x --payload --events", []string{"-V", "-x", "--payload", "--events"}},
		{"json", []string{"-o", "json"}},
		{"json --payload", []string{"-o", "json", "--payload"}},
	}
	for _, o := range outputs {
		t.Run(o.name, func(t *testing.T) {
			args := append(append([]string{"read"}, o.args...), capture)
			out, errOut, code := run(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Contains(out, token) || strings.Contains(out, b64) || strings.Contains(out, "lab-token") {
				t.Errorf("the token appears in the output")
			}
			if !strings.Contains(out, "redacted") && !strings.Contains(out, "PHJlZGFjdGVk") && !strings.Contains(out, "****") {
				t.Errorf("no redaction marker in the output: is the capture still the auth scenario?")
			}
			shown, _, _ := run(t, append([]string{"read", "--show-secrets"}, args[1:]...)...)
			if !strings.Contains(shown, token) && !strings.Contains(shown, b64) {
				t.Errorf("--show-secrets does not show the token")
			}
		})
	}
}
