#!/bin/sh
# Trace format size and speed: encoded bytes per event after zstd
# (goal <= 4 for the seed-000 loop) and decode+iterate throughput on one
# core (goal >= 20 million events/s), for a seed-000-shaped stream and a
# random-address stream.  Decode speed is the median of REPEATS reads.
# Then whole processes (goal >= 20 M events/s on 2 cores, memory
# flat): vmtrace stat and lint on recordings of the seed-000 loop (new
# style with touches, new style without, and the old style, whose
# mprotect/mmap(MAP_FIXED) pairs split and merge VMAs in the model),
# median elapsed time of REPEATS runs (and the rate of the fastest: on a
# shared machine, what the runs that found the second core free reached)
# and peak RSS, on both cores and on one (where the decoding thread
# shares the core with the model: about the sequential reader).
# Usage: B=build sh bench/format.sh [EVENTS] [REPEATS]
set -eu
. "$(dirname "$0")/common.inc"
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

# Whole processes: WHOLE events per recording (default 4 M).
whole=${WHOLE:-4000000}
make -s B="$B" "$B/vmtrace" "$B/vmrec" "$B/workloads/seed000" > /dev/null
rec() { # NAME EVENTS-PER-ITERATION MODE [VMREC-OPTION]
	"$B/vmrec" -q ${4:-} -o "$tmp/$1.zst" -- "$B/workloads/seed000" --threads 2 \
		--iterations $((whole / 2 / $2)) --mode "$3" > /dev/null ||
		{ echo "bench/format.sh: recording $1 failed" >&2; exit 1; }
}
rec new-touch 2 new
rec new-notouch 1 new --touch=none
rec old 3 old
echo
python3 - "$B/vmtrace" "$tmp" "$reps" "${cpu:-0}" <<'PY'
import json, statistics as st, subprocess, sys, time
vmtrace, tmp, reps, cpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
print(f"{'trace':<12} {'cmd':<5} {'cores':>5} {'events':>9} {'elapsed_s':>10} {'Mev/s':>7} {'best_Mev/s':>10} {'rss_MB':>7}   goal")
def once(cmd, path, cores):
    # (RSS from time(1): a child of Python counts Python's own pages)
    pre = ['/usr/bin/time', '-f', '%M', '-o', f'{tmp}/rss']
    pre += [] if cores == 2 else ['taskset', '-c', cpu]
    t0 = time.monotonic()
    subprocess.run(pre + [vmtrace, cmd, path], stdout=subprocess.DEVNULL)
    e = time.monotonic() - t0
    return e, int(open(f'{tmp}/rss').read().split()[-1]) / 1024
for t in ('new-touch', 'new-notouch', 'old'):
    path = f'{tmp}/{t}.zst'
    ev = json.loads(subprocess.run([vmtrace, 'stat', '--json', path], capture_output=True).stdout)['events']
    for cmd in ('stat', 'lint'):
        res = {2: [], 1: []}
        for _ in range(reps):          # the two alternate: one machine speed
            for cores in (2, 1):
                res[cores].append(once(cmd, path, cores))
        for cores in (2, 1):
            e = st.median(x[0] for x in res[cores]); rss = max(x[1] for x in res[cores])
            rate = ev / e / 1e6
            best = ev / min(x[0] for x in res[cores]) / 1e6
            goal = ('>= 20 Mev/s: ' + ('met' if rate >= 20 else 'MISSED')) if cores == 2 else ''
            print(f"{t:<12} {cmd:<5} {cores:>5} {ev:>9} {e:>10.3f} {rate:>7.1f} {best:>10.1f} {rss:>7.1f}   {goal}")
PY
