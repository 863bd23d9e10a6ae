#!/bin/sh
# vmtrace stat and diff: known values on the golden traces and on generated
# traces (tests/unit/test_stats.c --gen), diff's --fail-on semantics and exit
# codes, bad expressions, and two recordings of one deterministic workload
# diffing clean.
. "$(dirname "$0")/common.inc"
TEST_STATS=$B/tests/test_stats
json_is() { # NAME FILE PYTHON-EXPRESSION-OVER-o
	name=$1 file=$2 expr=$3
	check "$name" python3 -c "
import json,sys
o=json.load(open('$file'))
ok=($expr)
if not ok: print('false:', '''$expr'''); sys.exit(1)"
}

# ---- stat on the golden traces --------------------------------------------
check_exit stat-every-kind 0 $VMTRACE stat --json $D/every-kind.zst
cp "$T/out" "$T/ek.json"
# Known by construction (tests/data/mkgolden.c): 5 snapshot mappings (74
# pages) + 8 KiB anon + 16 KiB file + mremap growth + 33 heap pages + a
# 64 KiB SysV segment make the peak; mlockall(MCL_CURRENT) locks all but
# [vvar].
json_is stat-every-kind-values "$T/ek.json" "o['events']==48 and o['processes']==2 and o['threads']==3 \
 and o['duration_ns']==141500 and o['ops']['mmap']=={'count':3,'errors':1,'bytes':24576,'time_ns':o['ops']['mmap']['time_ns']} \
 and o['ops']['brk']['bytes']==135168 and o['ops']['shmat']['bytes']==65536 \
 and o['peak_vmas']==10 and o['peak_mapped_bytes']==131*4096 and o['peak_locked_bytes']==76*4096 \
 and o['touched_pages']==2 and o['touched_written_pages']==1 and o['faults']['write']==1 \
 and o['lost']['faults']==3 and o['model_inexact']==0 and o['madvise']['MADV_DONTNEED']['count']==1"
json_is stat-every-kind-sites "$T/ek.json" "o['stacks_recorded'] and o['call_sites'][0]['site']=='work_loop (golden-app)' and o['call_sites'][0]['count']==3"
json_is stat-every-kind-procs "$T/ek.json" "[p['pid'] for p in o['per_process']]==[4242,4250] and o['per_process'][1]['parent']==0 \
 and o['per_process'][0]['program']=='/usr/bin/golden-app' and [x['syscalls'] for x in o['per_thread']]==[21,1,1]"
json_is stat-keys "$T/ek.json" "all(k in o for k in ['events','processes','threads','duration_ns','ops','peak_vmas','peak_mapped_bytes','touched_pages']) \
 and all(set(o['ops'][op])>={'count','errors','bytes'} for op in ['mmap','munmap','mprotect','pkey_mprotect','madvise','process_madvise','mlock','mlock2','munlock','mlockall','munlockall','mremap','brk','msync','mincore','remap_file_pages','shmat','shmdt','mseal'])"

check_exit stat-seed000 0 $VMTRACE stat --json $D/seed000-old.zst
cp "$T/out" "$T/s0.json"
# Two threads, five rounds of mprotect(RW), touch, mmap(PROT_NONE|FIXED)
# on one page each: the pages never merge (not adjacent).
json_is stat-seed000-values "$T/s0.json" "o['ops']['mmap']['count']==12 and o['ops']['mprotect']['count']==10 \
 and o['ops']['munmap']['count']==2 and o['peak_vmas']==2 and o['peak_mapped_bytes']==8192 \
 and o['touched_pages']==10 and o['threads']==3 and o['syscalls']==24"

check_exit stat-text 0 $VMTRACE stat $D/every-kind.zst
check stat-text-peak grep -q '^peak VMAs    10 at' "$T/out"
check stat-text-op-row grep -Eq '^mmap +3 +1 +24576 ' "$T/out"
check stat-text-site grep -Eq '^ +[0-9]+ +[0-9]+  [a-z]+:[0-9].*  work_loop \(golden-app\)$' "$T/out"
check_exit stat-truncated 2 $VMTRACE stat $D/truncated.zst
check stat-truncated-prints-summary grep -q '^events ' "$T/out"
check stat-truncated-message grep -q "truncated at byte" "$T/err"
check_exit stat-stdin 0 sh -c "$VMTRACE stat --json - < $D/every-kind.zst"
check_exit stat-no-trace 2 $VMTRACE stat
check_exit stat-missing-file 2 $VMTRACE stat "$T/nonexistent.zst"
check_exit stat-bad-option 2 $VMTRACE stat --frobnicate $D/every-kind.zst
check_exit help-stat 0 $VMTRACE help stat
check_exit help-diff 0 $VMTRACE help diff
check help-lists-stat-diff sh -c "$VMTRACE --help | grep -q '^  stat' && $VMTRACE --help | grep -q '^  diff'"

# ---- generated traces --------------------------------------------------------
if need generated-traces "$TEST_STATS"; then
	"$TEST_STATS" --gen "$T/a.zst" 100 10 1 && "$TEST_STATS" --gen "$T/b.zst" 120 10 1 &&
	"$TEST_STATS" --gen "$T/c.zst" 100 0 1 && "$TEST_STATS" --gen "$T/big.zst" 20000 0 0 ||
		not_ok generate "test_stats --gen failed"
	check_exit stat-gen 0 $VMTRACE stat --json "$T/a.zst"
	json_is stat-gen-values "$T/out" "o['ops']['mmap']['count']==100 and o['ops']['munmap']['count']==100 \
 and o['peak_vmas']==103 and o['peak_mapped_bytes']==136*4096 and o['madvise']['MADV_FREE']=={'count':10,'errors':0,'bytes':40960} \
 and [s['site'] for s in o['call_sites']]==['grow (app)','release (app)','trim (app)']"
	check_exit stat-gen-big 0 $VMTRACE stat --json "$T/big.zst"
	json_is stat-gen-big-peak "$T/out" "o['peak_vmas']==20003 and o['syscalls']==40000"

	# identical traces: nothing changes, nothing holds
	check_exit diff-same 0 $VMTRACE diff --fail-on='any>+0,any<-0' "$T/a.zst" "$T/a.zst"
	check diff-same-verdict grep -q '^verdict: ok' "$T/out"
	check diff-table-header grep -Eq '^ +base +%change +new +metric$' "$T/out"
	# a.zst -> b.zst: 100 -> 120 mmaps (+20%), peak VMAs 103 -> 123 (+20)
	check_exit diff-pct-holds 1 $VMTRACE diff --fail-on='ops.mmap.count>+10%' "$T/a.zst" "$T/b.zst"
	check diff-pct-names-metric grep -q '^FAIL ops.mmap.count: 100 -> 120 (+20.0%)' "$T/out"
	check_exit diff-pct-below 0 $VMTRACE diff --fail-on='ops.mmap.count>+25%' "$T/a.zst" "$T/b.zst"
	check_exit diff-pct-equal-not-more 0 $VMTRACE diff --fail-on='ops.mmap.count>+20%' "$T/a.zst" "$T/b.zst"
	check_exit diff-abs-holds 1 $VMTRACE diff --fail-on='peak_vmas>+19' "$T/a.zst" "$T/b.zst"
	check_exit diff-abs-below 0 $VMTRACE diff --fail-on='peak_vmas>+50' "$T/a.zst" "$T/b.zst"
	check_exit diff-decrease-holds 1 $VMTRACE diff --fail-on='ops.mmap.count<-10%' "$T/b.zst" "$T/a.zst"
	check_exit diff-decrease-not-increase 0 $VMTRACE diff --fail-on='ops.mmap.count<-10%' "$T/a.zst" "$T/b.zst"
	check_exit diff-any-holds 1 $VMTRACE diff --fail-on='any>+15%' "$T/a.zst" "$T/b.zst"
	check_exit diff-any-excludes-timing 0 $VMTRACE diff --fail-on='any>+25%' "$T/a.zst" "$T/b.zst"
	check_exit diff-glob 1 $VMTRACE diff --fail-on='ops.*.count>+10%' "$T/a.zst" "$T/b.zst"
	check_exit diff-list-one-holds 1 $VMTRACE diff --fail-on='peak_vmas>+50,ops.munmap.count>+10%' "$T/a.zst" "$T/b.zst"
	check diff-list-prints-which sh -c "grep -q '^FAIL ops.munmap.count' $T/out && ! grep -q '^FAIL peak_vmas' $T/out"
	check_exit diff-repeat-option 1 $VMTRACE diff --fail-on='peak_vmas>+50' --fail-on='syscalls>+5%' "$T/a.zst" "$T/b.zst"
	check_exit diff-no-fail-on 0 $VMTRACE diff "$T/a.zst" "$T/b.zst"
	# from zero: an infinite increase; to zero: -100%
	check_exit diff-from-zero 1 $VMTRACE diff --fail-on='madvise.MADV_FREE.count>+1000%' "$T/c.zst" "$T/a.zst"
	check_exit diff-to-zero 1 $VMTRACE diff --fail-on='madvise.MADV_FREE.count<-99%' "$T/a.zst" "$T/c.zst"
	check diff-site-vanished grep -Eq ' vanished +trim \(app\)$' "$T/out"
	check_exit diff-sites 0 $VMTRACE diff "$T/a.zst" "$T/b.zst"
	check diff-site-changed grep -Eq '^ +100 +\+20.0% +120  changed +grow \(app\)$' "$T/out"
	check_exit diff-sites-threshold 0 $VMTRACE diff --site-threshold=25 "$T/a.zst" "$T/b.zst"
	check diff-site-threshold-hides sh -c "! grep -Eq 'changed +grow' $T/out"
	check_exit diff-json 1 $VMTRACE diff --json --fail-on='ops.mmap.count>+10%' "$T/a.zst" "$T/b.zst"
	json_is diff-json-values "$T/out" "o['verdict']=='regression' and o['failed'][0]['metric']=='ops.mmap.count' \
 and o['failed'][0]['change_pct']==20.0 and any(m['name']=='peak_vmas' and m['base']==103 and m['new']==123 for m in o['metrics']) \
 and any(m['name']=='duration_ns' and not m['deterministic'] for m in o['metrics']) \
 and any(s['site']=='grow (app)' and s['status']=='changed' for s in o['sites'])"
	check_exit diff-json-ok 0 $VMTRACE diff --json "$T/a.zst" "$T/a.zst"
	json_is diff-json-ok-verdict "$T/out" "o['verdict']=='ok' and o['failed']==[]"

	# bad expressions and bad input: exit 2
	for e in 'peak_vmas>10' 'nosuch>+1%' 'peak_vmas' 'peak_vmas>+x' '>+1' 'peak_vmas>+1%junk' 'ops.*.nosuch>+1' 'peak_vmas=+1'; do
		check_exit "diff-bad-expr-'$e'" 2 $VMTRACE diff --fail-on="$e" "$T/a.zst" "$T/b.zst"
	done
	check diff-bad-expr-message sh -c "$VMTRACE diff --fail-on='peak_vmas>10' $T/a.zst $T/b.zst 2>&1 | grep -q \"bad --fail-on expression 'peak_vmas>10'\""
	check_exit diff-bad-threshold 2 $VMTRACE diff --site-threshold=abc "$T/a.zst" "$T/b.zst"
	check_exit diff-one-trace 2 $VMTRACE diff "$T/a.zst"
	check_exit diff-missing 2 $VMTRACE diff "$T/a.zst" "$T/nonexistent.zst"
	check_exit diff-truncated 2 $VMTRACE diff --fail-on='any>+1%' "$T/a.zst" $D/truncated.zst
	check_exit diff-not-a-trace 2 $VMTRACE diff "$T/a.zst" "$0"
fi

# ---- two recordings of one deterministic workload diff clean --------------
if need diff-clean-recordings "$VMREC" "$W/seed000"; then
	recorded=1
	# (Resident touches: which pages fault, and how, is not deterministic.)
	for i in 1 2; do
		"$VMREC" -q --stacks --touch=resident -o "$T/r$i.zst" -- "$W/seed000" --threads 2 --iterations 300 > /dev/null 2>&1 || recorded=0
	done
	"$VMREC" -q --stacks --touch=resident -o "$T/r3.zst" -- "$W/seed000" --threads 2 --iterations 400 > /dev/null 2>&1 || recorded=0
	if [ $recorded = 0 ]; then
		not_ok diff-clean-recordings "vmrec failed"
	else
		check_exit diff-clean-recordings 0 $VMTRACE diff --fail-on='any>+1%,any<-1%' "$T/r1.zst" "$T/r2.zst"
		[ -s "$T/err" ] && cat "$T/err"
		grep '^FAIL' "$T/out"
		check_exit diff-recordings-ops-exact 0 $VMTRACE diff --fail-on='ops.*.count>+0,ops.*.count<-0,peak_vmas>+0,peak_vmas<-0' "$T/r1.zst" "$T/r2.zst"
		grep '^FAIL' "$T/out"
		# 300 -> 400 iterations per thread: +100 mprotect per thread
		check_exit diff-recordings-regression 1 $VMTRACE diff --fail-on='ops.mprotect.count>+20%' "$T/r1.zst" "$T/r3.zst"
		check diff-recordings-regression-count grep -Eq '^FAIL ops.mprotect.count: ([0-9]+) -> ([0-9]+)' "$T/out"
		check diff-recordings-site grep -Eq 'changed +worker_main \(seed000\)$' "$T/out"
	fi
fi
exit 0
