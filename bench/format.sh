#!/bin/sh
# Trace format size and speed: encoded bytes per event after zstd
# (goal <= 4 for the seed-000 loop) and decode+iterate throughput on one
# core (goal >= 20 million events/s), for a seed-000-shaped stream and a
# random-address stream.  Decode speed is the median of REPEATS reads.
# Then whole processes (goal >= 20 M events/s on 2 cores, memory flat;
# export may stop at >= 10 where formatting the text is what remains):
# vmtrace stat, lint, diff (of a trace with itself: the events of both
# count) and export in every format, on recordings of the seed-000 loop
# in each trace style: old (mprotect + mmap(PROT_NONE, MAP_FIXED) pairs,
# which split and merge VMAs in the model) and new (touch + madvise),
# each with its page faults and without (--touch=none).  Median elapsed
# time of REPEATS runs (and the rate of the fastest: on a shared machine,
# what the runs that found the second core free reached) and peak RSS;
# stat and lint also on one core (where the decoding thread shares the
# core with the model: about the sequential reader).
# Usage: B=build sh bench/format.sh [EVENTS] [REPEATS]
# WHOLE=N events per recording (default 4 M); TRACES=DIR keeps the
# recordings in DIR and reuses those already there; CMDS="stat lint ..."
# and STYLES="old-touch ..." pick rows; VMTRACE="PATH..." measures those
# vmtrace binaries (a baseline kept from before a change, and $B/vmtrace)
# instead of $B's, their runs alternating, a row each.
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
dir=${TRACES:-$tmp}
mkdir -p "$dir"
make -s B="$B" "$B/vmtrace" "$B/vmrec" "$B/workloads/seed000" > /dev/null
rec() { # NAME EVENTS-PER-ITERATION MODE [VMREC-OPTION]
	[ -s "$dir/$1.zst" ] && return 0
	"$B/vmrec" -q ${4:-} -o "$dir/$1.zst" -- "$B/workloads/seed000" --threads 2 \
		--iterations $((whole / 2 / $2)) --mode "$3" > /dev/null ||
		{ echo "bench/format.sh: recording $1 failed" >&2; exit 1; }
}
styles=${STYLES:-old-touch old-notouch new-touch new-notouch}
for t in $styles; do
	case $t in
	old-touch) rec "$t" 3 old ;;
	old-notouch) rec "$t" 2 old --touch=none ;;
	new-touch) rec "$t" 2 new ;;
	new-notouch) rec "$t" 1 new --touch=none ;;
	*) echo "bench/format.sh: unknown style '$t'" >&2; exit 2 ;;
	esac
done
echo
python3 - "${VMTRACE:-$B/vmtrace}" "$tmp" "$dir" "$reps" "${cpu:-0}" "$styles" \
	"${CMDS:-stat lint diff csv perfetto jsonl}" <<'PY'
import json, statistics as st, subprocess, sys, time
bins, tmp, dir, reps, cpu = sys.argv[1].split(), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
styles, cmds = sys.argv[6].split(), sys.argv[7].split()
label = lambda b: '' if len(bins) == 1 else f"{b[-16:]:<16} "
print(("" if len(bins) == 1 else f"{'vmtrace':<16} ") +
      f"{'trace':<12} {'cmd':<8} {'cores':>5} {'events':>9} {'elapsed_s':>10} {'Mev/s':>7} {'best_Mev/s':>10} {'rss_MB':>7}   goal")
def argv(vmtrace, cmd, path):
    if cmd in ('stat', 'lint'):
        return [vmtrace, cmd, path]
    if cmd == 'diff':
        return [vmtrace, 'diff', path, path]
    return [vmtrace, 'export', '--format=' + cmd, path]
def once(vmtrace, cmd, path, cores):
    # (RSS from time(1): a child of Python counts Python's own pages)
    pre = ['/usr/bin/time', '-f', '%M', '-o', f'{tmp}/rss']
    pre += [] if cores == 2 else ['taskset', '-c', cpu]
    t0 = time.monotonic()
    # lint and diff exit 1 on a finding; their output goes where export's does
    subprocess.run(pre + argv(vmtrace, cmd, path), stdout=subprocess.DEVNULL)
    e = time.monotonic() - t0
    return e, int(open(f'{tmp}/rss').read().split()[-1]) / 1024
for t in styles:
    path = f'{dir}/{t}.zst'
    ev = json.loads(subprocess.run([bins[-1], 'stat', '--json', path], capture_output=True).stdout)['events']
    for cmd in cmds:
        n = 2 * ev if cmd == 'diff' else ev
        allcores = (2, 1) if cmd in ('stat', 'lint') else (2,)
        res = {(b, c): [] for b in bins for c in allcores}
        for _ in range(reps):          # all alternate: one machine speed
            for b in bins:
                for cores in allcores:
                    res[b, cores].append(once(b, cmd, path, cores))
        for b, cores in res:
            e = st.median(x[0] for x in res[b, cores]); rss = max(x[1] for x in res[b, cores])
            rate = n / e / 1e6
            best = n / min(x[0] for x in res[b, cores]) / 1e6
            goal = ''
            if cores == 2:
                goal = '>= 20 Mev/s: ' + ('met' if rate >= 20 else
                        'met at 10 (export)' if rate >= 10 and cmd not in ('stat', 'lint', 'diff') else 'MISSED')
            print(f"{label(b)}{t:<12} {cmd:<8} {cores:>5} {n:>9} {e:>10.3f} {rate:>7.1f} {best:>10.1f} {rss:>7.1f}   {goal}", flush=True)
PY
