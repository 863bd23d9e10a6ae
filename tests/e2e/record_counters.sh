#!/bin/sh
# The kernel's own counters in a recording (COUNTERS events, vmtrace(5)),
# with the backend of this pass, against what the kernel counted for the
# same run (tests/e2e/counters.py):
#  - every thread, process and exec has them, where vmtrace(5) says;
#  - the first process's faults at its exit are the workload's own
#    getrusage at its summary line (but for the few it takes after it);
#  - the processes of a tree under a parent that waits for them with
#    wait4 took as many faults as wait4 says (RUSAGE_CHILDREN);
#  - a process that has done its work, read in /proc, then killed: its
#    faults and its child's as /proc counted them;
#  - a replay of the seed-000 loop's recording is within the fidelity
#    tolerance of its recorded faults;
#  - the stream backend: a call that blocked says so (its waits; the
#    ptrace and inproc backends do not measure them);
#  - the trace's faults are those the kernel counted: a program's faults
#    that the kernel does not count (an access error as a garbage
#    collector's barrier takes, a SIGBUS past the end of a file, a fault
#    retried from user space with a signal pending) are none of its fault
#    events, with every backend; with the stream backend every thread's
#    fault events are as many as the kernel counted (and as many major),
#    the faults it took through get_user_pages included; with the others,
#    which cannot see those, no more.
. "$(dirname "$0")/common.inc"
need record_counters "$VMREC" "$VMTRACE" "$W/forkexec" || exit 0

CNT="python3 $E2E/counters.py"
RUN="$E2E/rusage_run.py"
# The interpreter itself (a shim would be a process of the tree).
PY=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
BACKEND=${VMREC_BACKEND:-}

# NAME PROGRAM ARGS...: recorded; its counters where they belong, and the
# first process's against the workload's own getrusage.
summary() {
	name=$1; shift
	if ! "$VMREC" -q --force -o "$T/$name.zst" -- "$@" > "$T/$name.out" 2> "$T/$name.err"; then
		not_ok "$name-shape" "recording failed"; show "$T/$name.err"; return
	fi
	check "$name-shape" $CNT shape "$T/$name.zst"
	check "$name-summary" $CNT summary "$T/$name.zst" "$T/$name.out" 16
	faults "$name"
}

# NAME: the fault events of $T/NAME.zst, thread by thread, are the
# kernel's count, where the backend sees every fault it counts (the stream
# backend), else at most that (ptrace and inproc sample perf events, which
# the faults the kernel takes through get_user_pages do not fire:
# vmrec(1), --touch).
faults() {
	if "$VMTRACE" dump "$T/$1.zst" | head -2 | grep -q 'backend=stream touch=faults'; then
		check "$1-faults" $CNT faults "$T/$1.zst"
	else
		check "$1-faults" $CNT faults --at-most "$T/$1.zst"
	fi
}

summary seed000 "$W/seed000" --threads 2 --iterations 2000 --mode old
summary seed002 "$W/seed002" --count 2000
summary seed004 "$W/seed004"
summary everyop "$W/everyop"
summary forkexec "$W/forkexec"
summary seed001 "$W/seed001" --procs 2 --size 16 --loops 2
summary badfault "$W/badfault"
check badfault-pages $CNT badfault "$T/badfault.zst" "$T/badfault.out"

# A replay of this backend's recording judges itself against the
# recorded run: the seed-000 loop, whose faults a replay makes again,
# within vmreplay's tolerance (vmreplay(1), FIDELITY).  (The recorder's
# own faults, in the counters, or faults out of order with the calls
# would put it outside.)
if [ ! -x "$VMREPLAY" ]; then
	skip seed000-fidelity "vmreplay is not built"
elif [ -f "$T/seed000.zst" ]; then
	"$VMREPLAY" -q --json="$T/seed000.json" "$T/seed000.zst" > "$T/seed000.replay" 2>&1
	check seed000-fidelity python3 - "$T/seed000.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["fidelity"]
m = f["total"]["minor_faults"]
if not f["recorded"] or not m["judged"] or not m["ok"]:
    sys.exit("replay/recorded minor faults %s/%s: %s" % (m["replay"], m["recorded"], f["verdict"]))
print("replay/recorded minor faults %d/%d: %s" % (m["replay"], m["recorded"], f["verdict"]))
PY
fi

# NAME PROGRAM ARGS...: recorded under a parent that waits for it.
tree() {
	name=$1; shift
	if ! "$VMREC" -q --force -o "$T/$name.zst" -- "$PY" "$RUN" wait4 "$T/$name.ru" -- "$@" \
		> "$T/$name.out" 2> "$T/$name.err"; then
		not_ok "$name-wait4" "recording failed"; show "$T/$name.err"; return
	fi
	check "$name-wait4" $CNT rusage "$T/$name.zst" "$T/$name.ru"
	faults "$name"
}

tree forkexec-tree "$W/forkexec"
tree forkexec-true-tree "$W/forkexec" --exec true
tree seed001-tree "$W/seed001" --procs 2 --size 16 --loops 2
tree seed000-tree "$W/seed000" --threads 2 --iterations 500

# Read in /proc once it is done (it then sleeps), then killed: nothing of
# its own runs after the read.
"$PY" "$RUN" proc "$T/proc.txt" -- "$VMREC" -q --force -o "$T/proc.zst" -- \
	"$W/forkexec" --exec none --sleep-ms 600000 > "$T/proc.out" 2>&1
rc=$?
if [ $rc -ne 143 ]; then
	not_ok proc "vmrec exited $rc, want 143 (the program killed by SIGTERM)"; show "$T/proc.out"
else
	check proc $CNT proc "$T/proc.zst" "$T/proc.txt"
fi

# A file mapped MAP_LOCKED after it was dropped from the page cache: the
# mmap reads it in, and blocks doing so.
if [ "$BACKEND" = ptrace ] || [ "$BACKEND" = inproc ]; then
	skip blocked-call "the $BACKEND backend does not measure a call's waits"
elif [ "$(stat -f -c %T "$T")" = tmpfs ]; then
	skip blocked-call "$T is on tmpfs: its pages cannot be dropped"
elif ! TMPDIR=$T "$VMREC" -q --force -o "$T/cold.zst" -- "$W/seed003" --mode locked --cold \
	--size 16 --accesses 10 > "$T/cold.out" 2> "$T/cold.err"; then
	not_ok blocked-call "recording failed"; show "$T/cold.err"
elif grep -q '^summary: .* nvcsw=0 ' "$T/cold.out"; then
	skip blocked-call "the program did not block (its own getrusage): nothing to see"
else
	check blocked-call python3 - "$T/cold.zst" <<'PY'
import json, subprocess, sys
out = subprocess.run([__import__("os").environ["VMTRACE"], "dump", "--json", sys.argv[1]],
                     capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    e = json.loads(line)
    if e["kind"] == "syscall" and e["op"] == "mmap" and e["args"][3] & 0x2000:
        if e["vcsw"] < 1 or not 0 < e["off_cpu_ns"] <= e["exit_ns"] - e["ts_ns"]:
            sys.exit("MAP_LOCKED mmap: vcsw %d, off CPU %d ns of %d" %
                     (e["vcsw"], e["off_cpu_ns"], e["exit_ns"] - e["ts_ns"]))
        print("MAP_LOCKED mmap: %d voluntary switches, %d of %d ns off CPU" %
              (e["vcsw"], e["off_cpu_ns"], e["exit_ns"] - e["ts_ns"]))
        sys.exit(0)
sys.exit("no MAP_LOCKED mmap in the trace")
PY
fi
exit 0
