#!/bin/sh
# vmreplay's command line: help and man page cover every option, usage
# errors and bad traces exit 2 with one "vmreplay: ..." line, the JSON has
# the keys of vmreplay(1), JSON OUTPUT, and every option replays the golden
# seed-000 trace without divergence.
. "$(dirname "$0")/common.inc"
need replay_cli "$VMREPLAY" || exit 0

one_line() { # NAME PATTERN: stderr of the last check_exit is one matching line
	if [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q "$2" "$T/err"; then ok "$1"
	else not_ok "$1" "stderr is not one line matching '$2'"; show "$T/err"; fi
}
usage_line() { # NAME PATTERN: a matching line, then the --help hint
	if [ "$(wc -l < "$T/err")" -eq 2 ] && head -1 "$T/err" | grep -q "$2" &&
	   tail -1 "$T/err" | grep -q "^Try 'vmreplay --help'"; then ok "$1"
	else not_ok "$1" "stderr is not '$2' and the --help hint"; show "$T/err"; fi
}

check_exit help 0 "$VMREPLAY" --help
missing=
for opt in --order= --placement= --speed= --scale= --repeat= --json= --files= --max-memory= \
	   --truncated= --progress --no-progress --quiet --help --version; do
	grep -q -- "$opt" "$T/out" || missing="$missing help:$opt"
	# roff writes "--x" as "\-\-x"
	grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" man/vmreplay.1 2>/dev/null ||
		missing="$missing man:$opt"
done
if [ -z "$missing" ]; then ok help-and-man-list-every-option
else not_ok help-and-man-list-every-option "missing$missing"; fi
check_exit version 0 "$VMREPLAY" --version
check_exit no-trace 2 "$VMREPLAY"
usage_line no-trace-message "^vmreplay: no trace given"
check_exit bad-order 2 "$VMREPLAY" --order=sideways $D/seed000-old.zst
usage_line bad-order-message "^vmreplay: --order: 'sideways'"
check_exit bad-clock 2 env VMREPLAY_CLOCK=sundial "$VMREPLAY" -q $D/seed000-old.zst
usage_line bad-clock-message "^vmreplay: VMREPLAY_CLOCK: 'sundial' is not monotonic"
check_exit monotonic-clock 0 env VMREPLAY_CLOCK=monotonic "$VMREPLAY" -q $D/seed000-old.zst
check_exit bad-scale 2 "$VMREPLAY" --scale=0 $D/seed000-old.zst
check_exit bad-speed 2 "$VMREPLAY" --speed=-1 $D/seed000-old.zst
check_exit bad-memory 2 "$VMREPLAY" --max-memory=12Q $D/seed000-old.zst
check_exit missing-file 2 "$VMREPLAY" /nonexistent/t.zst
one_line missing-file-message "^vmreplay: '/nonexistent/t.zst': No such file or directory$"
check_exit truncated 2 "$VMREPLAY" $D/truncated.zst
one_line truncated-message "^vmreplay: '$D/truncated.zst': truncated at byte [0-9]"
head -c 100 $D/seed000-old.zst > "$T/cut.zst"
check_exit cut 2 "$VMREPLAY" "$T/cut.zst"
one_line cut-message "^vmreplay: '$T/cut.zst': "
# (a limit the trace needs more than: a resource, not a bad trace)
check_exit max-memory 1 "$VMREPLAY" --max-memory=4K $D/seed000-old.zst
one_line max-memory-message "^vmreplay: '$D/seed000-old.zst': .*--max-memory"

check_exit quiet 0 "$VMREPLAY" -q $D/seed000-old.zst
# (the totals, then the fidelity verdict: this 1.0 trace has no counters;
# and a reclaim line if reclaim did anything on the machine meanwhile)
check quiet-verdict awk 'NR == 1 && !/^wall .* divergences 0$/ { exit 1 }
	NR == 2 && !/^fidelity: the trace holds no counters of its recorded run \(format 1\.0/ { exit 1 }
	NR > 2 && !/^reclaim during the replay / { exit 1 } END { exit NR < 2 }' "$T/out"
check_exit table 0 "$VMREPLAY" $D/seed000-old.zst
check table-has-ops grep -q '^mprotect ' "$T/out"
check table-has-threads grep -q '^thread ' "$T/out"

check_exit json 0 "$VMREPLAY" -q --repeat=3 --json="$T/r.json" $D/seed000-old.zst
check json-keys python3 -c "
import json
d = json.load(open('$T/r.json'))
assert len(d['runs']) == 3, 'three runs'
for r in d['runs'] + [d['median']]:
    for k in ('wall_ns', 'minor_faults', 'major_faults', 'voluntary_cs', 'involuntary_cs',
              'divergences', 'events', 'peak_vmas'):
        assert isinstance(r[k], int), k
    assert r['divergences'] == 0
    for op in ('mmap', 'mprotect'):
        for k in ('count', 'errors', 'p50_ns', 'p99_ns', 'max_ns'):
            assert isinstance(r['ops'][op][k], int), op + '.' + k
    assert r['ops']['mprotect']['count'] == 10
    assert r['ops']['mprotect']['p50_ns'] <= r['ops']['mprotect']['p99_ns'] <= r['ops']['mprotect']['max_ns']
walls = sorted(r['wall_ns'] for r in d['runs'])
assert d['median']['wall_ns'] == walls[1], 'median of three'
"

for o in --order=strict --order=free --placement=exact --scale=3 --speed=1000 --files=original --no-watch; do
	check_exit "option$o" 0 "$VMREPLAY" -q "$o" $D/seed000-old.zst
	check "option$o-no-divergence" grep -q 'divergences 0$' "$T/out"
done

# Progress: a line on standard error rewritten in place and erased before
# the results; shown on a terminal, or anywhere with --progress.  The
# golden trace's 54 us, kept at --speed=0.00004, last 1.35 s.
check_exit progress 0 "$VMREPLAY" --progress --speed=0.00004 $D/seed000-old.zst
check progress-line python3 -c "
import sys
err = open('$T/err', 'rb').read()
out = open('$T/out').read()
assert b'\rvmreplay: replaying: ' in err and b'(recorded: 0.0 s)' in err, err
assert err.endswith(b'\r\x1b[K'), 'the line is erased at the end'
assert out.startswith('replayed ') and 'divergences 0' in out, out
"
check_exit progress-not-a-terminal 0 "$VMREPLAY" --speed=0.00004 $D/seed000-old.zst
check progress-not-a-terminal-silent test ! -s "$T/err"
check_exit no-progress 0 "$VMREPLAY" --progress --no-progress --speed=0.00004 $D/seed000-old.zst
check no-progress-silent test ! -s "$T/err"

# A trace cut short (its recorder killed): refused with a hint naming
# --truncated=replay; with it, replayed up to the last complete chunk,
# the threads alive at the cut ended there, and the cut reported.
check_exit truncated-refused 2 "$VMREPLAY" -q $D/truncated.zst
one_line truncated-refused-hint "needs 201 bytes, file has 191; --truncated=replay replays"
check_exit truncated-bad-value 2 "$VMREPLAY" --truncated=maybe $D/truncated.zst
usage_line truncated-bad-value-message "^vmreplay: --truncated: 'maybe' is not refuse or replay"
check_exit truncated-no-rewrite 2 "$VMREPLAY" --truncated=replay --rewrite $D/truncated.zst
usage_line truncated-no-rewrite-message "^vmreplay: --truncated=replay cannot be combined"
check_exit truncated-replay 0 "$VMREPLAY" --truncated=replay --json="$T/cut.json" $D/truncated.zst
check truncated-reported grep -q "^cut short: replayed up to the last complete chunk (36 events),.*truncated at byte 881" "$T/out"
check truncated-json python3 -c "
import json
j = json.load(open('$T/cut.json'))
assert j['trace_events'] == 36 and j['threads'] == 3 and j['processes'] == 2, j
assert j['truncated'].startswith('truncated at byte 881'), j['truncated']
"
check_exit truncated-whole-trace 0 "$VMREPLAY" -q --truncated=replay --json="$T/whole.json" $D/seed000-old.zst
check truncated-whole-trace-json python3 -c "
import json
j = json.load(open('$T/whole.json'))
assert j['truncated'] is False and j['median']['divergences'] == 0, j
"
# A recording of several chunks cut at a third, two thirds and near its
# end, inside a chunk: each replays exactly the events vmtrace dump reads
# before the cut, every thread ends, nothing diverges.
rec long -- "$W/seed000" --threads 2 --iterations $(san_scale 100000) --mode new
size=$(wc -c < "$T/long.zst")
for pct in 33 67 97; do
	head -c $((size * pct / 100)) "$T/long.zst" > "$T/cut$pct.zst"
	"$VMTRACE" dump --json "$T/cut$pct.zst" > "$T/cut$pct.jsonl" 2> /dev/null
	check_exit "truncated-cut$pct" 0 "$VMREPLAY" -q --truncated=replay --json="$T/cut$pct.json" "$T/cut$pct.zst"
	check "truncated-cut$pct-events" python3 -c "
import json
evs = [json.loads(l) for l in open('$T/cut$pct.jsonl')]
j = json.load(open('$T/cut$pct.json'))
m = j['median']
assert j['truncated'] and j['trace_events'] == len(evs) > 0, (j['trace_events'], len(evs))
ops = sum(1 for e in evs if e['kind'] == 'syscall')
assert m['events'] == ops and m['divergences'] == 0, (m['events'], ops, m['divergences'])
"
done
# A trace damaged in its last chunk: one clear error, exit 2, no replay
# process left behind (they would carry the trace's path in their command
# line: replay processes are forks of vmreplay).
damage_last_chunk "$T/long.zst" "$T/badlast.zst"
check_exit damaged-last-chunk 2 "$VMREPLAY" -q "$T/badlast.zst"
one_line damaged-last-chunk-message "^vmreplay: '.*badlast.zst': bad trace at byte [0-9]*: "
check damaged-last-chunk-no-process-left wait_for sh -c "! pgrep -f '[v]mreplay -q $T/badlast.zst'"
exit 0
