#!/bin/sh
# Replays of traces loaded as they run (vmreplay --window): the same ops,
# errors, touches and divergences as the trace loaded whole, threads and
# processes included; memory that does not grow with the trace; a trace
# bad past its first window failing cleanly after the run started; and
# --repeat of a streamed trace loading it again.
. "$(dirname "$0")/common.inc"
need replay_stream "$VMREC" "$VMREPLAY" || exit 0
samerun() { python3 "$E2E/samerun.py" "$@"; }

# NAME WINDOW PROGRAM ARGS...: record, replay whole and streamed with
# --window=WINDOW (3 runs each).
same() {
	name=$1 window=$2; shift 2
	if ! "$VMREC" -q --force -o "$T/$name.zst" -- "$@" > /dev/null 2> "$T/$name.err"; then
		not_ok "$name-stream" "recording failed"; show "$T/$name.err"; return
	fi
	for w in whole stream; do
		opt=; [ $w = stream ] && opt=--window=$window
		# shellcheck disable=SC2086
		if ! "$VMREPLAY" -q --repeat=3 $opt --json="$T/$name.$w.json" "$T/$name.zst" \
			> "$T/$name.$w.out" 2>&1; then
			not_ok "$name-stream" "vmreplay ($w) failed"; show "$T/$name.$w.out"; return
		fi
	done
	check "$name-stream" samerun "$T/$name.whole.json" "$T/$name.stream.json" "$name" &&
		sed 's/^/    /' "$T/check.out"
}

# (the smallest window: all but the first few elements streamed)
same seed000-old 4K "$W"/seed000 --threads 2 --iterations $(san_scale 20000) --mode old
same seed000-new 4K "$W"/seed000 --threads 2 --iterations $(san_scale 20000) --mode new
for s in 1 2 3 4; do same seed00$s 4K "$W"/seed00$s; done
same forkexec 4K "$W"/forkexec
same everyop 4K "$W"/everyop
# (its two threads race mmap against munmap of one page, and its faults
# follow their interleaving: a window that does not make them wait for
# the load at every block)
same lockorder 1M "$W"/lockorder --threads 2 --iterations 5000
if command -v python3 > /dev/null; then same python3 4K python3 -c 'import json'; fi

# A trace of many short-lived mappings (each mmap a new region: a new
# page of region bases every 512), streamed with --window=2M (of its
# 120,000 events): the same minor faults as loaded whole (the
# bases, the drains' tables and waiting for the load are set-up), within
# the fidelity section's tolerance (2%, or 2 faults, and 1 for the noise
# of two medians).  The same at the default window, where it is loaded
# whole.  Then the load starved (--window=4K): the replay waits for it,
# and the report says so, in text and JSON.
"$VMREC" -q --force -o "$T/regions.zst" -- "$W"/lockorder --threads 2 \
	--iterations $(san_scale 20000) > /dev/null 2>&1
for w in 1G 2M default 4K; do
	opt=--window=$w; [ $w = default ] && opt=
	# shellcheck disable=SC2086
	"$VMREPLAY" --repeat=3 $opt --json="$T/regions.$w.json" "$T/regions.zst" \
		> "$T/regions.$w.out" 2>&1 || { not_ok regions-$w "vmreplay failed"; show "$T/regions.$w.out"; }
done
check stream-loaded-as-said python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
load = {w: json.load(open(f'{t}/regions.{w}.json'))['fidelity']['load'] for w in ('1G', '2M', 'default')}
assert not load['1G']['streamed'] and load['2M']['streamed'], load
assert not load['default']['streamed'], 'a short trace streamed at the default window'
PY
if [ "${SAN:-}" = 1 ]; then
	skip stream-faults-as-whole "a sanitized replayer's faults in its shadow memory and fake stacks \
differ by tens between runs"
else
	check stream-faults-as-whole python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
j = {w: json.load(open(f'{t}/regions.{w}.json')) for w in ('1G', '2M', 'default')}
f = {w: j[w]['median']['minor_faults'] for w in j}
print(f"{j['1G']['trace_events']} events: minor faults whole {f['1G']}, streamed (2M) {f['2M']}"
      f" (load waits {j['2M']['median']['load_wait_ns'] / 1e6:.1f} ms), default window {f['default']}")
for w in ('2M', 'default'):
    assert abs(f[w] - f['1G']) <= max(3, 0.02 * f['1G']), f'{w}: {f[w]} faults, whole {f["1G"]}'
PY
	sed 's/^/    /' "$T/check.out"
fi
check stream-starved-said python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
j = json.load(open(f'{t}/regions.4K.json'))
load, med = j['fidelity']['load'], j['median']
print(load['text'])
assert load['streamed'] and load['late'], load
assert load['wait_ns'] == med['load_wait_ns'] > 0, (load, med['load_wait_ns'])
assert 'ran late for its load' in load['text'], load['text']
whole = json.load(open(f'{t}/regions.1G.json'))['fidelity']['load']
assert not whole['late'] and whole['text'] is None, whole
PY
check stream-starved-said-text grep -q '^load: the replay ran late for its load: its threads waited [0-9.]* ms' \
	"$T/regions.4K.out"

# Peak RSS (the largest process of the replay's tree) of the same
# workload at 10x the length, both streamed (--window=16M): within 1.5x.
# (Without touches: the loader's memory follows the events, and calls
# without faults keep the test short where a fault costs 20 us.)
if [ "${SAN:-}" = 1 ]; then
	skip rss-flat "a sanitized replayer's memory is its shadow memory"
else
	for n in 50000 500000; do
		"$VMREC" -q --force -o "$T/rss$n.zst" -- "$W"/seed000 --threads 2 --iterations $n \
			--mode new --no-touch > /dev/null 2>&1
		python3 - "$VMREPLAY" "$T/rss$n.zst" "$T/rss$n.json" > "$T/rss$n.kb" <<'PY'
import resource, subprocess, sys
r = subprocess.run([sys.argv[1], '-q', '--window=16M', '--json=' + sys.argv[3], sys.argv[2]],
                   stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else 0)
PY
	done
	check rss-flat python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
kb = [int(open(f'{t}/rss{n}.kb').read()) for n in (50000, 500000)]
ev = [json.load(open(f'{t}/rss{n}.json'))['trace_events'] for n in (50000, 500000)]
print(f'peak RSS {kb[0] / 1024:.1f} MiB for {ev[0]} events, {kb[1] / 1024:.1f} MiB for {ev[1]}')
assert all(kb), 'a replay failed'
assert kb[1] <= 1.5 * kb[0], f'{kb[1] / kb[0]:.2f}x the RSS at {ev[1] / ev[0]:.1f}x the events'
PY
	sed 's/^/    /' "$T/check.out"
fi

# A long trace damaged in its last chunk, streamed: the run starts (the
# progress shows it replaying), then ends with one clear error, exit 2,
# and no replay process is left behind.
"$VMREC" -q --force -o "$T/long.zst" -- "$W"/seed000 --threads 2 --iterations 40000 \
	--mode old > /dev/null 2>&1
damage_last_chunk "$T/long.zst" "$T/bad.zst"
check_exit stream-damaged-last-chunk 2 "$VMREPLAY" -q --progress --window=1M "$T/bad.zst"
check stream-damaged-last-chunk-started grep -q 'replaying' "$T/err"
check stream-damaged-last-chunk-message grep -q "vmreplay: '.*bad.zst': bad trace at byte [0-9]*: " "$T/err"
check stream-damaged-no-process-left wait_for sh -c "! pgrep -f '[v]mreplay -q --progress --window=1M $T/bad.zst'"
# The same without --window: loaded whole, refused before any run.
check_exit damaged-last-chunk-whole 2 "$VMREPLAY" -q --progress "$T/bad.zst"
check damaged-last-chunk-whole-not-started sh -c "! grep -q 'replaying' '$T/err'"
exit 0
