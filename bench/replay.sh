#!/bin/sh
# Replay overhead and fidelity on the seed-000 workload:
#  (a) replay wall time / native wall time, new style, 1 and 2 threads
#      (goal <= 1.10);
#  (b) replayed minor faults / native (goal 0.98-1.02), context switches
#      (goal: within 10% or 50, whichever is larger);
#  (c) --scale=1,2 on the old-style trace: how voluntary context switches
#      and wall time grow with K.
# Native numbers are the workload's own (its loop: getrusage(RUSAGE_SELF)
# deltas and wall time between its start and end barriers); replay numbers
# are vmreplay's totals (first to last replayed event).  Native and replay
# runs alternate (A B B A A B ...).  The wall ratio is the median of the
# pairs' ratios (each replay over the native run next to it): this
# machine's speed drifts by up to 40% over seconds, and a pair sees one
# speed; the ratio of the two medians is printed beside it.  Single pair
# ratios spread over about +-10% on this machine (quartiles), so the
# median of 11 pairs moved by +-4% from run to run, of 21 by +-3%; 41 is
# the default (about 3 minutes).  Beside the median, a 90% bootstrap
# interval of it (ci90): a goal whose interval contains its limit is
# decided by this machine's noise, and the goals column says so.
#  (e) the replay threads' self-watch (their fault samples and switch
#      records, for the fidelity section): replay wall time and faults
#      with it over --no-watch, the two alternating on one trace, new and
#      old mode (goal: wall within 1.05).
#  (d) long traces: the seed-000 loop recorded at about 1 M,
#      10 M and 50 M events; for each, one native run and one replay: the
#      replay's peak RSS (the largest process of its tree), the load (time
#      and events/s), the time from the start of the load to the first
#      replayed op, and replay wall time against native (single runs: the
#      rows show how these grow with the trace, not a 5% difference).
# Environment: B (build dir), RUNS (alternations, default 41), ITER
# (iterations per thread, default 100000), PARTS (which of a,c,d,e to run;
# default all), LONG (the event counts of (d), default
# "1000000 10000000 50000000").
. "$(dirname "$0")/common.inc"
RUNS=${RUNS:-41} ITER=${ITER:-100000} PARTS=${PARTS:-a,c,d,e}
LONG=${LONG:-1000000 10000000 50000000}
REC=$B/vmrec RP=$B/vmreplay WL=$B/workloads/seed000
need "$REC" "$RP" "$WL"

# CASE THREADS MODE: record once, then RUNS alternations native/replay.
measure() {
	name=$1 threads=$2 mode=$3
	"$REC" -q -o "$tmp/$name.zst" -- "$WL" --threads "$threads" --iterations "$ITER" \
		--mode "$mode" > /dev/null || { echo "bench/replay.sh: recording $name failed" >&2; exit 1; }
	i=0
	while [ $i -lt "$RUNS" ]; do
		# A B, then B A: a steady drift of the machine's speed favours
		# neither side.
		[ $((i % 2)) -eq 1 ] && replay_once "$name" $i
		"$WL" --threads "$threads" --iterations "$ITER" --mode "$mode" | grep '^summary:' >> "$tmp/$name.native"
		[ $((i % 2)) -eq 0 ] && replay_once "$name" $i
		i=$((i + 1))
	done
}

replay_once() {
	"$RP" -q --json="$tmp/$1.$2.json" "$tmp/$1.zst" > /dev/null ||
		{ echo "bench/replay.sh: replay of $1 failed" >&2; exit 1; }
}

part() { case ",$PARTS," in *",$1,"*) return 0;; esac; return 1; }

if part a; then
measure new-1thread 1 new
measure new-2threads 2 new
python3 - "$tmp" "$RUNS" "$ITER" <<'PY'
import json, random, re, statistics as st, sys
tmp, runs, it = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = st.median

def ci90(xs):
    """90% percentile-bootstrap interval of the median of xs (fixed seed)."""
    rnd = random.Random(1)
    ms = sorted(med(rnd.choices(xs, k=len(xs))) for _ in range(2000))
    return ms[100], ms[1899]
print(f"seed000 --mode new, {it} iterations per thread: medians of {runs} alternating runs")
print("(wall: median of the pairs' replay/native ratios, ci90 its 90% bootstrap interval; of_med: ratio of the two medians)")
print(f"{'case':<13} {'native_ms':>10} {'replay_ms':>10} {'wall':>6} {'ci90':>11} {'of_med':>6} {'native_flt':>10} "
      f"{'replay_flt':>10} {'faults':>6} {'native_cs':>9} {'replay_cs':>9}  goals")
for name in ('new-1thread', 'new-2threads'):
    nat = [dict(re.findall(r'(\w+)=(\d+)', l)) for l in open(f'{tmp}/{name}.native')]
    rep = [json.load(open(f'{tmp}/{name}.{i}.json'))['median'] for i in range(runs)]
    nw = med(int(n['wall_ns']) for n in nat); rw = med(r['wall_ns'] for r in rep)
    ratios = [r['wall_ns'] / int(n['wall_ns']) for n, r in zip(nat, rep)]
    pair = med(ratios)
    lo, hi = ci90(ratios)
    nf = med(int(n['minflt']) for n in nat); rf = med(r['minor_faults'] for r in rep)
    nc = med(int(n['nvcsw']) + int(n['nivcsw']) for n in nat)
    rc = med(r['voluntary_cs'] + r['involuntary_cs'] for r in rep)
    wr, fr = pair, rf / nf
    goals = []
    goals.append(('wall ok' if wr <= 1.10 else 'WALL MISSED') +
                 (' (within noise)' if lo <= 1.10 < hi else ''))
    goals.append('faults ok' if 0.98 <= fr <= 1.02 else 'FAULTS MISSED')
    goals.append('cs ok' if abs(rc - nc) <= max(50, 0.1 * nc) else 'CS MISSED')
    print(f"{name:<13} {nw/1e6:>10.1f} {rw/1e6:>10.1f} {wr:>6.3f} {f'{lo:.3f}-{hi:.3f}':>11} {rw/nw:>6.3f} {nf:>10.0f} {rf:>10.0f} "
          f"{fr:>6.3f} {nc:>9.0f} {rc:>9.0f}  {', '.join(goals)}")
PY
fi

# (c) --scale on the old-style trace (mprotect + mmap(MAP_FIXED): mmap_lock
# taken for writing by every call).
if part c; then
"$REC" -q -o "$tmp/old.zst" -- "$WL" --threads 2 --iterations $((ITER / 5)) --mode old > /dev/null ||
	{ echo "bench/replay.sh: recording old failed" >&2; exit 1; }
i=0
while [ $i -lt "$RUNS" ]; do
	for k in 1 2; do
		"$RP" -q --scale=$k --json="$tmp/old.$k.$i.json" "$tmp/old.zst" > /dev/null ||
			{ echo "bench/replay.sh: --scale=$k replay failed" >&2; exit 1; }
	done
	i=$((i + 1))
done
python3 - "$tmp" "$RUNS" "$((ITER / 5))" <<'PY'
import json, statistics as st, sys
tmp, runs, it = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"\nseed000 --mode old --threads 2, {it} iterations: --scale=K, medians of {runs} alternating runs")
print(f"{'K':>2} {'wall_ms':>9} {'vcs':>8} {'ivcs':>8} {'minflt':>9} {'wall/K=1':>9} {'vcs/K=1':>8}")
base = None
for k in (1, 2):
    rs = [json.load(open(f'{tmp}/old.{k}.{i}.json'))['median'] for i in range(runs)]
    w = st.median(r['wall_ns'] for r in rs); v = st.median(r['voluntary_cs'] for r in rs)
    iv = st.median(r['involuntary_cs'] for r in rs); f = st.median(r['minor_faults'] for r in rs)
    if base is None:
        base = (w, max(v, 1))
    print(f"{k:>2} {w/1e6:>9.1f} {v:>8.0f} {iv:>8.0f} {f:>9.0f} {w/base[0]:>9.2f} {v/base[1]:>8.1f}")
PY
fi

# (e) the self-watch's cost: the same trace replayed with and without it,
# alternating (A B, B A, ...).
if part e; then
for mode in new old; do
	"$REC" -q --force -o "$tmp/watch-$mode.zst" -- "$WL" --threads 2 --iterations $((ITER / 5)) \
		--mode $mode > /dev/null || { echo "bench/replay.sh: recording $mode failed" >&2; exit 1; }
	i=0
	while [ $i -lt "$RUNS" ]; do
		for w in $([ $((i % 2)) -eq 0 ] && echo "on off" || echo "off on"); do
			opt=; [ $w = off ] && opt=--no-watch
			# shellcheck disable=SC2086
			"$RP" -q $opt --json="$tmp/watch-$mode.$w.$i.json" "$tmp/watch-$mode.zst" > /dev/null ||
				{ echo "bench/replay.sh: replay ($w) failed" >&2; exit 1; }
		done
		i=$((i + 1))
	done
done
python3 - "$tmp" "$RUNS" "$((ITER / 5))" <<'PY'
import json, statistics as st, sys
tmp, runs, it = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"\nseed000 --threads 2, {it} iterations: the self-watch against --no-watch, medians of {runs} alternating pairs")
print(f"{'mode':<5} {'off_ms':>8} {'on_ms':>8} {'wall':>6} {'off_flt':>8} {'on_flt':>8} {'faults':>6} {'samples':>8}  goal")
for mode in ('new', 'old'):
    on = [json.load(open(f'{tmp}/watch-{mode}.on.{i}.json'))['median'] for i in range(runs)]
    off = [json.load(open(f'{tmp}/watch-{mode}.off.{i}.json'))['median'] for i in range(runs)]
    wr = st.median(a['wall_ns'] / b['wall_ns'] for a, b in zip(on, off))
    fon = st.median(r['rusage']['minor_faults'] for r in on)
    foff = st.median(r['rusage']['minor_faults'] for r in off)
    smp = st.median(sum(t['fault_samples'] or 0 for t in r['threads']) for r in on)
    print(f"{mode:<5} {st.median(r['wall_ns'] for r in off)/1e6:>8.1f} {st.median(r['wall_ns'] for r in on)/1e6:>8.1f} "
          f"{wr:>6.3f} {foff:>8.0f} {fon:>8.0f} {fon/max(foff,1):>6.3f} {smp:>8.0f}  "
          f"{'wall ok' if wr <= 1.05 else 'WALL MISSED'}")
PY
fi

# (d) long traces: two threads, two events (madvise, touch) per iteration.
if part d; then
echo
echo "seed000 --mode new --threads 2, long traces: one native run and one replay each"
printf '%10s %9s %10s %8s %10s %11s %9s %10s %6s  %s\n' events trace_MB peak_rss_MB load_s \
	load_Mev/s first_op_s native_s replay_s wall goals
for n in $LONG; do
	it=$((n / 4))
	"$REC" -q --force -o "$tmp/long.zst" -- "$WL" --threads 2 --iterations "$it" --mode new > /dev/null ||
		{ echo "bench/replay.sh: recording $n events failed" >&2; exit 1; }
	"$WL" --threads 2 --iterations "$it" --mode new | grep '^summary:' > "$tmp/long.native"
	/usr/bin/time -f '%M' -o "$tmp/long.rss" "$RP" -q --json="$tmp/long.json" "$tmp/long.zst" \
		> /dev/null || { echo "bench/replay.sh: replay of $n events failed" >&2; exit 1; }
	python3 - "$tmp" "$(wc -c < "$tmp/long.zst")" <<'PY'
import json, re, sys
tmp, size = sys.argv[1], int(sys.argv[2])
j = json.load(open(f'{tmp}/long.json'))
nat = dict(re.findall(r'(\w+)=(\d+)', open(f'{tmp}/long.native').read()))
rss = int(open(f'{tmp}/long.rss').read().split()[-1]) / 1024
ev, load, first = j['trace_events'], j['load_ns'] / 1e9, j['first_op_ns'] / 1e9
nw, rw = int(nat['wall_ns']) / 1e9, j['median']['wall_ns'] / 1e9
goal = 'rss ok' if rss <= 128 else 'RSS > 128 MiB'
print(f"{ev:>10} {size/2**20:>9.1f} {rss:>10.1f} {load:>8.2f} {ev/load/1e6:>10.2f} {first:>11.2f} "
      f"{nw:>9.2f} {rw:>10.2f} {rw/nw:>6.3f}  {goal}")
PY
done
fi
