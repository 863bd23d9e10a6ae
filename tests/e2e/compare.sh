#!/bin/sh
# vmreplay --rewrite and --compare: a small seed-000 recording
# (old style, 2 threads) replayed rewritten and compared with itself:
# zero divergences on both sides, the rule count equals the number of
# mmap(PROT_NONE) frees in the recording (and what the workload says it
# did), the replayed op counts change exactly as the rule says, the JSON
# has the keys of vmreplay(1), JSON OUTPUT, with the right structure and
# ratios;
# then option errors, --help/man listing the rules, no temporary files
# left, and every workload replayed rewritten by the rules that fit it
# with zero divergences.
. "$(dirname "$0")/common.inc"
ALL=prot-none-free,dontneed-to-free,mlock-onfault,populate,discard-before-unmap,free-before-dontneed
RULES="prot-none-free dontneed-to-free free-to-dontneed mlock-onfault populate discard-before-unmap free-before-dontneed"

need compare "$VMREC" "$VMREPLAY" "$VMTRACE" || exit 0

# ---- option errors (no trace needed to be valid for these) ----
check_exit compare-unknown-rule 2 "$VMREPLAY" --compare=prot-none-free,bogus $D/seed000-old.zst
check compare-unknown-rule-message grep -q "^vmreplay: --compare: unknown rewrite rule 'bogus' (rules: prot-none-free, " "$T/err"
check_exit rewrite-unknown-rule 2 "$VMREPLAY" --rewrite=bogus $D/seed000-old.zst
check rewrite-unknown-rule-message grep -q "^vmreplay: --rewrite: unknown rewrite rule 'bogus'" "$T/err"
check_exit compare-conflicting-rules 2 "$VMREPLAY" --compare=dontneed-to-free,free-to-dontneed $D/seed000-old.zst
check_exit compare-and-rewrite 2 "$VMREPLAY" --compare --rewrite $D/seed000-old.zst
check compare-and-rewrite-message grep -q "^vmreplay: --rewrite and --compare cannot be combined" "$T/err"
check_exit compare-missing-trace 2 "$VMREPLAY" --compare "$T/nonexistent.zst"
check compare-missing-trace-message grep -q "^vmreplay: '.*nonexistent.zst': No such file" "$T/err"
# a rule that applies nowhere: said, and the trace replayed alone (2 runs)
check_exit compare-nothing 0 "$VMREPLAY" --compare=mlock-onfault --repeat=2 --json="$T/nothing.json" $D/seed000-old.zst
check compare-nothing-said grep -qx "vmreplay: '$D/seed000-old.zst': mlock-onfault applied nowhere: the rewritten trace is the trace as recorded, which is replayed alone" "$T/err"
check compare-nothing-once sh -c "grep -q '^median ' '$T/out' && ! grep -q 'baseline' '$T/out' && python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert \"baseline\" not in d and len(d[\"runs\"]) == 2, list(d)' '$T/nothing.json'"
check_exit compare-truncated-trace 2 "$VMREPLAY" --compare $D/truncated.zst
check_exit rewrite-truncated-trace 2 "$VMREPLAY" --rewrite $D/truncated.zst
check rewrite-truncated-no-json sh -c "! $VMREPLAY --rewrite --json=$T/never.json $D/truncated.zst 2>/dev/null && test ! -e $T/never.json"

# ---- the rules in --help and in the man page, as the engine lists them ----
check_exit compare-help 0 "$VMREPLAY" --help
check compare-help-rules sh -c "for r in $RULES; do grep -q \"^  \$r  \" $T/out || exit 1; done;
	test \"\$($VMTRACE rewrite --list-rules | cut -d' ' -f1 | tr '\n' ' ')\" = '$RULES '"
check compare-help-options sh -c "grep -q -- '--rewrite\[=RULES\]' $T/out && grep -q -- '--compare\[=RULES\]' $T/out"
check compare-man-rules sh -c "for r in $RULES; do grep -q \"^\.B \$(echo \$r | sed 's/-/\\\\\\\\-/g')\$\" man/vmreplay.1 || exit 1; done;
	grep -q 'rewrite' man/vmreplay.1 && grep -q 'compare' man/vmreplay.1"

# ---- a small seed-000 recording: old style, 2 threads ----
K=300
if ! "$VMREC" -q -o "$T/old.zst" -- $W/seed000 --mode old --threads 2 --iterations $K > "$T/old.log" 2> "$T/old.err"; then
	not_ok compare-record "vmrec failed"; show "$T/old.err"; exit 0
fi
# The frees, counted in the recording itself.
"$VMTRACE" dump "$T/old.zst" > "$T/old.dump"
FREES=$(grep -c 'mmap(0x[0-9a-f]*, [0-9]*, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x' "$T/old.dump")
check compare-frees-as-workload-says test "$FREES" = $((2 * K))

mkdir "$T/td"
check_exit rewrite-run 0 env TMPDIR="$T/td" "$VMREPLAY" --rewrite --json="$T/rw.json" "$T/old.zst"
check rewrite-run-rules-line grep -qx "rewritten by prot-none-free: prot-none-free applied $FREES times; [0-9]* events in, [0-9]* out" "$T/out"
check rewrite-run-zero-divergences grep -q 'divergences 0$' "$T/out"
check rewrite-no-temp-files-left sh -c "test -z \"\$(ls -A $T/td)\""
check rewrite-json python3 - "$T/rw.json" "$FREES" <<'EOF'
import json, sys
d, frees = json.load(open(sys.argv[1])), int(sys.argv[2])
assert d['rewrite'] == 'prot-none-free' and d['rules'] == {'prot-none-free': frees}, d['rules']
assert len(d['runs']) == 1 and d['median']['divergences'] == 0
# One madvise per free, and the frees are gone from the replayed mmaps.
assert d['median']['ops']['madvise']['count'] == frees, d['median']['ops']
EOF

check_exit compare-run 0 env TMPDIR="$T/td" "$VMREPLAY" --compare --repeat=3 --json="$T/c.json" "$T/old.zst"
cp "$T/out" "$T/c.txt"
check compare-no-temp-files-left sh -c "test -z \"\$(ls -A $T/td)\""
check compare-table python3 - "$T/c.txt" "$FREES" <<'EOF'
import re, sys
txt, frees = open(sys.argv[1]).read(), int(sys.argv[2])
assert re.search(r'^prot-none-free +%d$' % frees, txt, re.M), 'rule count row'
assert '3 runs each, alternating' in txt
hdr = re.search(r'^metric \(median\) +baseline +rewritten +ratio +baseline min-max +rewritten min-max +clear$', txt, re.M)
assert hdr, 'header'
rows = {}
for l in txt.splitlines():
    m = re.match(r'^(.+?) {2,}(\S+) +(\S+) +(\S+) +(\S+)-(\S+) +(\S+)-(\S+) +(yes|no)$', l)
    if m:
        rows[m.group(1)] = m.groups()[1:]
for want in ('wall_ms', 'minor faults', 'major faults', 'voluntary cs', 'involuntary cs',
             'divergences', 'wait_ms', 'peak vmas', 'mprotect calls', 'madvise calls',
             'mmap p50_us', 'mmap p99_us'):
    assert want in rows, (want, sorted(rows))
for k, (b, r, q, blo, bhi, rlo, rhi, clear) in rows.items():
    # medians inside their ranges; clear exactly when the ranges are apart
    assert float(blo) <= float(b) <= float(bhi) and float(rlo) <= float(r) <= float(rhi), k
    apart = float(bhi) < float(rlo) or float(rhi) < float(blo)
    assert (clear == 'yes') == apart, k
assert rows['divergences'][:2] == ('0', '0'), rows['divergences']
assert rows['madvise calls'][0] == '0' and int(rows['madvise calls'][1]) == frees
assert rows['madvise calls'][7] == 'yes'
# the table's ratio column is baseline/max(rewritten,1)
b, r = (int(x) for x in rows['mprotect calls'][:2])
assert abs(float(rows['mprotect calls'][2]) - b / max(r, 1)) < 0.6, rows['mprotect calls']
# write-lock calls: the mmaps and mprotects of each side (madvise reads);
# the frees' mmaps and all but each thread's first mprotect(RW) are gone
wl = [int(x) for x in rows['write-lock calls'][:2]]
mm = [int(x) for x in rows['mmap calls'][:2]]
mp = [int(x) for x in rows['mprotect calls'][:2]]
assert wl[0] >= mm[0] + mp[0] and wl[0] - wl[1] == 2 * frees - 2, (wl, mm, mp)
assert 'write-lock ms' in rows
# the calls in the traces: the frees' mmaps and all but each thread's
# first mprotect(RW) no longer change VMAs nor take the lock for writing
calls = {}
for l in txt.split('calls in the trace', 1)[1].split('metric (median)')[0].splitlines()[1:]:
    m = re.match(r'^(.+?) +(\d+) +(\d+) +(\S+)$', l)
    if m:
        calls[m.group(1)] = (int(m.group(2)), int(m.group(3)))
assert set(calls) == {'all', 'changing VMAs', 'write-locked'}, calls
assert calls['all'][0] - calls['all'][1] == frees - 2, calls
assert calls['changing VMAs'][0] - calls['changing VMAs'][1] == 2 * frees - 2, calls
assert calls['write-locked'] == tuple(wl), (calls, wl)
# per-thread rows (threads that switched at all): at most four, of
# recorded threads 0 to 2
cs = [k for k in rows if k.startswith('cs of t')]
assert len(cs) <= 4 and all(k[len('cs of t'):] in ('0', '1', '2') for k in cs), cs
EOF
check compare-json python3 - "$T/c.json" "$FREES" <<'EOF'
import json, sys
d, frees = json.load(open(sys.argv[1])), int(sys.argv[2])
run_keys = {'wall_ns', 'minor_faults', 'major_faults', 'voluntary_cs', 'involuntary_cs',
            'divergences', 'events', 'peak_vmas', 'ops'}
for side in ('baseline', 'rewritten'):
    s = d[side]
    assert set(s) == {'runs', 'median'}, s.keys()
    assert len(s['runs']) == 3
    for r in s['runs'] + [s['median']]:
        assert run_keys <= set(r), run_keys - set(r)
        for op, o in r['ops'].items():
            assert {'count', 'errors', 'p50_ns', 'p99_ns', 'max_ns'} <= set(o), op
    assert s['median']['divergences'] == 0, (side, s['median']['divergence_list'])
assert d['rules'] == {'prot-none-free': frees}
ci, co = d['rewrite_calls_in'], d['rewrite_calls_out']
assert set(ci) == set(co) == {'calls', 'write_locked', 'vma_changes'}, ci
assert ci['calls'] - co['calls'] == frees - 2 and ci['vma_changes'] - co['vma_changes'] == 2 * frees - 2
B, R = d['baseline']['median'], d['rewritten']['median']
# The rule's effect, as replayed: one madvise per free, the frees' mmaps
# and all but each thread's first mprotect(RW) gone, nothing else changed.
assert R['ops']['madvise']['count'] == frees and 'madvise' not in B['ops']
assert B['ops']['mmap']['count'] - R['ops']['mmap']['count'] == frees
assert B['ops']['mprotect']['count'] - R['ops']['mprotect']['count'] == frees - 2
assert B['events'] - R['events'] == frees - 2
# ratio: every number of a run object, baseline median / max(rewritten median, 1)
q = d['ratio']
def check(qd, bd, rd, path):
    for k, v in qd.items():
        if isinstance(v, dict):
            check(v, bd.get(k, {}), rd.get(k, {}), path + k + '.')
        else:
            want = bd.get(k, 0) / max(rd.get(k, 0), 1)
            assert abs(v - want) <= 1e-5 * max(1, want), (path + k, v, want)
check(q, B, R, '')
for k in run_keys - {'ops'}:
    assert k in q, k
assert set(q['ops']) == set(B['ops']) | set(R['ops']), q['ops'].keys()
assert q['ops']['mprotect']['count'] > 100 and q['ops']['madvise']['count'] == 0
assert q['perf'].keys() and q['rusage'].keys()
EOF
check_exit compare-quiet 0 "$VMREPLAY" --compare=prot-none-free --repeat=1 -q "$T/old.zst"
check compare-quiet-lines awk 'NR == 1 && !/^rewritten by / { exit 1 }
	NR == 2 && !/^baseline  wall .* divergences 0$/ { exit 1 }
	NR == 3 && !/^rewritten wall .* divergences 0$/ { exit 1 } NR == 4 && !/^fidelity/ { exit 1 }
	NR > 4 && !/^reclaim during the replay / { exit 1 } END { exit NR < 4 }' "$T/out"

# ---- every workload, rewritten by the rules that fit it ----
# NAME RULES MIN-APPLIED-OF-FIRST-RULE COMMAND...
while read -r name rules min cmd; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	"$VMREC" -q -o "$T/$name.zst" -- $W/$cmd > "$T/$name.log" 2>&1
	rc=$?
	if [ "$rc" = 77 ]; then
		skip "rewrite-replay-$name" "$(tail -1 "$T/$name.log")"; continue
	fi
	if [ "$rc" != 0 ] && [ "${cmd%% *}" != forkexec ]; then
		not_ok "rewrite-replay-$name" "recording exited $rc"; show "$T/$name.log"; continue
	fi
	if ! "$VMREPLAY" -q --rewrite=$rules --json="$T/$name.json" "$T/$name.zst" > "$T/$name.rp" 2>&1; then
		not_ok "rewrite-replay-$name" "vmreplay failed"; show "$T/$name.rp"; continue
	fi
	check "rewrite-replay-$name" python3 - "$T/$name.json" "$min" "${rules%%,*}" <<'EOF'
import json, sys
d, want, first = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
med = d['median']
if med['divergences']:
    for x in med['divergence_list']:
        print(f"event {x['event']}: {x['text']} -> {x['replayed']}")
    sys.exit(f"{med['divergences']} divergences")
if d['rules'][first] < want:
    sys.exit(f"{first} applied {d['rules'][first]} times, want >= {want}")
EOF
done <<EOF
seed000-old       prot-none-free     200 seed000 --mode old --threads 2 --iterations 100
seed000-old-1     $ALL               100 seed000 --mode old --threads 1 --iterations 100 --pages 3
seed000-new       dontneed-to-free   200 seed000 --mode new --threads 2 --iterations 100
seed001-dontneed  dontneed-to-free   6   seed001 --procs 2 --size 2 --loops 3 --advice dontneed
seed001-free      free-to-dontneed   6   seed001 --procs 2 --size 2 --loops 3 --advice free
seed002           $ALL               0   seed002 --count 200 --kind anon
seed003-locked    mlock-onfault      1   seed003 --mode locked --size 4 --accesses 50
seed003-mlock     mlock-onfault      50  seed003 --mode mlock --size 4 --accesses 50
seed004           populate           2   seed004 --pages 64 --rounds 2
everyop           $ALL               0   everyop
forkexec          $ALL               0   forkexec
EOF
exit 0
