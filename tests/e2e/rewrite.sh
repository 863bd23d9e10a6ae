#!/bin/sh
# vmtrace rewrite: the golden traces against checked-by-eye expected dumps
# (tests/data/rewrite/), command-line errors, a damaged input, the real
# recordings of tests/data/real (counts, call sites, zero divergences), and the
# seed workloads recorded with vmrec: seed000 old style with 1 and 2
# threads loses every mmap(PROT_NONE, MAP_FIXED) and gets one
# madvise(MADV_DONTNEED) per iteration per thread (the count the workload
# itself prints); every workload's rewritten trace dumps and, when vmreplay
# is built, replays with zero divergences.
. "$(dirname "$0")/common.inc"
ALL=prot-none-free,dontneed-to-free,mlock-onfault,populate,discard-before-unmap,free-before-dontneed

# ---- golden traces ----
check_exit rewrite-golden-seed000 0 $VMTRACE rewrite $D/seed000-old.zst "$T/s0.zst"
check rewrite-golden-seed000-counts grep -qx 'prot-none-free *10' "$T/out"
check rewrite-golden-seed000-events grep -qx '42 events in, 34 out' "$T/out"
$VMTRACE dump "$T/s0.zst" > "$T/s0.dump" 2>&1
check rewrite-golden-seed000-dump diff -u $D/rewrite/seed000-old.prot-none-free.dump "$T/s0.dump"
$VMTRACE dump --json "$T/s0.zst" > "$T/s0.jsonl" 2>&1
check rewrite-golden-seed000-flags python3 - "$T/s0.jsonl" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sc = [e for e in ev if e['kind'] == 'syscall']
rw = [e for e in sc if e['flags'] & 2]
assert len(rw) == 10 and all(e['op'] == 'madvise' and e['result'] == 0 for e in rw), rw
assert all(e['flags'] == 0 for e in sc if e not in rw)
EOF
# (every-kind.all.dump was written with the first four rules)
check_exit rewrite-golden-every-kind 0 $VMTRACE rewrite --rules=prot-none-free,dontneed-to-free,mlock-onfault,populate $D/every-kind.zst "$T/ek.zst"
check rewrite-golden-every-kind-counts sh -c "grep -qx 'dontneed-to-free *1' $T/out && grep -qx 'mlock-onfault *1' $T/out && grep -qx 'populate *0' $T/out"
$VMTRACE dump "$T/ek.zst" > "$T/ek.dump" 2>&1
check rewrite-golden-every-kind-dump diff -u $D/rewrite/every-kind.all.dump "$T/ek.dump"
check rewrite-pipe sh -c "$VMTRACE rewrite -q - - < $D/seed000-old.zst | $VMTRACE dump - > $T/pipe.dump && diff -u $D/rewrite/seed000-old.prot-none-free.dump $T/pipe.dump"

# ---- errors ----
check_exit rewrite-unknown-rule 2 $VMTRACE rewrite --rules=prot-none-free,bogus $D/seed000-old.zst "$T/x.zst"
check rewrite-unknown-rule-message grep -q "^vmtrace rewrite: unknown rewrite rule 'bogus' (rules: prot-none-free," "$T/err"
check rewrite-unknown-rule-no-output test ! -e "$T/x.zst"
check_exit rewrite-twice 2 $VMTRACE rewrite --rules=populate,populate $D/seed000-old.zst "$T/x.zst"
check_exit rewrite-conflict 2 $VMTRACE rewrite --rules=dontneed-to-free,free-to-dontneed $D/seed000-old.zst "$T/x.zst"
check_exit rewrite-no-args 2 $VMTRACE rewrite
check_exit rewrite-one-arg 2 $VMTRACE rewrite $D/seed000-old.zst
check_exit rewrite-bad-option 2 $VMTRACE rewrite --bogus $D/seed000-old.zst "$T/x.zst"
check_exit rewrite-missing-input 2 $VMTRACE rewrite "$T/nonexistent.zst" "$T/x.zst"
check rewrite-missing-input-message grep -q "^vmtrace: cannot open '.*nonexistent.zst': No such file" "$T/err"
check_exit rewrite-not-a-trace 2 $VMTRACE rewrite /etc/passwd "$T/x.zst"
check rewrite-not-a-trace-no-output test ! -e "$T/x.zst"
cp $D/seed000-old.zst "$T/same.zst"
check_exit rewrite-same-file 2 $VMTRACE rewrite "$T/same.zst" "$T/same.zst"
check rewrite-same-file-untouched cmp $D/seed000-old.zst "$T/same.zst"
check_exit rewrite-list-rules 0 $VMTRACE rewrite --list-rules
check rewrite-list-rules test "$(cut -d' ' -f1 "$T/out" | tr '\n' ' ')" = "prot-none-free dontneed-to-free free-to-dontneed mlock-onfault populate discard-before-unmap free-before-dontneed "
check_exit rewrite-help 0 $VMTRACE help rewrite
check rewrite-help-rules sh -c "for r in prot-none-free dontneed-to-free free-to-dontneed mlock-onfault populate discard-before-unmap free-before-dontneed; do grep -Eq \"^  \$r( |\$)\" $T/out || exit 1; done"
# (the former names of the two rules named after their findings)
check rewrite-former-names sh -c "$VMTRACE rewrite -q --rules=unmap-only,dontneed-only $D/every-kind.zst $T/former.zst && $VMTRACE dump $T/former.zst | sed -n 2p | grep -q 'rewrite=discard-before-unmap,free-before-dontneed'"
# A damaged input: exit 2 with the reader's message, and a valid output
# holding the events before the damage.
check_exit rewrite-truncated 2 $VMTRACE rewrite $D/truncated.zst "$T/tr.zst"
check rewrite-truncated-message grep -q "^vmtrace rewrite: '.*truncated.zst': truncated at byte" "$T/err"
check_exit rewrite-truncated-output-valid 0 $VMTRACE dump "$T/tr.zst"
check rewrite-truncated-output-events test "$(grep -c '\[p' "$T/out")" -gt 10

replay_ok() { # NAME TRACE: vmreplay reports 0 divergences
	need "$1" "$VMREPLAY" || return
	"$VMREPLAY" -q "$2" > "$T/rp.out" 2>&1; rc=$?
	if [ "$rc" = 0 ] && grep -q 'divergences 0$' "$T/rp.out"; then ok "$1"
	else not_ok "$1" "exit $rc"; show "$T/rp.out"; fi
}

# ---- real recordings (tests/data/real/README.md) ----
# The counts name the call site the rule applied at; each rewritten trace
# replays with zero divergences (its rewritten calls' results checked).
check_exit rewrite-real-jvm17-g1 0 $VMTRACE rewrite $D/real/jvm17-g1.zst "$T/g1.zst"
check rewrite-real-jvm17-g1-count grep -qx 'prot-none-free *720' "$T/out"
check rewrite-real-jvm17-g1-site grep -qx ' *720 at os::pd_uncommit_memory(char\*, unsigned long, bool) (libjvm.so)' "$T/out"
check rewrite-real-jvm17-g1-note grep -q '^  note: 720 uncommits (.*) dropped a commit charge' "$T/out"
check rewrite-real-jvm17-g1-calls grep -qx 'mmap_lock held for writing  *2684  *1226' "$T/out"
replay_ok rewrite-real-jvm17-g1-replay "$T/g1.zst"
while read -r name rules count; do
	t="rewrite-real-$name-${rules%%,*}"
	check_exit "$t" 0 $VMTRACE rewrite --rules=$rules $D/real/$name.zst "$T/$name.zst"
	check "$t-count" grep -qx "${rules%%,*} *$count" "$T/out"
	replay_ok "$t-replay" "$T/$name.zst"
done <<'LIST'
jvm17-parallel prot-none-free 26
jvm17-serial prot-none-free 20
glibc-arenas-strict prot-none-free 17
glibc-arenas prot-none-free,discard-before-unmap,free-before-dontneed 0
node20-workers discard-before-unmap 783
redis-jemalloc-muzzy free-before-dontneed 291
glibc-arenas dontneed-to-free 52
redis-jemalloc-muzzy free-to-dontneed 301
qemu-memlock mlock-onfault 1
jvm17-g1 populate 710
LIST

# ---- recorded workloads ----
need rewrite-workloads "$VMREC" || exit 0
if ! "$VMREC" -q -o "$T/probe.zst" -- /bin/true > /dev/null 2> "$T/probe.err"; then
	skip rewrite-workloads "vmrec cannot record here: $(head -1 "$T/probe.err")"
	exit 0
fi

# seed000 old style: every free becomes a madvise, every enable but the
# first of each thread goes.
K=300
for n in 1 2; do
	name=seed000-old-$n
	if ! "$VMREC" -q -o "$T/$name.zst" -- $W/seed000 --mode old --threads $n --iterations $K > "$T/$name.log" 2>&1; then
		not_ok "rewrite-$name" "recording failed"; show "$T/$name.log"; continue
	fi
	check_exit rewrite-$name 0 $VMTRACE rewrite "$T/$name.zst" "$T/$name.rw.zst"
	check rewrite-$name-count grep -qx "prot-none-free *$((n * K))" "$T/out"
	check_exit rewrite-$name-dump 0 $VMTRACE dump "$T/$name.rw.zst"
	cp "$T/out" "$T/$name.rw.dump"
	$VMTRACE dump "$T/$name.zst" > "$T/$name.dump"
	check rewrite-$name-recorded python3 - "$T/$name.dump" "$T/$name.rw.dump" "$T/$name.log" $n $K <<'EOF'
import re, sys
orig, new, log, n, k = open(sys.argv[1]).read(), open(sys.argv[2]).read(), open(sys.argv[3]).read(), int(sys.argv[4]), int(sys.argv[5])
# What the workload says it did: per thread K mprotects and K frees.
summ = re.search(r'ops=(\S+)', log.splitlines()[-1]).group(1)
ops = dict((o.split(':')[0], int(o.split(':')[1])) for o in summ.split(','))
assert ops['mprotect'] == n * k and ops['mmap'] >= n * k, ops
def per_thread(text, pat):
    c = {}
    for m in re.finditer(r'\[p0 t(\d+)\] ' + pat, text):
        c[m.group(1)] = c.get(m.group(1), 0) + 1
    return c
free = r'mmap\(0x[0-9a-f]+, \d+, PROT_NONE, MAP_PRIVATE\|MAP_FIXED\|MAP_ANONYMOUS, -1, 0\)'
enable = r'mprotect\(0x[0-9a-f]+, \d+, PROT_READ\|PROT_WRITE\) = 0'
dontneed = r'madvise\(0x[0-9a-f]+, \d+, MADV_DONTNEED\) = 0'
fo = per_thread(orig, free)
assert len(fo) == n and all(v == k for v in fo.values()), fo
assert not re.search(free, new), 'a free is left'
assert per_thread(new, dontneed) == fo, (per_thread(new, dontneed), fo)
workers = fo.keys()
en = per_thread(new, enable)
assert all(en.get(t) == 1 for t in workers), en
# Everything else is unchanged: the same events minus frees and enables.
strip = lambda s: [l.split(']', 1)[1] for l in s.splitlines() if l.startswith(' ')
       and not re.search(free + '|' + enable + '|' + dontneed, l)]
assert strip(orig) == strip(new)
EOF
	replay_ok rewrite-$name-replay "$T/$name.rw.zst"
done

# Every workload, with the rules that fit it: the counts the workload's
# own summary predicts (or at least 1), a dump, zero divergences.
# NAME  RULES  MIN-COUNT-OF-LAST-RULE  COMMAND...
while read -r name rules count cmd; do
	[ -n "$name" ] || continue
	# shellcheck disable=SC2086
	"$VMREC" -q -o "$T/$name.zst" -- $W/$cmd > "$T/$name.log" 2>&1
	rc=$?
	if [ "$rc" = 77 ]; then
		skip "rewrite-$name" "$(tail -1 "$T/$name.log")"
		continue
	fi
	if [ "$rc" != 0 ] && [ "${cmd%% *}" != forkexec ]; then
		not_ok "rewrite-$name" "recording exited $rc"; show "$T/$name.log"; continue
	fi
	check_exit rewrite-$name 0 $VMTRACE rewrite --rules=$rules "$T/$name.zst" "$T/$name.rw.zst"
	last=${rules##*,}
	got=$(sed -n "s/^$last  *//p" "$T/out")
	if [ "$count" = any ] || { [ "${count#=}" != "$count" ] && [ "$got" = "${count#=}" ]; } ||
	   { [ "${count#=}" = "$count" ] && [ "$got" -ge "$count" ]; }; then
		ok "rewrite-$name-count"
	else
		not_ok "rewrite-$name-count" "$last applied $got times, want $count"
	fi
	check_exit rewrite-$name-dump 0 $VMTRACE dump "$T/$name.rw.zst"
	replay_ok rewrite-$name-replay "$T/$name.rw.zst"
done <<EOF
seed000-new       dontneed-to-free       =200 seed000 --mode new --threads 2 --iterations 100
seed000-new-pop   populate               =2   seed000 --mode new --threads 2 --iterations 100
seed001-free      free-to-dontneed       =6   seed001 --procs 2 --size 2 --loops 3 --advice free
seed001-dontneed  dontneed-to-free       =6   seed001 --procs 2 --size 2 --loops 3 --advice dontneed
seed002           $ALL                   any  seed002 --count 100 --kind anon
seed003-locked    mlock-onfault          =1   seed003 --mode locked --size 4 --accesses 50
seed003-mlock     mlock-onfault          =50  seed003 --mode mlock --size 4 --accesses 50
seed003-onfault   mlock-onfault          =0   seed003 --mode onfault --size 4 --accesses 50
seed004           populate               =2   seed004 --pages 64 --rounds 2
seed004-write     populate               =2   seed004 --pages 64 --rounds 2 --write-only
everyop           $ALL                   any  everyop
forkexec          $ALL                   any  forkexec
EOF
exit 0
