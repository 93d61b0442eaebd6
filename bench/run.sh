#!/usr/bin/env bash
# bench/run.sh [SIZE_MB] — side-by-side speed and memory of pulsarscope, the
# read limit (tcpdump) and tshark on one bulk capture made by the lab.
#
#   SIZE_MB  size of the bulk capture (default 500); it is made once with
#            tools/trafficgen/capture.sh (root) and kept in $BENCH_DIR.
#   REPS     repetitions per command (default 5; TSHARK_REPS for tshark, default 3)
#   BENCH_DIR  where the capture and results go (default /tmp/pulsarscope-bench)
#
# Every command reads the same file with the page cache warm (an untimed
# read before each round; the commands run in turn, a round per
# repetition, after tshark's runs). Reported: median wall time and spread (min–max), MB/s of
# capture, ratios to the read limit and to tshark, peak RSS (/usr/bin/time).
# Results: $BENCH_DIR/results.md (also printed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
size=${1:-500}
reps=${REPS:-5}
treps=${TSHARK_REPS:-3}
dir=${BENCH_DIR:-/tmp/pulsarscope-bench}
mkdir -p "$dir"
pcap=$dir/bulk-${size}MB.pcap

need=()
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v tshark >/dev/null || need+=(tshark)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ ! -s "$pcap" ]; then
  echo "making $pcap (bulk $size MB) ..." >&2
  "$root/tools/trafficgen/capture.sh" bulk "$size" "$pcap" >&2
fi
bytes=$(stat -L -c %s "$pcap")
bin=$dir/pulsarscope
(cd "$root" && go build -o "$bin" .)

# run1 NAME CMD : runs CMD once, appends "wall rss_kb" to $dir/times.NAME.
run1() {
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$dir/time.out" bash -c "$*" >/dev/null 2>"$dir/stderr.out" || {
    echo "bench: '$name' failed:" >&2; cat "$dir/stderr.out" >&2; exit 1; }
  tail -1 "$dir/time.out" >> "$dir/times.$name"
}

# summary LABEL NAME : prints "LABEL|median|min|max|rss_max" of $dir/times.NAME.
summary() {
  local label=$1 name=$2 med min max rss
  awk '{print $1}' "$dir/times.$name" | sort -g > "$dir/sorted.out"
  med=$(awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}' "$dir/sorted.out")
  min=$(head -1 "$dir/sorted.out"); max=$(tail -1 "$dir/sorted.out")
  rss=$(awk 'BEGIN {m=0} $2 > m {m=$2} END {print m}' "$dir/times.$name")
  echo "$label|$med|$min|$max|$rss"
}

# This machine's speed drifts by up to a third from minute to minute, and a
# long tshark run can push the capture out of the page cache: tshark runs
# first, on its own; then every other command runs once a round, in turn,
# the page cache warmed again before each round, so that the ratios compare
# commands measured at the same moments.
names=(limit stats quiet json text)
labels=("tcpdump -r X -w /dev/null (read limit)" "pulsarscope stats X" "pulsarscope read -q X"
  "pulsarscope read -o json X > /dev/null" "pulsarscope read X > /dev/null")
cmds=("tcpdump -r '$pcap' -w /dev/null" "'$bin' stats --progress never '$pcap'" "'$bin' read -q '$pcap'"
  "'$bin' read -o json '$pcap'" "'$bin' read '$pcap'")
rm -f "$dir"/times.*
for _ in $(seq "$treps"); do
  run1 tshark "tshark -r '$pcap' -o tcp.desegment_tcp_streams:TRUE -d tcp.port==6650,data -T json"
done
for _ in $(seq "$reps"); do
  cat "$pcap" > /dev/null
  for i in "${!names[@]}"; do
    run1 "${names[$i]}" "${cmds[$i]}"
  done
done
{
  summary "${labels[0]}" limit
  summary "tshark -r X (TCP reassembly, -T json)" tshark
  for i in 1 2 3 4; do
    summary "${labels[$i]}" "${names[$i]}"
  done
} > "$dir/raw.out"

limit=$(awk -F'|' 'NR==1 {print $2}' "$dir/raw.out")
tshark=$(awk -F'|' 'NR==2 {print $2}' "$dir/raw.out")
{
  echo "bulk capture: $pcap, $bytes bytes; $(nproc) cores, $(uname -r), $(date -u +%F)"
  echo "REPS=$reps (tshark $treps); median wall time, spread min–max, peak RSS"
  echo
  echo "| command | median s | spread s | MB/s | × read limit | × tshark | peak RSS MB |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -F'|' -v b="$bytes" -v l="$limit" -v t="$tshark" '{
    mbs = b / 1e6 / $2
    printf "| `%s` | %.3f | %.3f–%.3f | %.0f | %.2f | %.1f | %.0f |\n", $1, $2, $3, $4, mbs, l / $2, t / $2, $5 / 1024
  }' "$dir/raw.out"
} | tee "$dir/results.md"
