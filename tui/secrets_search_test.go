package tui

import (
	"strings"
	"testing"
)

// TestSecretsSearch: searching the timeline for the token must not find
// the frames that carry it (an oracle for the secret) without ShowSecrets,
// and the search must not bring it on screen (other than the text typed).
func TestSecretsSearch(t *testing.T) {
	m := loadModel(t, pcap("auth.pcap"), 140, 40)
	press(m, "g")
	press(m, "/")
	typeText(m, "lab-token")
	press(m, "enter")
	if !strings.Contains(m.message, "not found") {
		t.Errorf("search for the token found frame %d (message %q)", cursorFrame(m), m.message)
	}
	s := strings.ReplaceAll(screenText(m), "not found: lab-token", "")
	if strings.Contains(s, "lab-token") {
		t.Errorf("the token is on the screen after searching:\n%s", s)
	}
}
