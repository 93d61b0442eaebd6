package cli

import (
	"github.com/pulsarscope/pulsarscope/render"
)

func newTextSink(e *env, o *readOptions, color bool) *render.Text {
	return render.NewText(e.stdout, render.TextOptions{
		Color: color, Verbose: o.verbose, Hex: o.hex, Payload: o.payload,
		ShowSecrets: o.showSecrets, Events: o.events,
	})
}

func newJSONSink(e *env, o *readOptions) *render.JSON {
	return render.NewJSON(e.stdout, render.JSONOptions{ShowSecrets: o.showSecrets, Payload: o.payload})
}
