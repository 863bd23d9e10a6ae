#!/bin/sh
# vmreplay --kernel=A --kernel=B ... --host: one trace on several kernels
# and this machine in one command.  With tests/e2e/fakeqemu.py standing
# in for qemu, each kind of guest failure (no kernel file, a file that is
# not a kernel, a kernel that does not boot or panics, a guest that runs
# out of memory, hangs past --vm-timeout, or sends garbage, qemu's own
# error, a trace the guest finds bad) is one line on stderr and a column
# saying why, and the other kernels' results are kept.  Where qemu and
# Debian's 6.1 and 6.12 images are installed (mk/kernel.sh), a short trace
# on both and this machine, with a missing image among them: the table
# has every column, and its files give the same table to vmtrace diff.
# The single-kernel checks are tests/e2e/vm.sh's.
. "$(dirname "$0")/common.inc"
need kernels "$VMREPLAY" "$VMREC" "$VMTRACE" "$B/vmreplay-static" || exit 0
KERNEL=${VMREC_KERNEL:-/var/cache/vmrec/vmlinuz-6.1}
KERNEL2=${VMREC_KERNEL2:-/var/cache/vmrec/vmlinuz-6.12}

python3 tests/e2e/fakeqemu.py --bzimage "$T/fake.bzImage"
FAKE=$T/fake.bzImage
mkdir -p "$T/bin"
ln -s "$PWD/tests/e2e/fakeqemu.py" "$T/bin/qemu-system-x86_64"
cp "$D/seed000-old.zst" "$T/t.zst"

# ---- every kind of guest failure (the fake qemu, one mode per image) ----------------
# Each gives one line on stderr and a column saying why; the other
# kernels' results are kept.  k-missing is not there; t.zst is no kernel.
for k in guest panic silent oom qemufail garbage hang badtrace; do cp "$FAKE" "$T/k-$k"; done
MODES="k-guest=guest,k-panic=panic,k-silent=silent,k-oom=oom,k-qemufail=qemufail"
MODES="$MODES,k-garbage=garbage,k-hang=hang,k-badtrace=badtrace"
# What each failed column says: on stderr as "vmreplay: NAME: WHY", in
# NAME.json as its error, in the table.
cat > "$T/why" <<'EOF'
k-missing	--kernel: 'k-missing': No such file or directory
t.zst	--kernel: 't.zst': not a bootable x86 kernel image (no bzImage boot header)
k-panic	the guest kernel panicked: Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)
k-silent	the guest ended before its kernel printed anything (qemu exited with status 0): is 'k-silent' a kernel that boots?
k-oom	the guest ran out of memory (256M; give it more with --vm-memory): Out of memory: Killed process 77 (vmreplay) total-vm:9000kB
k-hang	the guest did not finish within 10 s (--vm-timeout); it was ended
k-qemufail	qemu failed: qemu-system-x86_64: -m 1024M: cannot set up guest memory 'pc.ram'
k-garbage	the guest's results port sent bytes that are not results (is IMAGE's second serial port ttyS1?)
k-badtrace	't.zst': truncated at byte 99
EOF
# fake_matrix TAG DIR FAILED...: k-guest, this machine and the failed
# ones (vmreplay takes 8 kernels at most), all at once, k-hang ended at
# 10 s (the fakes are python: on a loaded machine one can take seconds
# to start, and a fake guest must not be ended first); its stdout in
# $T/TAG.out; stderr one line for each failed one; DIR/NAME.json for
# each, saying why for the failed ones, with its report beside it but for
# the images refused before any ran.
fake_matrix() {
	_tag=$1 _dir=$2
	shift 2
	_k=
	for _n; do _k="$_k --kernel=$_n"; done
	_start=$(date +%s)
	# shellcheck disable=SC2086
	(cd "$T" && check_exit "$_tag" 1 env PATH="$T/bin:$PATH" FAKE_MODES=$MODES \
		"$VMREPLAY" --kernel=k-guest --host $_k --vm-accel=tcg --vm-timeout=10 --vm-jobs=8 \
		--vm-memory=256M --repeat=2 --no-progress --json="$_dir/" t.zst)
	_secs=$(($(date +%s) - _start))
	if [ "$_secs" -le 40 ]; then ok "$_tag-in-time"; else not_ok "$_tag-in-time" "took $_secs s"; fi
	cp "$T/out" "$T/$_tag.out"
	check "$_tag-one-line-each" python3 - "$T/why" "$T/err" "$@" <<'EOF'
import sys
why = dict(l.rstrip('\n').split('\t') for l in open(sys.argv[1]))
err = open(sys.argv[2]).read().split('\n')[:-1]
want = ['vmreplay: %s: %s' % (n, why[n]) for n in sys.argv[3:]]
assert err == want, '\n'.join(['got:'] + err + ['want:'] + want)
EOF
	check "$_tag-files" python3 - "$T/$_dir" "$T/why" "$@" <<'EOF'
import json, os, sys
d, failed = sys.argv[1], sys.argv[3:]
why = dict(l.rstrip('\n').split('\t') for l in open(sys.argv[2]))
names = sorted(os.listdir(d))
want = sorted([n + '.json' for n in failed + ['host', 'k-guest']] +
              [n + '.txt' for n in failed + ['host', 'k-guest'] if n not in ('k-missing', 't.zst')])
assert names == want, names
h = json.load(open(d + '/host.json'))
assert len(h['runs']) == 2 and h['matrix']['name'] == 'host' and h['matrix']['column'] == 1, h['matrix']
g = json.load(open(d + '/k-guest.json'))
assert g['runs'][0]['minor_faults'] == 7 and g['matrix']['column'] == 0, g
for i, n in enumerate(failed):
    e = json.load(open(d + '/' + n + '.json'))
    assert e['error'] == why[n] and 'runs' not in e, (n, e)
    assert e['matrix']['column'] == i + 2 and e['matrix']['columns'] == len(failed) + 2, e['matrix']
EOF
}
# Refused before qemu runs, a kernel that does not boot, one that
# panics, a guest out of memory, one past --vm-timeout; then qemu's own
# error, garbage on the results port, the guest's replay refusing the
# trace.
fake_matrix matrix-fake mx k-missing t.zst k-panic k-silent k-oom k-hang
fake_matrix matrix-fake2 mx2 k-qemufail k-garbage k-badtrace
# The table: every column in the order given, the failed ones saying why.
check matrix-fake-table python3 - "$T/matrix-fake.out" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
head = [l for l in lines if l.startswith('kernel ')][0].split()
# (named by the release a guest said, or by the image: k-oom's guest said one)
assert head[1] == '9.9.9-fake' and head[3:] == ['k-missing', 't.zst', 'k-panic', 'k-silent',
                                               '9.9.9-fake', 'k-hang'], head
assert 'this machine' in [l for l in lines if l.startswith('ran on')][0]
status = [l for l in lines if l.startswith('status')][0]
assert len(re.findall(r'  failed: ', status)) == 6 and status.split()[1:3] == ['ok', 'ok'], status
t = '\n'.join(lines)
assert '\nminor_faults ' in t and '\ncounts ' in t and '\ntimes (~: emulated) ' in t, t
EOF
# The files give the same table again, each column's error in its JSON,
# and --fail-on counts a column without results.
FILES="k-guest.json host.json k-missing.json t.zst.json k-panic.json k-silent.json k-oom.json
	k-hang.json"
# shellcheck disable=SC2086
(cd "$T/mx" && check_exit matrix-fake-diff 0 "$VMTRACE" diff $FILES)
if sed -n '/^kernel /,$p' "$T/matrix-fake.out" | cmp -s - "$T/out"; then ok matrix-fake-diff-same-table
else not_ok matrix-fake-diff-same-table "vmtrace diff's table is not vmreplay's"
	sed -n '/^kernel /,$p' "$T/matrix-fake.out" | diff - "$T/out" | head -20 | sed 's/^/    /'; fi
# shellcheck disable=SC2086
(cd "$T/mx" && check_exit matrix-fake-diff-json 0 "$VMTRACE" diff --json $FILES)
check matrix-fake-diff-json-errors python3 - "$T/out" "$T/why" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
why = [l.rstrip('\n').split('\t')[1] for l in open(sys.argv[2])][:6]
assert [c.get('error') for c in d['columns']] == [None, None] + why, d['columns']
m = [r for r in d['metrics'] if r['name'] == 'minor_faults'][0]
assert m['cells'][0]['median'] == 7 and m['cells'][1]['median'] > 0, m['cells'][:2]
assert m['cells'][2:] == [None] * 6, m['cells']
EOF
(cd "$T/mx" && check_exit matrix-fake-fail-on 1 "$VMTRACE" diff --fail-on='minor_faults>+1000%' \
	k-guest.json host.json k-panic.json)
grep -q "^FAIL k-panic (column 3): no results: the guest kernel panicked" "$T/out" &&
	ok matrix-fake-fail-on-failed-column ||
	{ not_ok matrix-fake-fail-on-failed-column "no FAIL line"; show "$T/out"; }

# ---- two real kernels, a missing one and this machine: one table ---------------------
# A short trace, two runs each (too few to tell significance; each kernel
# boots once): 20 to 50 s under TCG, as loaded as the machine is.  The
# 6.1 guest's kernel backs anonymous memory with THP by default
# ("always"); set to the recording's mode, the counts agree with this
# machine's.  An image that is not there is a column saying so, between
# the others.
if [ "${SAN:-}" = 1 ]; then
	# (the guests' vmreplay is never sanitized: the plain pass boots them)
	skip kernels-real "the sanitized pass leaves the real kernels to the plain one"; exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
	skip kernels-real "the guests run an x86-64 vmreplay; this is $(uname -m)"; exit 0
fi
if ! command -v qemu-system-x86_64 > /dev/null 2>&1; then
	skip kernels-real "qemu-system-x86_64 is not installed (as root: apt-get install qemu-system-x86)"
	exit 0
fi
for k in "$KERNEL" "$KERNEL2"; do
	if [ ! -r "$k" ]; then
		skip kernels-real "no kernel image at $k (as root: sh mk/kernel.sh, or set VMREC_KERNEL and VMREC_KERNEL2)"
		exit 0
	fi
done
rec small --touch=resident -- "$W/seed000" --mode old --threads 2 --iterations 300
[ "$rc" = 0 ] || { not_ok kernels-record "vmrec exited $rc"; show "$T/small.err"; exit 0; }
_start=$(date +%s)
(cd "$T" && check_exit vm-matrix 1 "$VMREPLAY" --kernel="$KERNEL" --kernel="$T/vmlinuz-none" \
	--kernel="$KERNEL2" --host --vm-accel=tcg --vm-cpus=2 --repeat=2 --no-progress --json=real/ \
	small.zst)
echo "# vm-matrix took $(($(date +%s) - _start)) s"
cp "$T/out" "$T/real.out"
if grep -qx "vmreplay: vmlinuz-none: --kernel: '$T/vmlinuz-none': No such file or directory" "$T/err"
then ok vm-matrix-missing-said; else not_ok vm-matrix-missing-said "not on stderr"; show "$T/err"; fi
check vm-matrix-table python3 - "$T/real.out" "$T" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
lines = t.split('\n')
row = lambda k: [l for l in lines if l.startswith(k + ' ')][0]
head = row('kernel').split()
assert head[1].startswith('6.1.') and head[2] == 'vmlinuz-none' and head[3].startswith('6.12.') \
    and len(head) == 5, head
assert re.match(r'ran on +qemu tcg \(emulated\) +qemu tcg \(emulated\) +qemu tcg \(emulated\)'
                r' +this machine$', row('ran on')), row('ran on')
assert re.match(r'runs +2 +- +2 \(too few runs\) +2 \(too few runs\)$', row('runs')), \
    row('runs') + ' | ' + row('status')
thp = row('thp').split()
assert thp[1:] == [thp[1], '-', thp[1], thp[1]], thp   # the guests as recorded
assert re.match(r'status +ok +failed: --kernel: .* +ok +ok$', row('status')), row('status')
assert "No such file or" in t
# the counts first; the same calls everywhere; the times marked emulated;
# the missing column "-"
mm = row('ops.mprotect.count').split()
assert mm[3] == '-' and mm[1] == mm[4] == mm[7] and int(mm[1]) >= 600, mm
wall = row('wall_ns')
assert wall.count('~') == 2, wall
assert t.index('\ncounts ') < t.index('\ntimes (~: emulated) ')
assert '?: too few runs to tell: with 2 and 2 runs' in t
EOF
check vm-matrix-json python3 - "$T/real" <<'EOF'
import json, os, sys
d = sys.argv[1]
names = sorted(f for f in os.listdir(d) if f.endswith('.json'))
assert len(names) == 4 and 'host.json' in names and 'vmlinuz-none.json' in names, names
h = json.load(open(d + '/host.json'))
for n in names:
    r = json.load(open(d + '/' + n))
    if n == 'vmlinuz-none.json':
        assert r['error'].endswith('No such file or directory') and 'runs' not in r, r
        assert r['matrix']['column'] == 1, r['matrix']
        continue
    assert len(r['runs']) == 2 and r['median']['divergences'] == 0, n
    if n == 'host.json':
        continue
    vm = r['vm']
    assert vm['accel'] == 'tcg' and vm['cpus'] == 2 and vm['memory_bytes'] >= 256 << 20, vm
    # the recorded THP mode was set in the guest, and the guest's replay saw it
    rec = dict(w.split('=') for w in r['recorded_mm'].split())
    got = dict(w.split('=') for w in r['mm'].split())
    assert got['thp'] == rec['thp'] and got['thp_defrag'] == rec['thp_defrag'], (got, rec)
    assert vm['mm_unset'] is None, vm['mm_unset']
    assert 0 <= vm['noise']['others_pct'] < 50 and vm['noise']['elapsed_ns'] > 0, vm['noise']
    assert r['matrix']['mm_asked'].startswith('overcommit=') and r['matrix']['columns'] == 4
    ops = lambda x: {k: v['count'] for k, v in x['median']['ops'].items()}
    assert ops(r) == ops(h), (ops(r), ops(h))
EOF
# The results files round-trip: vmtrace diff prints the same table, and
# its JSON holds the same columns and cells.
G1=$(cd "$T/real" && ls 6.1.*.json) G2=$(cd "$T/real" && ls 6.12.*.json)
(cd "$T/real" && check_exit vm-matrix-diff 0 "$VMTRACE" diff "$G1" vmlinuz-none.json "$G2" host.json)
if sed -n '/^kernel /,$p' "$T/real.out" | cmp -s - "$T/out"; then ok vm-matrix-diff-same-table
else not_ok vm-matrix-diff-same-table "vmtrace diff's table is not vmreplay's"
	sed -n '/^kernel /,$p' "$T/real.out" | diff - "$T/out" | head -20 | sed 's/^/    /'; fi
(cd "$T/real" && check_exit vm-matrix-diff-json 0 "$VMTRACE" diff --json "$G1" vmlinuz-none.json \
	"$G2" host.json)
check vm-matrix-diff-json-cells python3 - "$T/out" "$T/real" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['kind'] == 'results-table' and d['base'] == 0 and d['failed'] == [], d.keys()
assert [c['where'] for c in d['columns']] == ['tcg', 'tcg', 'tcg', 'host'], d['columns']
assert d['columns'][1]['error'].endswith('No such file or directory'), d['columns'][1]
m = {r['name']: r for r in d['metrics']}
host = json.load(open(sys.argv[2] + '/host.json'))
cells = m['ops.mprotect.count']['cells']
assert cells[1] is None and cells[3]['median'] == host['median']['ops']['mprotect']['count'], cells
assert m['wall_ns']['section'] == 'times' and m['minor_faults']['section'] == 'counts'
assert all(c['significant'] == 'too few runs' for c in m['wall_ns']['cells'][2:])
EOF
exit 0
