package diff_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pulsarscope/pulsarscope/diff"
)

// Compare a committed golden transcript with a capture made by this test
// run, as a go test would: here a capture whose consumer asked for one more
// request than the golden's.
func ExampleCompare() {
	ctx := context.Background()
	opts := diff.Options{LatencyThreshold: 0.5} // report p99 growth over 50%
	golden, err := diff.Load(ctx, "../testdata/diff/basic.golden.json", opts)
	if err != nil {
		log.Fatal(err)
	}
	run, err := diff.Load(ctx, "../testdata/diff/basic-extra.pcap", opts)
	if err != nil {
		log.Fatal(err)
	}
	res, err := diff.Compare(golden, run, opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Streams {
		for _, h := range s.Hunks {
			for _, l := range h.Lines {
				if l.Op != " " {
					fmt.Println(s.Key+":", l.Op, l.Command.Dir, l.Command.Type)
				}
			}
		}
	}
	fmt.Println(res.Same())
	fmt.Println(res.Summary.Line(res.Same()))
	// Output:
	// consumer persistent://public/default/basic sub=basic-sub #1: + c2s GET_LAST_MESSAGE_ID
	// consumer persistent://public/default/basic sub=basic-sub #1: + s2c GET_LAST_MESSAGE_ID_RESPONSE
	// false
	// pulsarscope diff: differences: 2 commands added, 0 removed, 0 changed; 1 outcome changed; 0 new problems, 0 gone; 0 latency regressions
}
