#!/usr/bin/env bash
# repeat.sh — the proof that `pulsarscope diff` does not flake: record each
# scenario N times with the lab and compare every pair of runs; every pair
# must compare equal by default (exit 0). Then each one-change variant is
# compared with its scenario's first run and must differ (exit 1).
#
# Usage: tools/trafficgen/repeat.sh [N] [SCENARIO...]
#   N          runs per scenario (default 5; 20 by hand)
#   SCENARIO   default: basic batching-compression chunking partitioned subscriptions many concurrent
# Needs root (tcpdump on loopback), like capture.sh. Prints one line per
# pair that differs and a summary; exits 1 if any unchanged pair differs or
# any variant compares equal.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-5}
shift || true
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(basic batching-compression chunking partitioned subscriptions many concurrent)
work=$(mktemp -d /tmp/trafficgen-repeat.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/pulsarscope" .)
ps=$work/pulsarscope

pairs=0 false=0
for s in "${scenarios[@]}"; do
  for i in $(seq "$n"); do
    "$here/capture.sh" "$s" "$work/$s-$i.pcap" >/dev/null 2>"$work/$s-$i.log" || { cat "$work/$s-$i.log" >&2; exit 2; }
    "$ps" read -o transcript "$work/$s-$i.pcap" > "$work/$s-$i.json"
  done
  for i in $(seq "$n"); do
    for j in $(seq $((i + 1)) "$n"); do
      pairs=$((pairs + 1))
      if ! "$ps" diff "$work/$s-$i.json" "$work/$s-$j.json" > "$work/d.txt" 2>&1; then
        false=$((false + 1))
        echo "FALSE DIFFERENCE: $s run $i vs run $j: $(tail -1 "$work/d.txt")"
        grep '^@@ ' "$work/d.txt" | head -5 | sed 's/^/    /'
      fi
    done
  done
  echo "repeat.sh: $s: $n runs compared in pairs"
done

# Variants with one real change, each against its scenario's first run.
variants=(basic-batching:basic basic-lz4:basic basic-extra:basic basic-producer-error:basic)
missed=0
for v in "${variants[@]}"; do
  name=${v%%:*} base=${v##*:}
  [ -f "$work/$base-1.json" ] || continue
  "$here/capture.sh" "$name" "$work/$name.pcap" >/dev/null 2>"$work/$name.log" || { cat "$work/$name.log" >&2; exit 2; }
  if "$ps" diff "$work/$base-1.json" "$work/$name.pcap" > "$work/d.txt" 2>&1; then
    missed=$((missed + 1))
    echo "MISSED: $name compares equal to $base"
  else
    echo "repeat.sh: $name differs from $base: $(tail -1 "$work/d.txt" | sed 's/^pulsarscope diff: //')"
  fi
done
echo "repeat.sh: $false false differences in $pairs pairs of unchanged runs; $missed variants not told apart"
[ "$false" -eq 0 ] && [ "$missed" -eq 0 ]
