#!/bin/sh
# The inproc backend: what it promises beyond the checks of the record_*.sh
# scripts, which mk/check.sh runs with it too (the kernel's own count of
# the workloads and real programs among them).
#  - The tasks a program makes every way it can (raw clone, clone3,
#    vfork, posix_spawn, fork, an exec with an empty environment) are
#    followed, their calls on the right thread and their exit statuses;
#    a program's own SIGSYS handler and seccomp filter work as without
#    vmrec; signals that come while calls are made lose no call; a
#    program that blocks every signal keeps working.
#  - The corpus of real programs (node with workers, a JVM, python3, gcc,
#    sqlite, a process pool, a sh pipeline, a make -j2 build, Go): each
#    trace equals the kernel's own count of the same run (root: tracefs).
#  - The same calls, thread by thread, as the stream backend (root).
#  - A normal user records a multi-threaded program with it by default,
#    and replays it without a divergence.  As root, a program that
#    changes its user is followed across the change.
#  - A static program is recorded (its calls trap); auto takes ptrace for
#    it.  A set-user-ID program is refused.
#  - Calls that raced for mmap_lock are in the kernel's order; a burst of
#    2 x 1,000,000 calls loses nothing; a replay matches the program's
#    faults.
. "$(dirname "$0")/common.inc"

need inproc "$VMREC" "$W/tasks" "$W/seed000" || exit 0
if ! "$VMREC" -q --backend=inproc --force -o "$T/probe.zst" -- true 2> "$T/probe.err"; then
	skip inproc "$(sed 's/^vmrec: //' "$T/probe.err" | tail -1)"
	exit 0
fi
check inproc-header sh -c "$VMTRACE dump '$T/probe.zst' | head -2 | grep -q 'backend=inproc touch='"
KCOUNT="python3 $E2E/kcount.py $VMTRACE"
ROOT=0
[ "$(id -u)" = 0 ] && ROOT=1

# irec NAME CMD...: CMD under the inproc backend into $T/NAME.zst
irec() {
	_in=$1
	shift
	rec "$_in" --backend=inproc -- "$@"
}

# --- tasks ---
for m in clone vfork fork exec masks; do
	irec tasks-$m "$W/tasks" --mode $m --log
	eval "rc_$m=$rc"
	check tasks-$m-match sh -c "{ [ $rc = 0 ] || [ $m = exec ]; } && $RECORD_CHECK match '$T/tasks-$m.zst' '$T/tasks-$m.log'"
done
# exit statuses (wait statuses): the vfork and spawn children 7, the
# forked 3, the one killed 9
check tasks-vfork-statuses sh -c "$VMTRACE dump --json '$T/tasks-vfork.zst' | python3 -c '
import json, sys
st = sorted(e[\"status\"] for e in map(json.loads, sys.stdin) if e[\"kind\"] == \"process_exit\")
assert st == [0, 1792, 1792], st
'"
check tasks-fork-statuses sh -c "$VMTRACE dump --json '$T/tasks-fork.zst' | python3 -c '
import json, sys
st = sorted(e[\"status\"] for e in map(json.loads, sys.stdin) if e[\"kind\"] == \"process_exit\")
assert st == [0, 9, 768], st
'"
# (its exec'd self exits 7; its exec is the second of the trace)
check tasks-exec-empty-env sh -c "[ $rc_exec = 7 ] && $VMTRACE dump '$T/tasks-exec.zst' | grep -c '+++ exec ' | grep -qx 2"
check tasks-masks-ran sh -c "grep -q 'masks thread_calls=2 handler=1' '$T/tasks-masks.log'"

# a program's own SIGSYS handler and filter: it sees its own traps (5) and
# its raise (1), and its filter's EPERM is the recorded mincore's result
irec tasks-sigsys "$W/tasks" --mode sigsys --log
check tasks-sigsys-handler grep -q 'sigsys traps=5 nr=110 result=4242 other=1' "$T/tasks-sigsys.log"
check tasks-sigsys-calls $RECORD_CHECK match "$T/tasks-sigsys.zst" "$T/tasks-sigsys.log"

# signals while calls are made: every call of the loop and of the handler
irec tasks-signals "$W/tasks" --mode signals
check tasks-signals-calls sh -c "$VMTRACE dump --json '$T/tasks-signals.zst' | python3 -c '
import collections, json, re, sys
c = collections.Counter((e[\"op\"], e[\"args\"][1]) for e in map(json.loads, sys.stdin)
                        if e[\"kind\"] == \"syscall\" and e[\"op\"] in (\"mmap\", \"munmap\"))
m = re.search(r\"raw=(\d+) glibc=(\d+) handler=(\d+)\", open(sys.argv[1]).read())
loop, handler = int(m.group(1)) + int(m.group(2)), int(m.group(3))
assert handler > 0, \"the timer never fired\"
assert c[(\"munmap\", 12288)] == loop and c[(\"mmap\", 20480)] == handler == c[(\"munmap\", 20480)], (c, loop, handler)
' '$T/tasks-signals.log'"

# the kernel's count of each, as root (tracefs); the exec under a shell
# (its exit status 7 would end kcount early).  Not sigsys: a call the
# program's own filter refuses (its mincore) is in the trace with its
# error, and the kernel counts no call it refuses (vmrec(1), NOTES).
if [ $ROOT = 1 ]; then
	for m in clone vfork fork exec signals masks; do
		$KCOUNT "$T/k-$m.zst" -- "$VMREC" -q --backend=inproc --force -o "$T/k-$m.zst" -- \
			sh -c "'$W/tasks' --mode $m; exit 0" > "$T/k-$m.out" 2>&1
		_rc=$?
		if [ $_rc = 77 ]; then
			skip tasks-$m-kernel-count "$(grep '^skip: ' "$T/k-$m.out" | cut -c7-)"
		elif [ $_rc = 0 ]; then
			ok tasks-$m-kernel-count
		else
			not_ok tasks-$m-kernel-count "$(tail -1 "$T/k-$m.out")"
			show "$T/k-$m.out"
		fi
	done
else
	skip tasks-kernel-count "tracefs needs root"
fi

# --- real programs: the corpus (tests/corpus: node with worker threads,
# a JVM, python3, gcc, sqlite, a multiprocessing pool, a sh pipeline)
# recorded with the inproc backend, each trace equal to the kernel's own
# count of the same run, thread by thread ---
if [ "${SAN:-}" = 1 ]; then
	# (the runtime and vmrec's side of it are the same code on every
	# program: the sanitized pass leaves the corpus to the plain one)
	skip corpus-kernel-count "the sanitized pass leaves the corpus to the plain one"
elif [ $ROOT = 1 ]; then
	. tests/corpus/programs.sh
	if corpus_setup "$T" > "$T/corpus-setup.out" 2>&1; then
		for p in $(corpus_names); do
			_miss=$(corpus_missing "$p")
			if [ -n "$_miss" ]; then
				skip "corpus-$p-kernel-count" "not installed:$_miss (mk/deps.sh installs it)"
				continue
			fi
			# shellcheck disable=SC2046
			$KCOUNT "$T/c-$p.zst" -- "$VMREC" -q --backend=inproc --force -o "$T/c-$p.zst" -- \
				$(corpus_cmd "$p" "$T") > "$T/c-$p.out" 2>&1
			_rc=$?
			if [ $_rc = 77 ]; then
				skip "corpus-$p-kernel-count" "$(grep '^skip: ' "$T/c-$p.out" | cut -c7-)"
			elif [ $_rc = 0 ]; then
				ok "corpus-$p-kernel-count"
			else
				not_ok "corpus-$p-kernel-count" "$(tail -1 "$T/c-$p.out")"
				show "$T/c-$p.out"
			fi
		done
	else
		not_ok corpus-setup "$(tail -1 "$T/corpus-setup.out")"
	fi
else
	skip corpus-kernel-count "tracefs needs root"
fi

# --- the same calls as the stream backend ---
if "$VMREC" -q --backend=stream --force -o "$T/sprobe.zst" -- true 2> /dev/null; then
	same() { # NAME WORKLOAD ARGS...
		_n=$1
		shift
		rec "$_n-stream" --backend=stream -- "$@"
		_r1=$rc
		irec "$_n-inproc" "$@"
		if [ $_r1 -ne 0 ] || [ $rc -ne 0 ]; then
			not_ok "$_n-same-calls" "exit $_r1 (stream), $rc (inproc)"
		else
			check "$_n-same-calls" $RECORD_CHECK same-calls "$T/$_n-stream.zst" "$T/$_n-inproc.zst"
		fi
	}
	same seed000-old "$W/seed000" --threads 2 --iterations 300 --mode old
	same seed000-new "$W/seed000" --threads 2 --iterations 300 --mode new --pages 3
	same seed001 "$W/seed001"
	same seed002 "$W/seed002"
	same seed003 "$W/seed003" --size 4 --accesses 50 --mode onfault
	same seed004 "$W/seed004" --pages 64 --rounds 2
	same everyop "$W/everyop"
	same forkexec "$W/forkexec"
else
	skip inproc-same-calls "the stream backend does not run here"
fi

# --- a normal user ---
if [ $ROOT = 1 ] && command -v setpriv > /dev/null 2>&1; then
	AS_USER="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	chmod 777 "$T"
elif [ $ROOT = 0 ]; then
	AS_USER=""
else
	AS_USER=none
fi
if [ "$AS_USER" != none ]; then
	# What the user runs, copied where the user can reach it: the build
	# may sit under a directory only root may enter (a fresh clone's
	# 0700 temporary directory), where vmrec could not read its runtime.
	U=$T/user-bin
	mkdir -p "$U" && cp "$VMREC" "$(dirname "$VMREC")/vmrec-inproc.rt" "$VMREPLAY" "$W/seed000" "$U/" &&
		chmod -R a+rX "$U"
	# (no --backend: auto chooses inproc for a user without the stream
	# backend's rights; nor VMREC_BACKEND, which a check pass may set)
	$AS_USER env -u VMREC_BACKEND "$U/vmrec" -q --force -o "$T/user.zst" -- "$U/seed000" --threads 4 --iterations 3000 --mode old \
		> "$T/user.log" 2> "$T/user.err"
	check user-records-inproc sh -c "[ $? = 0 ] && $VMTRACE dump '$T/user.zst' | head -2 | grep -q backend=inproc"
	check user-threads sh -c "$VMTRACE dump --json '$T/user.zst' | python3 -c '
import collections, json, sys
n = collections.Counter(e[\"thread\"] for e in map(json.loads, sys.stdin)
                        if e[\"kind\"] == \"syscall\" and e[\"op\"] == \"mprotect\")
assert sorted(n.values())[-4:] == [3000] * 4 and len(n) <= 5, n
'"
	$AS_USER "$U/vmreplay" -q --json="$T/user.json" "$T/user.zst" > "$T/user.replay" 2>&1
	check user-replay-no-divergence python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['median']
assert r['divergences'] == 0, r['divergences']
" "$T/user.json"
	# a static program: auto takes ptrace, and says why
	if [ -x /sbin/ldconfig ] && file -L /sbin/ldconfig 2> /dev/null | grep -q static; then
		$AS_USER env -u VMREC_BACKEND "$U/vmrec" -q --force -o "$T/ustatic.zst" -- /sbin/ldconfig -p > /dev/null 2> "$T/ustatic.err"
		check user-static-ptrace sh -c "$VMTRACE dump '$T/ustatic.zst' | head -2 | grep -q backend=ptrace &&
			grep -q 'statically linked' '$T/ustatic.err'"
	else
		skip user-static-ptrace "no static program here (/sbin/ldconfig)"
	fi
	# As root, a program that changes its user (su, setpriv, a server
	# dropping root) is followed across the change: each image's runtime
	# finds the shared file in a descriptor its process kept, where vmrec's
	# may no longer be opened.
	if [ $ROOT = 1 ]; then
		# shellcheck disable=SC2086
		"$VMREC" -q --backend=inproc --force -o "$T/setuid.zst" -- $AS_USER sh -c \
			"'$U/seed000' --threads 2 --iterations 300 --mode old; '$U/seed000' --threads 1 --iterations 200 --mode new" \
			> "$T/setuid.log" 2> "$T/setuid.err"
		check user-change-followed sh -c "[ $? = 0 ] && $VMTRACE dump --json '$T/setuid.zst' | python3 -c '
import collections, json, sys
ev = list(map(json.loads, sys.stdin))
ex = [e[\"path\"] for e in ev if e[\"kind\"] == \"exec\"]
n = collections.Counter(e[\"op\"] for e in ev if e[\"kind\"] == \"syscall\")
assert sum(p.endswith(\"/seed000\") for p in ex) == 2, ex
assert n[\"mprotect\"] >= 600 and n[\"madvise\"] >= 200, n
'"
		[ -s "$T/setuid.err" ] && show "$T/setuid.err"
	fi
	# a set-user-ID program is refused
	if [ $ROOT = 1 ]; then
		cp /bin/true "$T/suid-true" && chmod 4755 "$T/suid-true"
		check_exit user-setuid-refused 1 $AS_USER "$U/vmrec" -q --backend=inproc --force -o "$T/usuid.zst" -- "$T/suid-true"
		check user-setuid-why grep -q "set-user-ID: it would run without its privileges" "$T/err"
	fi
else
	skip inproc-user "setpriv is not installed"
fi

# --- static programs: recorded, their calls trapped ---
if [ -x /sbin/ldconfig ] && file -L /sbin/ldconfig 2> /dev/null | grep -q static; then
	irec static /sbin/ldconfig -p
	check static-recorded sh -c "[ $rc = 0 ] && grep -q 'statically linked' '$T/static.err' &&
		$VMTRACE stat --json '$T/static.zst' | python3 -c '
import json, sys
assert json.load(sys.stdin)[\"ops\"][\"mmap\"][\"count\"] > 0'"
	irec static-exec sh -c '/sbin/ldconfig -p > /dev/null; echo done'
	check static-exec-recorded sh -c "[ $rc = 0 ] && grep -qx done '$T/static-exec.log' &&
		$VMTRACE dump '$T/static-exec.zst' | grep -q 'exec \"/usr/sbin/ldconfig\"\\|exec \"/sbin/ldconfig\"'"
	if [ $ROOT = 1 ]; then
		$KCOUNT "$T/k-static.zst" -- "$VMREC" -q --backend=inproc --force -o "$T/k-static.zst" -- \
			sh -c '/sbin/ldconfig -p > /dev/null' > "$T/k-static.out" 2>&1
		check static-kernel-count sh -c "tail -1 '$T/k-static.out' | grep -q ': equal$'"
	fi
else
	skip inproc-static "no static program here (/sbin/ldconfig)"
fi

# --- calls that raced for mmap_lock: a page handed out by one thread's
# mmap after another thread's munmap is never seen handed out twice ---
irec lockorder "$W/lockorder" --threads 2 --iterations "$(san_scale 100000)"
check lockorder-order $RECORD_CHECK order "$T/lockorder.zst"

# --- a burst: 2 threads x 1,000,000 madvise as fast as they go ---
burst=$(san_scale 1000000)
irec burst "$W/seed000" --mode new --threads 2 --iterations "$burst" --no-touch
check burst-nothing-lost sh -c "$VMTRACE stat --json '$T/burst.zst' | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"lost\"][\"events\"] == 0, d[\"lost\"]
assert d[\"ops\"][\"madvise\"][\"count\"] == 2 * $burst, d[\"ops\"][\"madvise\"]
'"

# --- a replay: no divergence, the program's faults (within 2%) ---
irec replay "$W/seed000" --mode new --threads 1 --iterations 20000
check replay-faults sh -c "$VMREPLAY -q --json='$T/replay.json' '$T/replay.zst' > /dev/null && python3 -c '
import json, re, sys
r = json.load(open(sys.argv[1]))[\"median\"]
native = int(re.search(r\"minflt=(\\d+)\", open(sys.argv[2]).read()).group(1))
assert r[\"divergences\"] == 0, r[\"divergences\"]
assert abs(r[\"minor_faults\"] - native) <= 0.02 * native, (r[\"minor_faults\"], native)
' '$T/replay.json' '$T/replay.log'"

# --- the runtime's own faults: in each process's counters as the
# recorder's (own_flt, format 1.4), no part of the program's figures.  A
# shell that runs /bin/true eight times: each process's runtime faults on
# its own memory (its image, its state, copied at fork), and its replay,
# which has no runtime, is judged against the rest.  (Before: each
# /bin/true replayed 53 of its 65 recorded faults, 0.81.) ---
irec own sh -c 'for i in 1 2 3 4 5 6 7 8; do /bin/true; done'
check own-faults-counted sh -c "$VMTRACE dump --json '$T/own.zst' | python3 -c '
import json, sys
procs = [e for e in map(json.loads, sys.stdin) if e[\"kind\"] == \"counters\" and e[\"scope\"] == \"process\"]
assert len(procs) == 9, len(procs)
for e in procs:
    assert 0 < e.get(\"own_flt\", 0) < e[\"minflt\"], e
print(\"own faults of the 9 processes:\", [e[\"own_flt\"] for e in procs])
'"
check own-faults-replay sh -c "$VMREPLAY -q --json='$T/own.json' '$T/own.zst' > /dev/null && $VMTRACE dump --json '$T/own.zst' | python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))[\"fidelity\"]
pid, cnt = {}, {}
for e in map(json.loads, sys.stdin):
    if e[\"kind\"] == \"process_start\":
        pid[e[\"proc\"]] = e[\"os_pid\"]
    elif e[\"kind\"] == \"counters\" and e[\"scope\"] == \"process\":
        cnt[pid[e[\"proc\"]]] = e
for p in d[\"processes\"][1:]:
    m, c = p[\"minor_faults\"], cnt[p[\"pid\"]]
    print(\"pid %d: replayed %d, recorded %d (%d less %d own)\" % (p[\"pid\"], m[\"replay\"], m[\"recorded\"], c[\"minflt\"], c[\"own_flt\"]))
    assert m[\"recorded\"] == c[\"minflt\"] - c[\"own_flt\"], (m, c)
    assert m[\"replay\"] >= 0.9 * m[\"recorded\"], m
' '$T/own.json'"
exit 0
