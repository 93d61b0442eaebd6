#!/usr/bin/env bash
# regen.sh — regenerate every committed capture in testdata/pcaps: each
# scenario's .pcap and .expect.json, basic.pcapng, the fault variants (via
# faults.sh when present), README.md, and the product's text golden files
# (testdata/golden).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$root/testdata/pcaps
mkdir -p "$out"
cd "$root"

work=$(mktemp -d /tmp/trafficgen-regen.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$here" && go build -o "$work/broker" ./cmd/broker && go build -o "$work/driver" ./cmd/driver && go build -o "$work/labtool" ./cmd/labtool)
export TRAFFICGEN_BIN=$work

for s in basic keepalive batching-compression chunking large partitioned subscriptions errors many any auth encryption concurrent; do
  "$here/capture.sh" "$s" "testdata/pcaps/$s.pcap"
done

# basic.pcapng: the same packets in pcapng, written by the fault writer's
# pcapng option when it is there, otherwise by editcap.
rm -f "$out/basic.pcapng"
if [ -f "$here/cmd/faultwriter/main.go" ] && (cd "$here" && go build -o "$work/faultwriter" ./cmd/faultwriter); then
  "$work/faultwriter" -in "$out/basic.pcap" -out "$out/basic.pcapng" -fault pcapng -log ""
  how="(cd tools/trafficgen && go run ./cmd/faultwriter -in ../../testdata/pcaps/basic.pcap -out ../../testdata/pcaps/basic.pcapng -fault pcapng -log '')"
else
  command -v editcap >/dev/null 2>&1 || { apt-get update && apt-get install -y wireshark-common; }
  editcap -F pcapng "$out/basic.pcap" "$out/basic.pcapng"
  how="editcap -F pcapng testdata/pcaps/basic.pcap testdata/pcaps/basic.pcapng"
fi
"$work/labtool" derive -from "$out/basic.expect.json" -pcap "$out/basic.pcapng" -command "$how" -out "$out/basic.pcapng.expect.json"

if [ -x "$here/faults.sh" ] || [ -f "$here/faults.sh" ]; then
  bash "$here/faults.sh"
fi

"$work/labtool" readme -dir "$out"

# The product's text golden files show these captures' ports and times:
# rewrite them from the new captures (the JSON golden test checks the counts
# against the new expect.json files on its own).
go test ./cli -run 'TestGoldenText' -update >/dev/null

for f in "$out"/*.pcap "$out"/*.pcapng; do
  printf '%s: %s packets (tcpdump -r)\n' "${f#"$root"/}" "$(tcpdump -r "$f" 2>/dev/null | wc -l)"
done
du -sh "$out"
