#!/bin/sh
# -p PID: attach to every thread of a running program, record its calls
# (ptrace: with syscall stops, no filter; stream: without stopping it),
# detach on SIGINT and let it run on; or follow it to its end.
. "$(dirname "$0")/common.inc"

wait_ready() { # FILE: until the workload prints something
	i=0
	while [ ! -s "$1" ] && [ $i -lt 200 ]; do sleep 0.02; i=$((i + 1)); done
}

# attach BACKEND ITERATIONS NOTICE: seed 000 runs long enough (several
# seconds, as BACKEND slows it) to be caught in the middle of its loop,
# and then runs on.
attach() {
	"$W/seed000" --mode new --threads 2 --iterations $2 > "$T/prog.out" 2>&1 &
	prog=$!
	sleep 0.2
	"$VMREC" --backend=$1 --force -o "$T/attach.zst" -p $prog 2> "$T/attach.err" &
	vmrec=$!
	sleep 0.5
	kill -INT $vmrec
	wait $vmrec
	rc=$?
	check $1-attach-rc test $rc -eq 0
	check $1-attach-notice grep -qx "vmrec: attached to $prog$3" "$T/attach.err"
	check $1-attach-detached sh -c "grep -q '^TracerPid:[[:space:]]*0$' /proc/$prog/status"
	check $1-attach-trace sh -c "'$VMTRACE' dump --json '$T/attach.zst' | python3 -c '
import json, sys, collections
evs = [json.loads(l) for l in sys.stdin]
ps = [e for e in evs if e[\"kind\"] == \"process_start\"]
assert len(ps) == 1 and ps[0][\"how\"] == \"attach\" and ps[0][\"os_pid\"] == $prog, ps
ts = [e for e in evs if e[\"kind\"] == \"thread_start\"]
assert len(ts) == 3, ts
assert any(e[\"kind\"] == \"maps\" for e in evs)
per = collections.Counter(e[\"thread\"] for e in evs if e[\"kind\"] == \"syscall\" and e[\"op\"] == \"madvise\" and e[\"args\"][2] == 4)
assert len(per) == 2 and min(per.values()) > 10, per
assert not any(e[\"kind\"] == \"process_exit\" for e in evs)
'"
	wait $prog
	prc=$?
	check $1-attach-program-goes-on sh -c "[ $prc -eq 0 ] && grep -q '^summary: calls=$(($2 * 2 + 6)) ' '$T/prog.out'"
}
attach ptrace 400000 ": no seccomp filter, tracing all syscalls (slower)"
if "$VMREC" -q --backend=stream -o "$T/probe.zst" -- true 2> "$T/probe.err"; then
	attach stream 6000000 " without stopping it"
else
	skip stream-attach "$(tail -1 "$T/probe.err")"
fi

# Attached until the program ends: vmrec returns its exit status.
"$W/forkexec" --sleep-ms 300 --exit 5 > "$T/fe.out" 2>&1 &
prog=$!
wait_ready "$T/fe.out"
"$VMREC" -q --force -o "$T/attach2.zst" -p $prog 2> "$T/attach2.err"
rc=$?
check attach-exit-status test $rc -eq 5
check attach-exit-event sh -c "'$VMTRACE' dump --json '$T/attach2.zst' | tail -1 | grep -q '\"kind\":\"process_exit\".*\"status\":1280'"
wait $prog

"$VMREC" -q -o "$T/x.zst" -p 999999999 2> "$T/nopid.err"
rc=$?
check attach-nopid sh -c "[ $rc -ne 0 ] && grep -q 'cannot attach to 999999999' '$T/nopid.err'"
exit 0
