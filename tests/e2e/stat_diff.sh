#!/bin/sh
# vmtrace stat and diff: known values on the golden traces and on generated
# traces (tests/unit/test_stats.c --gen), diff's --fail-on semantics and exit
# codes, bad expressions, and two recordings of one deterministic workload
# diffing clean.
. "$(dirname "$0")/common.inc"
GEN=$B/tests/test_stats
# unlike common.inc's status, shows 20 lines of stderr when not ok
status() { # NAME want-status command...
	name=$1 want=$2; shift 2
	"$@" > "$tmp/out" 2> "$tmp/err"; got=$?
	if [ "$got" = "$want" ]; then echo "ok $name"
	else echo "not ok $name: exit $got, want $want"; head -20 "$tmp/err"; fi
}
json_is() { # NAME FILE PYTHON-EXPRESSION-OVER-o
	name=$1 file=$2 expr=$3
	t "$name" python3 -c "
import json,sys
o=json.load(open('$file'))
ok=($expr)
if not ok: print('false:', '''$expr'''); sys.exit(1)"
}

# ---- stat on the golden traces --------------------------------------------
status stat-every-kind 0 $VT stat --json $D/every-kind.zst
cp "$tmp/out" "$tmp/ek.json"
# Known by construction (tests/data/mkgolden.c): 5 snapshot mappings (74
# pages) + 8 KiB anon + 16 KiB file + mremap growth + 33 heap pages + a
# 64 KiB SysV segment make the peak; mlockall(MCL_CURRENT) locks all but
# [vvar].
json_is stat-every-kind-values "$tmp/ek.json" "o['events']==48 and o['processes']==2 and o['threads']==3 \
 and o['duration_ns']==141500 and o['ops']['mmap']=={'count':3,'errors':1,'bytes':24576,'time_ns':o['ops']['mmap']['time_ns']} \
 and o['ops']['brk']['bytes']==135168 and o['ops']['shmat']['bytes']==65536 \
 and o['peak_vmas']==10 and o['peak_mapped_bytes']==131*4096 and o['peak_locked_bytes']==76*4096 \
 and o['touched_pages']==2 and o['touched_written_pages']==1 and o['faults']['write']==1 \
 and o['lost']['faults']==3 and o['model_inexact']==0 and o['madvise']['MADV_DONTNEED']['count']==1"
json_is stat-every-kind-sites "$tmp/ek.json" "o['stacks_recorded'] and o['call_sites'][0]['site']=='work_loop (golden-app)' and o['call_sites'][0]['count']==3"
json_is stat-every-kind-procs "$tmp/ek.json" "[p['pid'] for p in o['per_process']]==[4242,4250] and o['per_process'][1]['parent']==0 \
 and o['per_process'][0]['program']=='/usr/bin/golden-app' and [x['syscalls'] for x in o['per_thread']]==[21,1,1]"
json_is stat-keys "$tmp/ek.json" "all(k in o for k in ['events','processes','threads','duration_ns','ops','peak_vmas','peak_mapped_bytes','touched_pages']) \
 and all(set(o['ops'][op])>={'count','errors','bytes'} for op in ['mmap','munmap','mprotect','pkey_mprotect','madvise','process_madvise','mlock','mlock2','munlock','mlockall','munlockall','mremap','brk','msync','mincore','remap_file_pages','shmat','shmdt','mseal'])"

status stat-seed000 0 $VT stat --json $D/seed000-old.zst
cp "$tmp/out" "$tmp/s0.json"
# Two threads, five rounds of mprotect(RW), touch, mmap(PROT_NONE|FIXED)
# on one page each: the pages never merge (not adjacent).
json_is stat-seed000-values "$tmp/s0.json" "o['ops']['mmap']['count']==12 and o['ops']['mprotect']['count']==10 \
 and o['ops']['munmap']['count']==2 and o['peak_vmas']==2 and o['peak_mapped_bytes']==8192 \
 and o['touched_pages']==10 and o['threads']==3 and o['syscalls']==24"

status stat-text 0 $VT stat $D/every-kind.zst
t stat-text-peak grep -q '^peak VMAs    10 at' "$tmp/out"
t stat-text-op-row grep -Eq '^mmap +3 +1 +24576 ' "$tmp/out"
t stat-text-site grep -Eq '^ +[0-9]+ +[0-9]+  [a-z]+:[0-9].*  work_loop \(golden-app\)$' "$tmp/out"
status stat-truncated 2 $VT stat $D/truncated.zst
t stat-truncated-prints-summary grep -q '^events ' "$tmp/out"
t stat-truncated-message grep -q "truncated at byte" "$tmp/err"
status stat-stdin 0 sh -c "$VT stat --json - < $D/every-kind.zst"
status stat-no-trace 2 $VT stat
status stat-missing-file 2 $VT stat "$tmp/nonexistent.zst"
status stat-bad-option 2 $VT stat --frobnicate $D/every-kind.zst
status help-stat 0 $VT help stat
status help-diff 0 $VT help diff
t help-lists-stat-diff sh -c "$VT --help | grep -q '^  stat' && $VT --help | grep -q '^  diff'"

# ---- generated traces --------------------------------------------------------
if [ ! -x "$GEN" ]; then
	echo "skip generated-traces: $GEN not built"
else
	$GEN --gen "$tmp/a.zst" 100 10 1 && $GEN --gen "$tmp/b.zst" 120 10 1 &&
	$GEN --gen "$tmp/c.zst" 100 0 1 && $GEN --gen "$tmp/big.zst" 20000 0 0 || echo "not ok generate"
	status stat-gen 0 $VT stat --json "$tmp/a.zst"
	json_is stat-gen-values "$tmp/out" "o['ops']['mmap']['count']==100 and o['ops']['munmap']['count']==100 \
 and o['peak_vmas']==103 and o['peak_mapped_bytes']==136*4096 and o['madvise']['MADV_FREE']=={'count':10,'errors':0,'bytes':40960} \
 and [s['site'] for s in o['call_sites']]==['grow (app)','release (app)','trim (app)']"
	status stat-gen-big 0 $VT stat --json "$tmp/big.zst"
	json_is stat-gen-big-peak "$tmp/out" "o['peak_vmas']==20003 and o['syscalls']==40000"

	# identical traces: nothing changes, nothing holds
	status diff-same 0 $VT diff --fail-on='any>+0,any<-0' "$tmp/a.zst" "$tmp/a.zst"
	t diff-same-verdict grep -q '^verdict: ok' "$tmp/out"
	t diff-table-header grep -Eq '^ +base +%change +new +metric$' "$tmp/out"
	# a.zst -> b.zst: 100 -> 120 mmaps (+20%), peak VMAs 103 -> 123 (+20)
	status diff-pct-holds 1 $VT diff --fail-on='ops.mmap.count>+10%' "$tmp/a.zst" "$tmp/b.zst"
	t diff-pct-names-metric grep -q '^FAIL ops.mmap.count: 100 -> 120 (+20.0%)' "$tmp/out"
	status diff-pct-below 0 $VT diff --fail-on='ops.mmap.count>+25%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-pct-equal-not-more 0 $VT diff --fail-on='ops.mmap.count>+20%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-abs-holds 1 $VT diff --fail-on='peak_vmas>+19' "$tmp/a.zst" "$tmp/b.zst"
	status diff-abs-below 0 $VT diff --fail-on='peak_vmas>+50' "$tmp/a.zst" "$tmp/b.zst"
	status diff-decrease-holds 1 $VT diff --fail-on='ops.mmap.count<-10%' "$tmp/b.zst" "$tmp/a.zst"
	status diff-decrease-not-increase 0 $VT diff --fail-on='ops.mmap.count<-10%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-any-holds 1 $VT diff --fail-on='any>+15%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-any-excludes-timing 0 $VT diff --fail-on='any>+25%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-glob 1 $VT diff --fail-on='ops.*.count>+10%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-list-one-holds 1 $VT diff --fail-on='peak_vmas>+50,ops.munmap.count>+10%' "$tmp/a.zst" "$tmp/b.zst"
	t diff-list-prints-which sh -c "grep -q '^FAIL ops.munmap.count' $tmp/out && ! grep -q '^FAIL peak_vmas' $tmp/out"
	status diff-repeat-option 1 $VT diff --fail-on='peak_vmas>+50' --fail-on='syscalls>+5%' "$tmp/a.zst" "$tmp/b.zst"
	status diff-no-fail-on 0 $VT diff "$tmp/a.zst" "$tmp/b.zst"
	# from zero: an infinite increase; to zero: -100%
	status diff-from-zero 1 $VT diff --fail-on='madvise.MADV_FREE.count>+1000%' "$tmp/c.zst" "$tmp/a.zst"
	status diff-to-zero 1 $VT diff --fail-on='madvise.MADV_FREE.count<-99%' "$tmp/a.zst" "$tmp/c.zst"
	t diff-site-vanished grep -Eq ' vanished +trim \(app\)$' "$tmp/out"
	status diff-sites 0 $VT diff "$tmp/a.zst" "$tmp/b.zst"
	t diff-site-changed grep -Eq '^ +100 +\+20.0% +120  changed +grow \(app\)$' "$tmp/out"
	status diff-sites-threshold 0 $VT diff --site-threshold=25 "$tmp/a.zst" "$tmp/b.zst"
	t diff-site-threshold-hides sh -c "! grep -Eq 'changed +grow' $tmp/out"
	status diff-json 1 $VT diff --json --fail-on='ops.mmap.count>+10%' "$tmp/a.zst" "$tmp/b.zst"
	json_is diff-json-values "$tmp/out" "o['verdict']=='regression' and o['failed'][0]['metric']=='ops.mmap.count' \
 and o['failed'][0]['change_pct']==20.0 and any(m['name']=='peak_vmas' and m['base']==103 and m['new']==123 for m in o['metrics']) \
 and any(m['name']=='duration_ns' and not m['deterministic'] for m in o['metrics']) \
 and any(s['site']=='grow (app)' and s['status']=='changed' for s in o['sites'])"
	status diff-json-ok 0 $VT diff --json "$tmp/a.zst" "$tmp/a.zst"
	json_is diff-json-ok-verdict "$tmp/out" "o['verdict']=='ok' and o['failed']==[]"

	# bad expressions and bad input: exit 2
	for e in 'peak_vmas>10' 'nosuch>+1%' 'peak_vmas' 'peak_vmas>+x' '>+1' 'peak_vmas>+1%junk' 'ops.*.nosuch>+1' 'peak_vmas=+1'; do
		status "diff-bad-expr-'$e'" 2 $VT diff --fail-on="$e" "$tmp/a.zst" "$tmp/b.zst"
	done
	t diff-bad-expr-message sh -c "$VT diff --fail-on='peak_vmas>10' $tmp/a.zst $tmp/b.zst 2>&1 | grep -q \"bad --fail-on expression 'peak_vmas>10'\""
	status diff-bad-threshold 2 $VT diff --site-threshold=abc "$tmp/a.zst" "$tmp/b.zst"
	status diff-one-trace 2 $VT diff "$tmp/a.zst"
	status diff-missing 2 $VT diff "$tmp/a.zst" "$tmp/nonexistent.zst"
	status diff-truncated 2 $VT diff --fail-on='any>+1%' "$tmp/a.zst" $D/truncated.zst
	status diff-not-a-trace 2 $VT diff "$tmp/a.zst" "$0"
fi

# ---- two recordings of one deterministic workload diff clean --------------
W=$B/workloads/seed000
if [ ! -x "$B/vmrec" ]; then
	echo "skip diff-clean-recordings: $B/vmrec not built"
elif [ ! -x "$W" ]; then
	echo "skip diff-clean-recordings: $W not built"
else
	ok=1
	for i in 1 2; do
		"$B/vmrec" -q --stacks -o "$tmp/r$i.zst" -- "$W" --threads 2 --iterations 300 > /dev/null 2>&1 || ok=0
	done
	"$B/vmrec" -q --stacks -o "$tmp/r3.zst" -- "$W" --threads 2 --iterations 400 > /dev/null 2>&1 || ok=0
	if [ $ok = 0 ]; then
		echo "not ok diff-clean-recordings: vmrec failed"
	else
		status diff-clean-recordings 0 $VT diff --fail-on='any>+1%,any<-1%' "$tmp/r1.zst" "$tmp/r2.zst"
		[ -s "$tmp/err" ] && cat "$tmp/err"
		grep '^FAIL' "$tmp/out"
		status diff-recordings-ops-exact 0 $VT diff --fail-on='ops.*.count>+0,ops.*.count<-0,peak_vmas>+0,peak_vmas<-0' "$tmp/r1.zst" "$tmp/r2.zst"
		grep '^FAIL' "$tmp/out"
		# 300 -> 400 iterations per thread: +100 mprotect per thread
		status diff-recordings-regression 1 $VT diff --fail-on='ops.mprotect.count>+20%' "$tmp/r1.zst" "$tmp/r3.zst"
		t diff-recordings-regression-count grep -Eq '^FAIL ops.mprotect.count: ([0-9]+) -> ([0-9]+)' "$tmp/out"
		t diff-recordings-site grep -Eq 'changed +worker_main \(seed000\)$' "$tmp/out"
	fi
fi
exit 0
