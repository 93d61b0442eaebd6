package render

import (
	"bytes"

	"github.com/pulsarscope/pulsarscope/decode"
	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

// Redacted returns cmd with its credentials replaced (decode.Redact), or
// cmd itself when showSecrets is set.
func Redacted(cmd *pulsarapi.BaseCommand, showSecrets bool) *pulsarapi.BaseCommand {
	if showSecrets {
		return cmd
	}
	return decode.Redact(cmd)
}

// secrets lists the credential values cmd carries (the ones decode.Redact
// replaces).
func secrets(cmd *pulsarapi.BaseCommand) [][]byte {
	var out [][]byte
	add := func(b []byte) {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	if c := cmd.GetConnect(); c != nil {
		add(c.AuthData)
		add([]byte(c.GetOriginalAuthData()))
	}
	add(cmd.GetAuthResponse().GetResponse().GetAuthData())
	add(cmd.GetAuthChallenge().GetChallenge().GetAuthData())
	return out
}

// MaskedRaw returns the frame's raw bytes for a hex dump: raw itself when
// showSecrets is set or the command carries no credentials, otherwise a
// copy in which every credential's bytes are replaced by '*'.
func MaskedRaw(f *decode.Frame, showSecrets bool) []byte {
	if showSecrets || !decode.HasSecrets(f.Command) {
		return f.Raw
	}
	out := bytes.Clone(f.Raw)
	for _, s := range secrets(f.Command) {
		for i := 0; ; {
			j := bytes.Index(out[i:], s)
			if j < 0 {
				break
			}
			copy(out[i+j:], bytes.Repeat([]byte{'*'}, len(s)))
			i += j + len(s)
		}
	}
	return out
}
