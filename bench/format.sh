#!/bin/sh
# Trace format size and speed: encoded bytes per event after zstd
# (goal <= 4 for the seed-000 loop) and decode+iterate throughput on one
# core (goal >= 20 million events/s), for a seed-000-shaped stream and a
# random-address stream.  Decode speed is the median of REPEATS reads.
# Usage: B=build sh bench/format.sh [EVENTS] [REPEATS]
set -eu
B=${B:-build}
n=${1:-2000000}
reps=${2:-5}
make -s B="$B" "$B/bench/fmtbench" >/dev/null
cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //; s/[,-].*//')
run() { taskset -c "${cpu:-0}" "$B/bench/fmtbench" "$@"; }
printf '%-9s %9s %11s %11s %10s %11s   %s\n' stream events file_bytes bytes/event enc_Mev/s dec_Mev/s goals
for s in seed000 random; do
	run "$s" "$n" "$reps" | while read -r name ev bytes bpe enc dec; do
		goal=""
		[ "$name" = seed000 ] && goal="<= 4 B/ev: $(awk -v x="$bpe" 'BEGIN{print (x<=4)?"met":"MISSED"}'), >= 20 Mev/s: $(awk -v x="$dec" 'BEGIN{print (x>=20)?"met":"MISSED"}')"
		printf '%-9s %9s %11s %11s %10s %11s   %s\n' "$name" "$ev" "$bytes" "$bpe" "$enc" "$dec" "$goal"
	done
done
