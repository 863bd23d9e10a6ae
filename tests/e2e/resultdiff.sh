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

# Told apart by content; not mixed; not a result.
check_exit results-and-trace 2 "$VMTRACE" diff "$T/a.json" $D/seed000-old.zst
check results-and-trace-message grep -q "^vmtrace diff: '$T/a.json' is a vmreplay result and '$D/seed000-old.zst' a trace" "$T/err"
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
exit 0
