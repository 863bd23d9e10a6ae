#!/bin/sh
# vmtrace diff of two vmreplay --json results: one row per metric with
# both medians, the ratio and the significance; "too few runs" when the
# runs cannot tell; --fail-on and --json as for traces; results and
# traces told apart by their content and not mixed.
. "$(dirname "$0")/common.inc"
need resultdiff "$VMTRACE" || exit 0

# Results with the wall times and fault counts given, one run each.
result() { # FILE KERNEL WALL,WALL,... FAULTS
	python3 - "$@" <<'EOF'
import json, sys
path, kernel, walls, faults = sys.argv[1:]
runs = [{"wall_ns": int(w), "minor_faults": int(faults), "major_faults": 0,
         "voluntary_cs": 10, "involuntary_cs": 1, "wait_ns": 0, "divergences": 0,
         "peak_vmas": 30, "events": 100,
         "ops": {"mmap": {"count": 50, "errors": 0, "p50_ns": 1000, "p99_ns": 2000 + int(w) % 7}}}
        for w in walls.split(",")]
json.dump({"trace": "t.zst", "trace_events": 150, "kernel": kernel, "cpus": 2,
           "runs": runs, "median": runs[0]}, open(path, "w"))
EOF
}
result "$T/a.json" 6.18 1000000,1010000,990000,1020000,1005000 500
result "$T/b.json" 6.1 1500000,1490000,1510000,1520000,1480000 500
result "$T/c.json" 6.1 1500000,1490000 500
result "$T/same.json" 6.18 1001000,1011000,991000,1021000,1004000 500

check_exit results-diff 0 "$VMTRACE" diff "$T/a.json" "$T/b.json"
check results-diff-header sh -c "grep -q '^base  $T/a.json: 5 runs on Linux 6.18, 2 CPUs$' $T/out &&
	grep -q '^new   $T/b.json: 5 runs on Linux 6.1, 2 CPUs$' $T/out"
check results-diff-wall grep -Eq '^wall_ns +1\.005 ms +1\.500 ms +1\.49 +0\.008 +yes +0\.990-1\.020 +1\.480-1\.520$' "$T/out"
check results-diff-faults grep -Eq '^minor_faults +500 +500 +1\.00 +1\.000 +no ' "$T/out"
check results-diff-op-rows sh -c "grep -q '^ops.mmap.count ' $T/out && grep -q '^ops.mmap.p50_ns ' $T/out &&
	grep -q '^ops.mmap.p99_ns ' $T/out"
check results-diff-zero-rows-left-out sh -c "! grep -q '^divergences ' $T/out"
check_exit results-diff-all 0 "$VMTRACE" diff --all "$T/a.json" "$T/b.json"
check results-diff-all-rows grep -q '^divergences ' "$T/out"
check_exit results-not-significant 0 "$VMTRACE" diff "$T/a.json" "$T/same.json"
check results-not-significant-wall grep -Eq '^wall_ns .* no +' "$T/out"
check_exit results-few 0 "$VMTRACE" diff "$T/a.json" "$T/c.json"
check results-few-wall grep -Eq '^wall_ns .* - +too few runs' "$T/out"
check results-few-note grep -q 'with 5 and 2 runs no difference can be: give each side at least 4' "$T/out"

check_exit results-fail-on 1 "$VMTRACE" diff --fail-on='wall_ns>+10%' "$T/a.json" "$T/b.json"
check results-fail-on-line grep -q "^FAIL wall_ns: 1.005 ms -> 1.500 ms (+49.3%, significant), condition 'wall_ns>+10%'$" "$T/out"
check_exit results-fail-on-noise 0 "$VMTRACE" diff --fail-on='any>+0%,any<-0%' "$T/a.json" "$T/same.json"
check_exit results-fail-on-few 1 "$VMTRACE" diff --fail-on='wall_ns>+10%' "$T/a.json" "$T/c.json"
check results-fail-on-few-line grep -q "^FAIL wall_ns: .*too few runs to tell it from noise), condition" "$T/out"
check_exit results-fail-on-unknown 2 "$VMTRACE" diff --fail-on='ops.mremap.count>+1' "$T/a.json" "$T/b.json"
check results-fail-on-unknown-message grep -q "no metric 'ops.mremap.count'" "$T/err"

check_exit results-json 1 "$VMTRACE" diff --json --fail-on='wall_ns>+10%' "$T/a.json" "$T/b.json"
check results-json-keys python3 -c "
import json
d = json.load(open('$T/out'))
assert d['kind'] == 'results' and d['verdict'] == 'regression', d
assert d['base_result'] == {'trace': 't.zst', 'kernel': '6.18', 'cpus': 2, 'accel': None, 'runs': 5}
m = {x['name']: x for x in d['metrics']}
w = m['wall_ns']
assert w['base'] == 1005000 and w['new'] == 1500000 and w['significant'] == 'yes', w
assert abs(w['p'] - 2 / 252) < 1e-4 and w['timing'] is True, w
assert m['minor_faults']['significant'] == 'no' and m['minor_faults']['ratio'] == 1
assert d['failed'][0]['metric'] == 'wall_ns' and d['failed'][0]['significant'] == 'yes'
"

# Told apart by content; a result and a trace without counters: nothing to
# hold it against; not a result.
check_exit results-and-old-trace 2 "$VMTRACE" diff "$T/a.json" $D/seed000-old.zst
check results-and-old-trace-message grep -q "^vmtrace: '$D/seed000-old.zst': the trace holds no counters of its recorded run (format 1.0: recorded before vmrec kept them): nothing to hold '$T/a.json' against$" "$T/err"
check_exit traces-still 0 "$VMTRACE" diff $D/seed000-old.zst $D/seed000-old.zst
echo '{"baseline":{},"rewritten":{}}' > "$T/cmp.json"
check_exit results-compare-refused 2 "$VMTRACE" diff "$T/cmp.json" "$T/a.json"
check results-compare-refused-message grep -q "^vmtrace: '$T/cmp.json': a vmreplay --compare result" "$T/err"
printf '{"runs": [\n  {"wall_ns": 1,}\n]}\n' > "$T/bad.json"
check_exit results-bad-json 2 "$VMTRACE" diff "$T/a.json" "$T/bad.json"
check results-bad-json-message grep -q "^vmtrace: '$T/bad.json': not valid JSON: line 2, column 17: expected a member name$" "$T/err"

# Real results: two replays of the golden trace.
if [ -x "$VMREPLAY" ]; then
	check_exit replay-a 0 "$VMREPLAY" -q --repeat=4 --json="$T/r1.json" $D/seed000-old.zst
	check_exit replay-b 0 "$VMREPLAY" -q --repeat=4 --json="$T/r2.json" $D/seed000-old.zst
	check_exit replay-diff 0 "$VMTRACE" diff --fail-on='ops.*.count>+0,ops.*.count<-0,divergences>+0' \
		"$T/r1.json" "$T/r2.json"
	check replay-diff-counts grep -Eq '^ops.mprotect.count +[0-9]+ +[0-9]+ +1\.00 +1\.000 +no' "$T/out"
	check replay-diff-kernel grep -q "^base .*: 4 runs on Linux $(uname -r), [0-9]* CPU" "$T/out"
fi

# A result beside the trace it replayed: the recorded run's own counters
# are the base.  A faithful replay is within tolerance; one of a trace
# recorded without touches is not, and a condition on it holds.
if [ -x "$VMREPLAY" ] && [ -x "$VMREC" ] && [ -x "$W/seed000" ]; then
	"$VMREC" -q -o "$T/rec.zst" -- "$W/seed000" --threads 2 --iterations 2000 --mode new > /dev/null 2>&1
	"$VMREC" -q --touch=none -o "$T/bare.zst" -- "$W/seed000" --threads 2 --iterations 2000 \
		--mode new > /dev/null 2>&1
	check_exit trace-result-replay 0 "$VMREPLAY" -q --repeat=3 --json="$T/rec.json" "$T/rec.zst"
	if [ "${SAN:-}" = 1 ]; then
		skip trace-result "a sanitized replayer's faults include its shadow memory"
	else
		check_exit trace-result 0 "$VMTRACE" diff --fail-on=minor_faults'<-2%,minor_faults>+2%' \
			"$T/rec.zst" "$T/rec.json"
		check trace-result-row grep -Eq '^minor_faults +[0-9]+ +[0-9]+ +(0\.9[89][0-9]|1\.0[0-2][0-9]) +yes \(2%\)' "$T/out"
		check trace-result-verdict grep -q '^fidelity: within tolerance$' "$T/out"
	fi
	# (either order: the trace is the base)
	check_exit trace-result-json 0 "$VMTRACE" diff --json "$T/rec.json" "$T/rec.zst"
	check trace-result-json-keys python3 -c "
import json
d = json.load(open('$T/out'))
assert d['kind'] == 'trace_result' and d['base'] == '$T/rec.zst', d
m = {x['name']: x for x in d['metrics']}
assert m['minor_faults']['judged'] and m['minor_faults']['recorded'] > 4000, m['minor_faults']
assert not m['voluntary_cs']['judged'] and m['voluntary_cs']['ok'] is None, m['voluntary_cs']
"
	check_exit bare-replay 0 "$VMREPLAY" -q --json="$T/bare.json" "$T/bare.zst"
	check_exit bare-result 1 "$VMTRACE" diff --fail-on=minor_faults'<-10%' "$T/bare.zst" "$T/bare.json"
	check bare-result-fail grep -q "^FAIL minor_faults: recorded [0-9]*, replayed [0-9]*, condition 'minor_faults<-10%'$" "$T/out"
	check bare-result-verdict grep -q '^fidelity: outside tolerance: minor_faults' "$T/out"
fi
exit 0
