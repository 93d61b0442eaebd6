package broker

import (
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/decode/pulsarapi"
)

func TestParseDelay(t *testing.T) {
	tests := []struct {
		in      string
		typ     string
		d       time.Duration
		wantErr bool
	}{
		{"LOOKUP=50ms", "LOOKUP", 50 * time.Millisecond, false},
		{"lookup = 1s", "LOOKUP", time.Second, false},
		{"LOOKUP", "", 0, true},
		{"NOPE=1s", "", 0, true},
		{"LOOKUP=soon", "", 0, true},
		{"LOOKUP=-1s", "", 0, true},
	}
	for _, tt := range tests {
		m := map[string]time.Duration{}
		err := ParseDelay(m, tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && m[tt.typ] != tt.d {
			t.Errorf("%q: got %v", tt.in, m)
		}
	}
}

func TestParseFailFirst(t *testing.T) {
	tests := []struct {
		in      string
		typ     string
		code    pulsarapi.ServerError
		wantErr bool
	}{
		{"PRODUCER=ServiceNotReady", "PRODUCER", pulsarapi.ServerError_ServiceNotReady, false},
		{"subscribe=AuthorizationError", "SUBSCRIBE", pulsarapi.ServerError_AuthorizationError, false},
		{"LOOKUP=ServiceNotReady", "", 0, true},
		{"PRODUCER=Oops", "", 0, true},
		{"PRODUCER", "", 0, true},
	}
	for _, tt := range tests {
		m := map[string]pulsarapi.ServerError{}
		err := ParseFailFirst(m, tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && m[tt.typ] != tt.code {
			t.Errorf("%q: got %v", tt.in, m)
		}
	}
}
