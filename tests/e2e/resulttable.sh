#!/bin/sh
# vmtrace diff of three or more vmreplay results: the table of several
# kernels (the one vmreplay --kernel=A --kernel=B --host prints), its
# columns, marks and "too few runs", a file of a kernel that gave no
# results, --fail-on against every column, --json, --table for two, and
# a trace among results refused.  No qemu: the results are made here
# (tests/e2e/vm.sh makes real ones).
. "$(dirname "$0")/common.inc"
need resulttable "$VMTRACE" || exit 0

result() { # FILE KERNEL ACCEL|- MM WALL,WALL,... FAULTS,FAULTS,...
	python3 - "$@" <<'EOF'
import json, sys
path, kernel, accel, mm, walls, faults = sys.argv[1:]
runs = [{"wall_ns": int(w), "minor_faults": int(f), "major_faults": 0, "voluntary_cs": 10,
         "involuntary_cs": 1, "wait_ns": 0, "divergences": 0, "peak_vmas": 30, "events": 100,
         "ops": {"mmap": {"count": 50, "errors": 0, "p50_ns": 1000, "p99_ns": 2000}}}
        for w, f in zip(walls.split(","), faults.split(","))]
d = {"trace": "t.zst", "trace_events": 150, "kernel": kernel, "cpus": 2, "mm": mm,
     "recorded_mm": "overcommit=0 zeropage=0 thp=madvise", "runs": runs, "median": runs[0]}
if accel != "-":
    d["vm"] = {"accel": accel, "cpus": 2, "memory_bytes": 512 << 20, "image": "/k/" + kernel,
               "image_version": kernel + " (x)", "mm_unset": None, "noise": {"others_pct": 0.4}}
json.dump(d, open(path, "w"))
EOF
}
MM0="overcommit=0 zeropage=0 thp=madvise"
MM1="overcommit=0 zeropage=1 thp=madvise"
result "$T/61.json" 6.1.0-57 tcg "$MM1" 3000000,3100000,2900000,3050000,2950000 500,500,500,500,500
result "$T/612.json" 6.12.117 tcg "$MM1" 2000000,2100000,1900000,2050000,1950000 500,500,500,500,500
result "$T/host.json" 6.18.44 - "$MM0" 1000000,1010000,990000,1020000,1005000 800,810,790,805,795
result "$T/few.json" 6.18.44 - "$MM0" 1000000,1010000 800,810
cat > "$T/fail.json" <<'EOF'
{"error":"the guest kernel panicked: Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)",
 "trace":"t.zst","kernel":null,"vm":{"image":"/k/vmlinuz-6.13","image_version":"6.13.0-1 (x)",
 "accel":"tcg","cpus":2,"memory_bytes":536870912}}
EOF

check_exit table 0 "$VMTRACE" diff "$T/61.json" "$T/612.json" "$T/host.json"
check table-header python3 - "$T/out" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
row = lambda k: [l for l in lines if l.startswith(k + ' ')][0]
assert row('kernel').split()[1:] == ['6.1.0-57', '6.12.117', '6.18.44'], row('kernel')
assert re.match(r'ran on +qemu tcg \(emulated\) +qemu tcg \(emulated\) +this machine$', row('ran on'))
assert re.match(r'cpus, memory +2, 512\.0 MiB +2, 512\.0 MiB +2$', row('cpus, memory')), row('cpus, memory')
assert re.match(r'runs +5 +5 +5$', row('runs')), row('runs')
assert re.match(r'zeropage +1 ! +1 ! +0$', row('zeropage')), row('zeropage')
assert re.match(r'status +ok +ok +ok$', row('status')), row('status')
# counts: the faults on the host 1.6 times the base's, significant; mmap
# calls the same everywhere
assert re.match(r'minor_faults +500 +0\.0% +500 +0\.0% +1\.000 +800 +1\.0% +1\.600\*$',
                row('minor_faults')), row('minor_faults')
assert re.match(r'ops\.mmap\.count +50 +0\.0% +50 +0\.0% +1\.000 +50 +0\.0% +1\.000$',
                row('ops.mmap.count')), row('ops.mmap.count')
# times: the guests' marked emulated, 6.12 two thirds of 6.1's
assert re.match(r'wall_ns +3\.000ms~ +2\.6% +2\.000ms~ +4\.0% +0\.667\* +1\.005ms +1\.1% +0\.335\*$',
                row('wall_ns')), row('wall_ns')
t = '\n'.join(lines)
assert t.index('\ncounts ') < t.index('\ntimes (~: emulated) ')
EOF

# A kernel that gave no results: its column says why, the others print.
check_exit table-failed 0 "$VMTRACE" diff "$T/61.json" "$T/fail.json" "$T/host.json"
check table-failed-column sh -c "grep -q '^kernel  *6.1.0-57  *6.13.0-1  *6.18.44$' $T/out &&
	grep -q '^status  *ok  *failed: the guest kernel  *ok$' $T/out &&
	grep -q '^  *panicked: Kernel panic -' $T/out && grep -q '^minor_faults  *500 .* - .* 800 ' $T/out"
# The first column without results: the next one is the base.
check_exit table-failed-base 0 "$VMTRACE" diff --json "$T/fail.json" "$T/61.json" "$T/host.json"
check table-failed-base-json python3 -c "
import json
d = json.load(open('$T/out'))
assert d['base'] == 1 and d['columns'][0]['error'].startswith('the guest kernel panicked'), d['base']
m = [r for r in d['metrics'] if r['name'] == 'minor_faults'][0]
assert m['cells'][0] is None and m['cells'][1]['significant'] is None, m
assert m['cells'][2]['significant'] == 'yes' and m['cells'][2]['ratio'] == 1.6, m['cells'][2]
"

# Too few runs: the column says so, the marks are '?', the legend how many.
check_exit table-few 0 "$VMTRACE" diff "$T/61.json" "$T/612.json" "$T/few.json"
check table-few-marks sh -c "grep -Eq '^runs +5 +5 +2 \(too few runs\)$' $T/out &&
	grep -Eq '^minor_faults .* 1\.610\?$' $T/out &&
	grep -q 'with 5 and 2 runs no difference can be significant; give each at least 4' $T/out"

# --fail-on: any column against the base; the FAIL line names it; noise
# and too few runs as for two results.
check_exit table-fail-on 1 "$VMTRACE" diff --fail-on='minor_faults>+10%' "$T/61.json" "$T/612.json" "$T/host.json"
check table-fail-on-line grep -q "^FAIL minor_faults in 6.18.44 (column 3): 500 -> 800 (+60.0%, significant), condition 'minor_faults>+10%'$" "$T/out"
check_exit table-fail-on-one 1 "$VMTRACE" diff --fail-on='wall_ns<-20%' "$T/61.json" "$T/612.json" "$T/host.json"
check table-fail-on-two-columns sh -c "[ \$(grep -c '^FAIL wall_ns in ' $T/out) = 2 ]"
check_exit table-fail-on-none 0 "$VMTRACE" diff --fail-on='ops.*.count>+0,ops.*.count<-0' "$T/61.json" "$T/612.json" "$T/host.json"
check_exit table-fail-on-failed-column 1 "$VMTRACE" diff --fail-on='wall_ns>+50%' "$T/61.json" "$T/fail.json" "$T/host.json"
check table-fail-on-failed-line grep -q "^FAIL 6.13.0-1 (column 2): no results: the guest kernel panicked" "$T/out"
check_exit table-fail-on-unknown 2 "$VMTRACE" diff --fail-on='nosuch>+1' "$T/61.json" "$T/612.json" "$T/host.json"
check table-fail-on-unknown-message grep -q "no metric 'nosuch'" "$T/err"
check_exit table-json 1 "$VMTRACE" diff --json --fail-on='minor_faults>+10%' "$T/61.json" "$T/612.json" "$T/host.json"
check table-json-keys python3 -c "
import json
d = json.load(open('$T/out'))
assert d['kind'] == 'results-table' and d['alpha'] == 0.05 and d['verdict'] == 'regression', d.keys()
assert [c['label'] for c in d['columns']] == ['6.1.0-57', '6.12.117', '6.18.44']
assert d['columns'][0]['mm'] == {'overcommit': '0', 'zeropage': '1', 'thp': 'madvise'}
assert d['columns'][0]['recorded_mm']['zeropage'] == '0' and d['columns'][2]['where'] == 'host'
assert d['columns'][0]['guest_noise_pct'] == 0.4 and d['columns'][2]['guest_noise_pct'] is None
f = d['failed']
assert len(f) == 1 and f[0]['metric'] == 'minor_faults' and f[0]['column'] == 2 and f[0]['change_pct'] == 60, f
m = {r['name']: r for r in d['metrics']}
assert m['wall_ns']['section'] == 'times' and m['wall_ns']['timing'] and m['minor_faults']['section'] == 'counts'
c = m['minor_faults']['cells'][2]
assert c['median'] == 800 and c['mean'] == 800 and abs(c['cv_pct'] - 0.9882) < 1e-3, c
"
# Two results: today's two-way diff, or with --table the table.
check_exit table-two 0 "$VMTRACE" diff --table "$T/61.json" "$T/host.json"
check table-two-is-table grep -q '^ran on  *qemu tcg (emulated)  *this machine$' "$T/out"
check_exit two-way 0 "$VMTRACE" diff "$T/61.json" "$T/host.json"
check two-way-is-two-way grep -q '^metric  *base median  *new median' "$T/out"
# Traces are not compared three at a time.
check_exit table-trace-refused 2 "$VMTRACE" diff "$T/61.json" "$D/seed000-old.zst" "$T/host.json"
check table-trace-refused-message grep -q "^vmtrace diff: '$D/seed000-old.zst' is not a vmreplay result" "$T/err"
printf '{"runs": [\n  {"wall_ns": 1,}\n]}\n' > "$T/bad.json"
check_exit table-bad-json 2 "$VMTRACE" diff "$T/61.json" "$T/612.json" "$T/bad.json"
check table-bad-json-message grep -q "^vmtrace: '$T/bad.json': not valid JSON: line 2, column 17" "$T/err"
exit 0
