#!/usr/bin/env bash
# capture.sh SCENARIO OUT.pcap   — capture one traffic-lab scenario
# capture.sh bulk SIZE_MB [OUT.pcap] — high-rate traffic until the capture reaches SIZE_MB
#
# Starts tcpdump on loopback (port 6650), the lab broker (127.0.0.1:6650 and
# 127.0.0.2:6650) and the driver (the real Go client), then writes
# OUT.expect.json (OUT without .pcap) from the broker's frame log and the
# driver's counts. Fails if the driver fails or tcpdump dropped packets.
# Stops only the processes it started.
set -euo pipefail

usage() { echo "usage: $0 SCENARIO OUT.pcap | $0 bulk SIZE_MB [OUT.pcap]" >&2; exit 2; }
[ $# -ge 2 ] || usage
scenario=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
size_mb=0
if [ "$scenario" = bulk ]; then
  size_mb=$2
  [[ $size_mb =~ ^[0-9]+$ ]] && [ "$size_mb" -gt 0 ] || usage
  out=${3:-/tmp/pulsarscope-bulk-${size_mb}MB.pcap}
else
  out=$2
fi
case $scenario in
  basic|keepalive|batching-compression|chunking|large|partitioned|subscriptions|errors|many|any|auth|encryption|concurrent|bulk) ;;
  basic-batching|basic-lz4|basic-extra|basic-producer-error|basic-slow-lookup|many-slow-producer) ;; # variants for pulsarscope diff
  *) echo "unknown scenario $scenario" >&2; usage ;;
esac
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
expect=${out%.pcap}.expect.json
rel=${out#"$root"/}
if [ "$scenario" = bulk ]; then cmdline="tools/trafficgen/capture.sh bulk $size_mb $rel"; else cmdline="tools/trafficgen/capture.sh $scenario $rel"; fi

if ! command -v tcpdump >/dev/null 2>&1; then
  apt-get update && apt-get install -y tcpdump
fi

# One capture at a time on this machine: every capture listens on port 6650.
exec 9>/tmp/pulsarscope-trafficgen-capture.lock
flock -w 300 9 || { echo "capture.sh: another capture holds the lock" >&2; exit 1; }

work=$(mktemp -d /tmp/trafficgen.XXXXXX)
TP= BP= DP=
cleanup() {
  for p in $DP $BP; do kill -TERM "$p" 2>/dev/null || true; done
  if [ -n "$TP" ]; then kill -INT "$TP" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if [ -z "${KEEP_WORK:-}" ]; then rm -rf "$work"; else echo "capture.sh: work files kept in $work" >&2; fi
}
trap cleanup EXIT

# TRAFFICGEN_BIN may name a folder with prebuilt broker, driver and labtool
# (regen.sh builds them once for all scenarios).
bin=${TRAFFICGEN_BIN:-}
if [ -z "$bin" ] || [ ! -x "$bin/broker" ] || [ ! -x "$bin/driver" ] || [ ! -x "$bin/labtool" ]; then
  bin=$work
  (cd "$here" && go build -o "$bin/broker" ./cmd/broker && go build -o "$bin/driver" ./cmd/driver && go build -o "$bin/labtool" ./cmd/labtool)
fi

iface=lo
linkopt=()
if [ "$scenario" = any ]; then iface=any; linkopt=(-y LINUX_SLL2); fi
bufopt=()
case $scenario in bulk|large) bufopt=(-B 65536) ;; esac
brokeropts=()
case $scenario in
  batching-compression|partitioned) brokeropts+=(-entry-metadata) ;;
  bulk) brokeropts+=(-release-acked -lifetime 600s) ;;
  basic-producer-error) brokeropts+=(-fail-first PRODUCER=ServiceNotReady) ;;
  basic-slow-lookup) brokeropts+=(-delay LOOKUP=50ms) ;;
  many-slow-producer) brokeropts+=(-delay PRODUCER=20ms) ;;
  auth) brokeropts+=(-auth-challenge) ;;
  concurrent) brokeropts+=(-partitions 16) ;;
  keepalive) brokeropts+=(-delay PING=1200ms) ;;
esac

start=$(date +%s.%N)
rm -f "$out"
tcpdump -U -s 0 -i "$iface" "${linkopt[@]}" "${bufopt[@]}" -Z root -w "$out" 'tcp port 6650' 2>"$work/tcpdump.err" &
TP=$!
for _ in $(seq 100); do grep -q "listening on" "$work/tcpdump.err" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$work/tcpdump.err" || { cat "$work/tcpdump.err" >&2; echo "capture.sh: tcpdump did not start" >&2; exit 1; }

"$bin/broker" -addr 127.0.0.1:6650 -redirect-addr 127.0.0.2:6650 -lifetime 90s -log "$work/broker.log" -ready "$work/ready" "${brokeropts[@]}" 2>"$work/broker.err" &
BP=$!
for _ in $(seq 100); do [ -f "$work/ready" ] && break; kill -0 "$BP" 2>/dev/null || break; sleep 0.05; done
[ -f "$work/ready" ] || { cat "$work/broker.err" >&2; echo "capture.sh: broker did not start" >&2; exit 1; }

drc=0
if [ "$scenario" = bulk ]; then
  "$bin/driver" -scenario bulk -result "$work/driver.json" &
  DP=$!
  limit=$((size_mb * 1024 * 1024))
  while kill -0 "$DP" 2>/dev/null && [ "$(stat -c %s "$out")" -lt "$limit" ]; do sleep 0.05; done
  kill -TERM "$DP" 2>/dev/null || true
  wait "$DP" || drc=$?
else
  "$bin/driver" -scenario "$scenario" -result "$work/driver.json" || drc=$?
fi
DP=

kill -TERM "$BP"
if ! wait "$BP"; then
  echo "capture.sh: broker failed:" >&2; cat "$work/broker.err" >&2
  [ "$drc" -ne 0 ] || drc=1
fi
BP=
sleep 1
kill -INT "$TP"; wait "$TP" || true
TP=
end=$(date +%s.%N)

cat "$work/tcpdump.err" >&2
dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel.*/\1/p' "$work/tcpdump.err")
if [ "$drc" -ne 0 ]; then
  echo "capture.sh: driver failed (exit $drc)" >&2; exit 1
fi
if [ -z "$dropped" ] || [ "$dropped" -ne 0 ]; then
  echo "capture.sh: tcpdump dropped packets (${dropped:-unknown})" >&2; exit 1
fi

"$bin/labtool" expect -scenario "$scenario" -pcap "$out" -command "$cmdline" \
  -broker-log "$work/broker.log" -driver-result "$work/driver.json" -out "$expect"
printf 'capture.sh: %s -> %s (%s bytes, %s s)\n' "$scenario" "$rel" "$(stat -c %s "$out")" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
