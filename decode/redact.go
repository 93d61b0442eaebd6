package decode

import (
	"fmt"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
	"google.golang.org/protobuf/proto"
)

// RedactedMarker returns the text that replaces a secret of n bytes.
func RedactedMarker(n int) string { return fmt.Sprintf("<redacted %d bytes>", n) }

// HasSecrets reports whether cmd carries credentials that Redact replaces.
func HasSecrets(cmd *pulsarapi.BaseCommand) bool {
	if cmd == nil {
		return false
	}
	c := cmd.GetConnect()
	return (c != nil && (c.AuthData != nil || c.OriginalAuthData != nil)) ||
		cmd.GetAuthResponse().GetResponse().GetAuthData() != nil ||
		cmd.GetAuthChallenge().GetChallenge().GetAuthData() != nil
}

// Redact returns cmd with its credentials replaced by RedactedMarker(n),
// n being the secret's length: CommandConnect.auth_data and
// original_auth_data, CommandAuthResponse.response.auth_data and
// CommandAuthChallenge.challenge.auth_data. The marker is ASCII text; in
// the bytes fields it is stored as those ASCII bytes (a bytes field cannot
// hold anything else), so renderers show it as text. cmd itself is never
// modified: when it holds a secret the result is a deep copy, otherwise
// cmd itself is returned. Redact(nil) is nil.
func Redact(cmd *pulsarapi.BaseCommand) *pulsarapi.BaseCommand {
	if !HasSecrets(cmd) {
		return cmd
	}
	out := proto.Clone(cmd).(*pulsarapi.BaseCommand)
	if c := out.GetConnect(); c != nil {
		if c.AuthData != nil {
			c.AuthData = []byte(RedactedMarker(len(c.AuthData)))
		}
		if c.OriginalAuthData != nil {
			c.OriginalAuthData = proto.String(RedactedMarker(len(*c.OriginalAuthData)))
		}
	}
	if a := out.GetAuthResponse().GetResponse(); a != nil && a.AuthData != nil {
		a.AuthData = []byte(RedactedMarker(len(a.AuthData)))
	}
	if a := out.GetAuthChallenge().GetChallenge(); a != nil && a.AuthData != nil {
		a.AuthData = []byte(RedactedMarker(len(a.AuthData)))
	}
	return out
}
