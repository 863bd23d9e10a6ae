#!/bin/sh
# Recordings against the kernel's own count, and what the stream backend
# promises beyond ptrace.
#  - Every thread's calls in the trace are the calls the kernel counted
#    for that tid in the same run (a tracefs instance of the test's own):
#    workloads and real programs, with the backend of this pass.
#  - The stream backend: the deterministic workloads make the same calls,
#    thread by thread, as under ptrace; calls that raced for mmap_lock are
#    in the order the kernel ran them; a burst of 2 x 1,000,000 calls
#    loses nothing; a replay of its trace matches the program's faults;
#    a SIGKILL to vmrec leaves a readable trace, a running program and no
#    BPF program behind.
. "$(dirname "$0")/common.inc"

KCOUNT="python3 $E2E/kcount.py $VMTRACE"

# kcount NAME CMD...: CMD under vmrec, against the kernel's count
kcount() {
	_n=$1
	shift
	$KCOUNT "$T/$_n.zst" -- "$VMREC" -q --force -o "$T/$_n.zst" -- "$@" > "$T/$_n.kcount" 2>&1
	_rc=$?
	if [ $_rc -eq 77 ]; then
		skip "$_n-kernel-count" "$(grep '^skip: ' "$T/$_n.kcount" | cut -c7-)"
	elif [ $_rc -eq 0 ]; then
		ok "$_n-kernel-count"
	else
		not_ok "$_n-kernel-count" "$(tail -1 "$T/$_n.kcount")"
		show "$T/$_n.kcount"
	fi
}

kcount seed000-old "$W/seed000" --threads 2 --iterations 2000 --mode old
kcount seed000-new "$W/seed000" --threads 2 --iterations 2000 --mode new
kcount forkexec "$W/forkexec"
kcount everyop "$W/everyop"
kcount python3 python3 -c 'x = [bytearray(1 << 16) for i in range(2000)]; y = [str(i) * 10 for i in range(100000)]'
kcount gcc gcc -O2 -c -Iformat format/render.c -o "$T/render.o"
kcount pipeline sh -c 'seq 1 200000 | sort -rn | head -3 > /dev/null'
if command -v node > /dev/null 2>&1; then
	cat > "$T/workers.js" <<'EOF'
const { Worker, isMainThread } = require('worker_threads');
if (isMainThread) {
  for (let i = 0; i < 2; i++) new Worker(__filename);
} else {
  let keep = [];
  for (let r = 0; r < 20; r++) { for (let i = 0; i < 2000; i++) keep.push(new Array(64).fill(r)); keep = []; }
}
EOF
	kcount node node "$T/workers.js"
else
	skip node-kernel-count "node is not installed"
fi
if command -v javac > /dev/null 2>&1 && command -v java > /dev/null 2>&1; then
	cat > "$T/Alloc.java" <<'EOF'
public class Alloc {
	public static void main(String[] a) {
		java.util.List<byte[]> l = new java.util.ArrayList<>();
		for (int r = 0; r < 5; r++) {
			for (int i = 0; i < 2000; i++)
				l.add(new byte[16384]);
			l.clear();
			System.gc();
		}
	}
}
EOF
	if javac -d "$T" "$T/Alloc.java" 2> "$T/javac.err"; then
		kcount jvm java -Xms16m -Xmx256m -cp "$T" Alloc
	else
		not_ok jvm-kernel-count "javac failed: $(head -1 "$T/javac.err")"
	fi
else
	skip jvm-kernel-count "java and javac are not installed"
fi

# The rest is the stream backend's: once, in the pass with vmrec's default.
[ -z "${VMREC_BACKEND:-}" ] || exit 0
if ! "$VMREC" -q --backend=stream --force -o "$T/probe.zst" -- true 2> "$T/probe.err"; then
	skip stream "$(sed 's/^vmrec: //' "$T/probe.err" | tail -1)"
	exit 0
fi
check stream-header sh -c "$VMTRACE dump '$T/probe.zst' | head -2 | grep -q 'backend=stream touch=faults'"

# The same calls, thread by thread, under both backends.
same() { # NAME WORKLOAD ARGS...
	_n=$1
	shift
	rec "$_n-stream" --backend=stream -- "$@"
	_r1=$rc
	rec "$_n-ptrace" --backend=ptrace -- "$@"
	if [ $_r1 -ne 0 ] || [ $rc -ne 0 ]; then
		not_ok "$_n-same-calls" "exit $_r1 (stream), $rc (ptrace)"
	else
		check "$_n-same-calls" $RECORD_CHECK same-calls "$T/$_n-stream.zst" "$T/$_n-ptrace.zst"
	fi
}
same seed000-old "$W/seed000" --threads 2 --iterations 300 --mode old
same seed000-new "$W/seed000" --threads 2 --iterations 300 --mode new --pages 3
same seed003 "$W/seed003" --size 4 --accesses 50 --mode onfault
same seed004 "$W/seed004" --pages 64 --rounds 2
same everyop "$W/everyop"

# The same call stacks, call by call, under both backends: the stream
# backend unwinds a copy of the stack made at the call, after the fact.
# A stack deeper than the copy (a shell's parser, glibc's regex) is cut
# where the copy ends, and vmrec says how many were: those may be
# prefixes of the whole stacks, all others the same.
same_stacks() { # NAME CMD...
	_n=$1
	shift
	$NOASLR "$VMREC" --force -o "$T/$_n-sstream.zst" --backend=stream --stacks -- "$@" \
		> "$T/$_n-sstream.log" 2> "$T/$_n-sstream.err"
	_r1=$?
	_cut=$(sed -n 's/^vmrec: \([0-9]*\) of the stacks end where the stack copy did.*/\1/p' \
		"$T/$_n-sstream.err")
	rec "$_n-sptrace" --backend=ptrace --stacks -- "$@"
	if [ $_r1 -ne 0 ] || [ $rc -ne 0 ]; then
		not_ok "$_n-same-stacks" "exit $_r1 (stream), $rc (ptrace)"
	else
		check "$_n-same-stacks" $RECORD_CHECK same-stacks "$T/$_n-sstream.zst" \
			"$T/$_n-sptrace.zst" "${_cut:-0}"
	fi
}
same_stacks seed000-old "$W/seed000" --threads 2 --iterations 300 --mode old
same_stacks everyop "$W/everyop"
same_stacks forkexec "$W/forkexec"
# Threads of raw clone and clone3 on stacks of their own, whose copies
# end at the top the kernel took at their clone (their first sp), and a
# thread made with every signal blocked, a handler with a full mask.
same_stacks tasks-clone "$W/tasks" --mode clone
same_stacks tasks-masks "$W/tasks" --mode masks
# (python3's allocations depend on its hash seed)
export PYTHONHASHSEED=0
same_stacks python3 python3 -c 'import json, decimal'
unset PYTHONHASHSEED

# A file on a mount under another mount (tmpfs at /dev/shm, under /dev):
# the kernel-side walk of its path crosses both.
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d /)" ]; then
	shm=/dev/shm/vmrec-e2e-$$
	echo x > "$shm"
	rec shm-file --backend=stream -- python3 -c "import mmap, os
fd = os.open('$shm', os.O_RDONLY)
mmap.mmap(fd, 0, prot=mmap.PROT_READ).close()
os.close(fd)"
	check shm-file-path sh -c "$VMTRACE dump '$T/shm-file.zst' | grep -F 'map_file(\"$shm\"'"
	rm -f "$shm"
else
	skip shm-file-path "/dev/shm is not a mount of its own here"
fi

# Two threads mapping a file at the same instant, their tids alike modulo
# 64: each mapping has its own file.  (10,000 file records, about 11 MB,
# fit in the ring even if vmrec got no CPU meanwhile: none is lost.)
rec mapfiles --backend=stream -- "$W/mapfiles" --threads 2 --iterations "$(san_scale 5000)"
check mapfiles-each-its-file $RECORD_CHECK files "$T/mapfiles.zst"

# Calls that raced for mmap_lock: a page handed out by one thread's mmap
# after another thread's munmap is never seen handed out twice.
rec lockorder --backend=stream -- "$W/lockorder" --threads 2 --iterations 100000
check lockorder-order $RECORD_CHECK order "$T/lockorder.zst"
# ... also when a munmap's exit comes long after it let go of the lock
# (50 ms here, far past the 2 ms window: it waits for a userfaultfd reader)
# while another thread's mmap takes its pages and returns.
rec lockorder-late --backend=stream -- "$W/lockorder" --late-exit 50 --iterations 10
if [ "$rc" = 77 ]; then
	skip lockorder-late-order "$(tail -1 "$T/lockorder-late.err")"
else
	check lockorder-late-order $RECORD_CHECK order "$T/lockorder-late.zst"
fi

# A burst: 2 threads x 1,000,000 madvise as fast as they go.
burst=$(san_scale 1000000)
rec burst --backend=stream -- "$W/seed000" --mode new --threads 2 --iterations $burst --no-touch
check burst-nothing-lost sh -c "$VMTRACE stat --json '$T/burst.zst' | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"lost\"] == {\"faults\": 0, \"events\": 0}, d[\"lost\"]
assert d[\"ops\"][\"madvise\"][\"count\"] == 2 * $burst, d[\"ops\"][\"madvise\"]
'"
# ... and a ring too small for it says what it lost: every madvise missing
# is counted lost, and the losses are at most those and the few other
# records the burst's threads make as it ends (their munmap and exit, while
# the other thread still fills the ring).
rec burst-small --backend=stream --ring-size=1 -- "$W/seed000" --mode new --threads 2 --iterations $burst --no-touch
check burst-small-loss-counted sh -c "$VMTRACE stat --json '$T/burst-small.zst' | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = d[\"ops\"][\"madvise\"][\"count\"] + d[\"lost\"][\"events\"]
assert 2 * $burst <= n <= 2 * $burst + 32, (d[\"ops\"][\"madvise\"], d[\"lost\"])
'"

# With stacks every record carries a stack copy, and should vmrec fall
# behind two threads calling at full speed, past 3/4 of the ring the
# kernel leaves stacks out rather than lose calls.  Every call is there;
# each one without a stack is counted in the summary line.
"$VMREC" --force -o "$T/burst-stacks.zst" --backend=stream --stacks -- "$W/seed000" --mode new --threads 2 --iterations 100000 --no-touch > /dev/null 2> "$T/burst-stacks.err"
check burst-stacks-nothing-lost sh -c "$VMTRACE stat --json '$T/burst-stacks.zst' | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d[\"lost\"] == {\"faults\": 0, \"events\": 0}, d[\"lost\"]
assert d[\"ops\"][\"madvise\"][\"count\"] == 200000, d[\"ops\"][\"madvise\"]
'"
check burst-stacks-counted sh -c "$VMTRACE dump --json '$T/burst-stacks.zst' | python3 -c '
import json, re, sys
calls = [e for e in map(json.loads, sys.stdin) if e[\"kind\"] == \"syscall\"]
bare = sum(1 for e in calls if e.get(\"stack\") is None)
m = re.search(r\"of (\\d+) calls, (\\d+) without a stack\", open(sys.argv[1]).read())
assert m and int(m.group(1)) == len(calls) and int(m.group(2)) == bare, (m and m.groups(), len(calls), bare)
assert bare < len(calls), (bare, len(calls))
' '$T/burst-stacks.err'"

# --stack-copy sizes that are not whole pages load and give stacks.
for n in 512 8200; do
	rec stack-copy-$n --backend=stream --stacks --stack-copy=$n -- "$W/seed000" --mode new --threads 1 --iterations 100
	check stack-copy-$n sh -c "[ $rc = 0 ] && $VMTRACE dump --json '$T/stack-copy-$n.zst' | python3 -c '
import json, sys
calls = [e for e in map(json.loads, sys.stdin) if e[\"kind\"] == \"syscall\" and e[\"op\"] == \"madvise\"]
assert len(calls) == 100 and all(e.get(\"stack\") is not None for e in calls), len(calls)
'"
done
# The stack copies' reads of the program's memory are not its faults: with
# and without --stacks, the same faults above the stack (none).
for v in plain stacks; do
	o=""; [ $v = stacks ] && o=--stacks
	rec kfault-$v --backend=stream $o -- ls /
done
check stack-copy-no-faults sh -c "for v in plain stacks; do $VMTRACE dump --json '$T/kfault-'\$v.zst | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
stack = [m for e in evs if e[\"kind\"] == \"maps\" for m in e[\"entries\"] if m.get(\"path\") == \"[stack]\"]
top = max(m[\"end\"] for m in stack)
print(sum(1 for e in evs if e[\"kind\"] == \"fault\" and e[\"addr\"] >= top and e[\"addr\"] < top + (1 << 20)))
'; done | sort -u | wc -l | grep -qx 1"

# A replay of a stream trace: no divergence, the program's faults.
rec replay --backend=stream -- "$W/seed000" --mode new --threads 1 --iterations 20000
check replay-faults sh -c "$VMREPLAY -q --json='$T/replay.json' '$T/replay.zst' > /dev/null && python3 -c '
import json, re, sys
r = json.load(open(sys.argv[1]))[\"median\"]
native = int(re.search(r\"minflt=(\\d+)\", open(sys.argv[2]).read()).group(1))
assert r[\"divergences\"] == 0, r[\"divergences\"]
assert abs(r[\"minor_faults\"] - native) <= 0.02 * native, (r[\"minor_faults\"], native)
' '$T/replay.json' '$T/replay.log'"

# SIGKILL to vmrec (killed.sh checks the trace and the program):
# once its keeper has killed the program, the kernel has no program of
# vmrec's left.
"$VMREC" -q --backend=stream --force -o "$T/killed.zst" -- "$W/pacer" --stamps "$T/killed.stamps" \
	--calls 100000 --interval-us 1000 > "$T/killed.log" 2>&1 &
vmrec=$!
i=0
while [ ! -s "$T/killed.stamps" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
# The killed vmrec's own programs, by id: other tests' recorders may run.
progs=$(grep -hs '^prog_id:' /proc/$vmrec/fdinfo/* | awk '{ print $2 }' | sort -u | tr '\n' ' ')
kill -KILL $vmrec
wait $vmrec 2> /dev/null
if command -v bpftool > /dev/null 2>&1; then
	check killed-no-bpf-left sh -c "[ -n '$progs' ] && i=0 && while [ \$i -lt 1500 ]; do
		left=0; for id in $progs; do bpftool prog show id \$id > /dev/null 2>&1 && left=1; done
		[ \$left = 0 ] && exit 0; sleep 0.02; i=\$((i + 1)); done; exit 1"
else
	skip killed-no-bpf-left "bpftool is not installed"
fi
exit 0
