// Command pulsarscope inspects Apache Pulsar binary-protocol traffic in
// packet captures and on live interfaces.
package main

import (
	"os"

	"github.com/pulsarscope/pulsarscope/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
