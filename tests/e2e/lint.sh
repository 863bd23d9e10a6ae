#!/bin/sh
# vmtrace lint: on the golden traces (exit codes, text and JSON), on the
# real recordings of tests/data/real (the finding each shows, with its
# demangled call site), then on every workload of tests/workloads recorded
# with vmrec: each variant that shows a seed's pattern gets exactly that
# finding, the others none.
. "$(dirname "$0")/common.inc"

# ---- golden traces ----
check_exit lint-golden-seed000 1 $VMTRACE lint $D/seed000-old.zst
check lint-golden-seed000-text grep -q '^\[prot-none-free\]' "$T/out"
check lint-golden-seed000-rule grep -q 'rule: *prot-none-free' "$T/out"
check lint-golden-seed000-example grep -q 'example: *event [0-9]* \[p0 t1\] mmap(0x7f0000001000, 4096, PROT_NONE' "$T/out"
check_exit lint-golden-seed000-json 1 $VMTRACE lint --json $D/seed000-old.zst
check lint-json-parses python3 - "$T/out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['count'] == 1 and len(d['findings']) == 1, d
f = d['findings'][0]
assert f['id'] == 'prot-none-free' and f['rule'] == 'prot-none-free', f
# 2 worker threads, 5 cycles each (tests/data/README.md)
assert f['evidence']['cycles'] == 10 and f['evidence']['threads'] == 2, f
assert sorted((p['thread'], p['cycles']) for p in f['parts']) == [(1, 5), (2, 5)], f
ex = f['example']
assert ex['text'].startswith('mmap(') and 'PROT_NONE' in ex['text'] and ex['thread'] == 1, ex
assert d['checked_read_then_write'] is False
EOF
check_exit lint-golden-every-kind-clean 0 $VMTRACE lint $D/every-kind.zst
check lint-clean-says-0 grep -q ': 0 findings' "$T/out"
check_exit lint-truncated 2 $VMTRACE lint $D/truncated.zst
check lint-truncated-message grep -q 'truncated at byte' "$T/err"
check_exit lint-stdin 1 sh -c "$VMTRACE lint - < $D/seed000-old.zst"
check_exit lint-no-trace 2 $VMTRACE lint
check_exit lint-bad-option 2 $VMTRACE lint --bogus $D/seed000-old.zst
check_exit lint-help 0 $VMTRACE help lint

# ---- real recordings (tests/data/real/README.md) ----
check_exit lint-real-jvm17-g1 1 $VMTRACE lint $D/real/jvm17-g1.zst
check lint-real-jvm17-g1-finding grep -q '^\[prot-none-free\] memory uncommitted with mmap(PROT_NONE, MAP_FIXED)' "$T/out"
check lint-real-jvm17-g1-site grep -qx '  call sites: os::pd_uncommit_memory(char\*, unsigned long, bool) (libjvm.so): 1029 uncommits' "$T/out"
check lint-real-jvm17-g1-stack grep -qx '  stack: *#0 mmap+0x13 (libc.so.6)' "$T/out"
check_exit lint-real-jvm17-g1-json 1 $VMTRACE lint --json $D/real/jvm17-g1.zst
check lint-real-jvm17-g1-json-sites python3 - "$T/out" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))['findings'][0]
assert f['id'] == 'prot-none-free' and f['rule'] == 'prot-none-free', f['id']
assert f['call_sites'][0] == {'site': 'os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)',
                              'role': 'uncommits', 'calls': 1029}, f['call_sites']
assert f['evidence']['recommitted_by_other_thread'] == 720, f['evidence']
assert 'commit charge' in f['note']
PY
while read -r name want; do
	$VMTRACE lint --json $D/real/$name.zst > "$T/$name.json" 2> "$T/$name.err"
	got=$(python3 -c "
import json, sys
print(','.join(f['id'] for f in json.load(open(sys.argv[1]))['findings']) or '-')" "$T/$name.json" 2>&1)
	if [ "$got" = "$want" ]; then ok "lint-real-$name"; else not_ok "lint-real-$name" "findings '$got', want '$want'"; fi
done <<'LIST'
jvm17-parallel prot-none-free
jvm17-serial prot-none-free
glibc-arenas -
glibc-arenas-strict prot-none-free
redis-jemalloc-muzzy madv-free-volume,free-before-dontneed
node20-workers discard-before-unmap
qemu-memlock locked-untouched,discard-locked
ld-gold vma-fragmentation
git-loose file-map-churn
LIST

# ---- recorded workloads ----
need lint-workloads "$VMREC" || exit 0
if ! "$VMREC" -q -o "$T/probe.zst" -- /bin/true > /dev/null 2> "$T/probe.err"; then
	skip lint-workloads "vmrec cannot record here: $(head -1 "$T/probe.err")"
	exit 0
fi

# VARIANT-NAME  TOUCH-MODE  EXPECTED-FINDINGS(comma list or -)  COMMAND...
while read -r name mode want cmd; do
	[ -n "$name" ] || continue
	prog=${cmd%% *}
	need "lint-$name" "$W/$prog" || continue
	# shellcheck disable=SC2086
	"$VMREC" -q --touch=$mode -o "$T/$name.zst" -- $W/$cmd > "$T/$name.log" 2>&1
	rc=$?
	if [ "$rc" = 77 ]; then
		skip "lint-$name" "$(tail -1 "$T/$name.log")"
		continue
	fi
	if [ "$rc" != 0 ]; then
		not_ok "lint-$name" "recording exited $rc"; show "$T/$name.log"
		continue
	fi
	# Read-then-write is no finding on a kernel without the zero page:
	# the lint says it could not be, and why.
	if [ "$(zero_page "$T/$name.zst")" = 0 ] && [ "$want" = read-then-write ]; then
		want=-
		check "lint-$name-no-zero-page" sh -c "'$VMTRACE' lint --json '$T/$name.zst' | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"checked_read_then_write\"] is False, d
assert any(\"maps no zero page\" in n for n in d[\"notes\"]), d[\"notes\"]
'"
	fi
	$VMTRACE lint --json "$T/$name.zst" > "$T/$name.json" 2> "$T/$name.err"
	lrc=$?
	got=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(','.join(f['id'] for f in d['findings']) or '-')" "$T/$name.json" 2>&1)
	wrc=1; [ "$want" = "-" ] && wrc=0
	if [ "$got" = "$want" ] && [ "$lrc" = "$wrc" ]; then
		ok "lint-$name"
	else
		not_ok "lint-$name" "findings '$got' (exit $lrc), want '$want' (exit $wrc)"
		show "$T/$name.err"
	fi
done <<'EOF'
seed000-old resident prot-none-free seed000 --mode old
seed000-new resident - seed000 --mode new
seed001-free resident madv-free-volume seed001 --advice free
seed001-dontneed resident - seed001 --advice dontneed
seed002-file resident vma-fragmentation seed002 --kind file
seed002-anon resident vma-fragmentation seed002 --kind anon
seed002-anon-merge resident - seed002 --kind anon-merge
seed003-locked resident locked-untouched seed003 --mode locked
seed003-locked-faults faults locked-untouched seed003 --mode locked
seed003-mlock resident mlock-per-page seed003 --mode mlock
seed003-onfault resident - seed003 --mode onfault
seed004-faults faults read-then-write seed004
seed004-resident resident - seed004
seed004-write-only faults - seed004 --write-only
everyop resident - everyop
everyop-faults faults - everyop
forkexec resident - forkexec
forkexec-faults faults - forkexec
EOF

# a finding's evidence agrees with what the workload says it did
if [ -s "$T/seed001-free.json" ]; then
	check lint-seed001-evidence python3 - "$T/seed001-free.json" <<'EOF'
import json, sys
f = json.load(open(sys.argv[1]))['findings'][0]
# seed001 defaults: 2 children, 16 MiB each, 5 rounds of MADV_FREE
assert f['evidence']['calls'] == 10, f['evidence']
assert f['evidence']['bytes'] == 2 * 5 * 16 << 20, f['evidence']
assert f['evidence']['repeated_calls'] == 8, f['evidence']
EOF
fi
if [ -s "$T/seed004-faults.json" ] && [ "$(zero_page "$T/seed004-faults.zst")" = 1 ]; then
	check lint-seed004-evidence python3 - "$T/seed004-faults.json" "$T/seed004-faults.log" <<'EOF'
import json, re, sys
f = json.load(open(sys.argv[1]))['findings'][0]
log = open(sys.argv[2]).read()
pages = int(re.search(r' pages=(\d+)', log).group(1)) * int(re.search(r' rounds=(\d+)', log).group(1))
# every page the workload read then wrote, plus at most a few of startup
assert pages <= f['evidence']['pages'] <= pages + 64, (pages, f['evidence'])
EOF
fi
if [ -s "$T/seed002-file.json" ]; then
	inproc=0
	"$VMTRACE" dump "$T/seed002-file.zst" | sed -n 2p | grep -q ' backend=inproc ' && inproc=1
	check lint-seed002-peak-vmas python3 - "$T/seed002-file.json" "$T/seed002-file.log" "$inproc" <<'EOF'
import json, re, sys
f = json.load(open(sys.argv[1]))['findings'][0]
# the workload counts the lines of /proc/self/maps at its peak; the model
# must agree (1 line of slack: [vsyscall] is a maps line, not a VMA; under
# the inproc backend the program also sees the runtime's VMAs, which are
# not in the trace: its code and data, the rings, and a page of stubs near
# each object it patched, so at most 8 more)
peak = int(re.search(r' peak_vmas=(\d+)', open(sys.argv[2]).read()).group(1))
runtime = 8 if sys.argv[3] == '1' else 0
assert 0 <= peak - f['evidence']['peak_vmas'] + 1 <= 2 + runtime, (f['evidence'], peak)
assert f['evidence']['unmerged_small_maps'] >= 1990, f['evidence']
EOF
fi
exit 0
