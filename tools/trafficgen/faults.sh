#!/usr/bin/env bash
# faults.sh makes the committed fault variants of testdata/pcaps/basic.pcap and
# testdata/pcaps/batching-compression.pcap with cmd/faultwriter, each with its
# NAME.expect.json (what was changed and which problems pulsarscope must
# report). Deterministic: the same base captures give the same variants.
#
# Usage: tools/trafficgen/faults.sh [PCAPDIR]   (default: testdata/pcaps of the repo)
#
# Targets are chosen by Pulsar frame (type and ordinal), not by packet number,
# so that they survive a re-capture of the bases. Run after capture.sh.
set -euo pipefail

cd "$(dirname "$0")"
dir=${1:-../../testdata/pcaps}
dir=${dir%/}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/faultwriter" ./cmd/faultwriter

for base in basic batching-compression large; do
	if [[ ! -f $dir/$base.pcap ]]; then
		echo "faults.sh: $dir/$base.pcap is missing; run capture.sh first" >&2
		exit 1
	fi
done

# variant NAME BASE FAULT... writes $dir/NAME (file name with extension) and
# $dir/NAME-without-extension.expect.json from $dir/BASE.pcap.
variant() {
	local name=$1 base=$2
	shift 2
	local args=(-in "$dir/$base.pcap" -out "$dir/$name" -log "")
	for f in "$@"; do
		args+=(-fault "$f")
	done
	args+=(-expect "$dir/${name%.*}.expect.json")
	"$bin/faultwriter" "${args[@]}"
	printf 'faults.sh: %-42s %s\n' "$name" "$(jq -r '([.faults[].kind] | join("+")) + "  expect: " + (.expect_problems | join(",") | if . == "" then "-" else . end)' "$dir/${name%.*}.expect.json")"
}

# basic.pcap: one producer and one consumer on one connection.
variant basic-drop.pcap basic 'drop:conn=1,dir=c2s,type=SEND,nth=2'
variant basic-reorder.pcap basic 'reorder:conn=1,dir=c2s,type=FLOW,nth=1'
variant basic-duplicate.pcap basic 'duplicate:conn=1,dir=s2c,type=MESSAGE,nth=1'
variant basic-cut-start.pcap basic 'cut-start:conn=1,dir=c2s,type=SEND,nth=1'
variant basic-corrupt.pcap basic 'corrupt-payload:conn=1,dir=c2s,type=SEND,nth=2'
variant basic-corrupt-message.pcap basic 'corrupt-payload:conn=1,dir=s2c,type=MESSAGE,nth=3'
variant basic-bad-totalsize.pcap basic 'bad-totalsize:conn=1,dir=c2s,type=SEND,nth=3'
variant basic-port-rewrite.pcap basic 'port-rewrite:from=6650,to=16650'
variant basic-ipv6.pcap basic 'ipv6:mode=loopback'
variant basic-vlan.pcap basic 'vlan:id=100'
# A segment carrying two frames (a SEND_RECEIPT and the MESSAGE after it) lost.
variant basic-drop-several.pcap basic 'drop:conn=1,dir=s2c,type=SEND_RECEIPT,nth=2'
# TCP port reuse: a copy of the connection on the same addresses and ports,
# with new initial sequence numbers, after the first one closed by FIN, never
# closed, or reset (a second later).
variant basic-reuse-fin.pcap basic 'reuse:conn=1,close=fin'
variant basic-reuse-open.pcap basic 'reuse:conn=1,close=none'
variant basic-reuse-rst.pcap basic 'reuse:conn=1,close=rst,gap=1s'
# A retransmission of a SEND's segment with one byte changed.
variant basic-conflict.pcap basic 'conflict:conn=1,dir=c2s,type=SEND,nth=2'
# A snap length of 120 bytes.
variant basic-snaplen.pcap basic 'snaplen:len=120'

# batching-compression.pcap: batches in every compression codec.
variant batching-compression-corrupt.pcap batching-compression 'corrupt-payload:conn=1,dir=c2s,type=SEND,nth=1'
variant batching-compression-drop.pcap batching-compression 'drop:conn=1,dir=c2s,type=SEND,nth=4'
variant batching-compression-bad-totalsize.pcap batching-compression 'bad-totalsize:conn=1,dir=s2c,type=MESSAGE,nth=1'
# large.pcap: SEND and MESSAGE frames spanning several segments; one segment
# in the middle of the 300,000-byte SEND lost (its header and command were
# captured), one in the middle of its MESSAGE, and its last one.
variant large-drop-inside.pcap large 'drop:conn=1,dir=c2s,type=SEND,nth=2,seg=3'
variant large-drop-message.pcap large 'drop:conn=1,dir=s2c,type=MESSAGE,nth=2,seg=2'
# The last segment of the SEND lost: nothing of the stream waits behind the
# hole when the broker's receipt acknowledges past it.
variant large-drop-tail.pcap large 'drop:conn=1,dir=c2s,type=SEND,nth=2,seg=8'

# (basic.pcapng, made by regen.sh with -fault pcapng, is the plain pcapng variant.)
variant batching-compression-ipv6-vlan.pcapng batching-compression 'ipv6:mode=ula' 'vlan:id=200' 'pcapng'
