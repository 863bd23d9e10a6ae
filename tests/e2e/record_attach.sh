#!/bin/sh
# -p PID: attach to every thread of a running program, record its calls
# (ptrace: with syscall stops, no filter; stream: without stopping it),
# detach on SIGINT and let it run on; or follow it to its end.
. "$(dirname "$0")/common.inc"


# attach BACKEND NOTICE: pacer's two workers call madvise until told to
# stop; vmrec attaches in the middle, records while they make 50 more
# calls each, detaches on SIGINT, and the program runs on to its end.
# (Counted, not timed: a slow or loaded machine waits longer.)
attach() {
	KC="python3 $E2E/killcheck.py"
	rm -f "$T/attach.stamps"
	"$W/pacer" --stamps "$T/attach.stamps" --threads 2 --calls 100000000 --interval-us 200 \
		> "$T/prog.out" 2>&1 &
	prog=$!
	$KC wait "$T/attach.stamps" 20
	"$VMREC" --backend=$1 --force -o "$T/attach.zst" -p $prog 2> "$T/attach.err" &
	vmrec=$!
	i=0
	while ! grep -q "^vmrec: attached" "$T/attach.err" && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
	$KC wait "$T/attach.stamps" 50
	kill -INT $vmrec
	wait $vmrec
	rc=$?
	check $1-attach-rc test $rc -eq 0
	check $1-attach-notice grep -qx "vmrec: attached to $prog$2" "$T/attach.err"
	check $1-attach-detached sh -c "grep -q '^TracerPid:[[:space:]]*0$' /proc/$prog/status"
	# (the header names the attached program by its command line)
	check $1-attach-command sh -c "'$VMTRACE' stat '$T/attach.zst' |
		grep -qx 'command      $W/pacer --stamps $T/attach.stamps --threads 2 --calls 100000000 --interval-us 200'"
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
	# detached, it runs on: more calls, then its end when told
	$KC wait "$T/attach.stamps" 20
	$KC stop "$T/attach.stamps"
	wait $prog
	prc=$?
	calls=$(( $($KC total "$T/attach.stamps") + 2 ))
	check $1-attach-program-goes-on sh -c "[ $prc -eq 0 ] && grep -q '^summary: calls=$calls ' '$T/prog.out'"
}
attach ptrace ": no seccomp filter, tracing all syscalls (slower)"
if "$VMREC" -q --backend=stream -o "$T/probe.zst" -- true 2> "$T/probe.err"; then
	attach stream " without stopping it"
else
	skip stream-attach "$(tail -1 "$T/probe.err")"
fi

# Attached until the program ends: vmrec returns its exit status.  (The
# program ends when told, once vmrec has attached: however long that took.)
"$W/pacer" --stamps "$T/attach2.stamps" --calls 100000000 --interval-us 1000 --exit 5 \
	> "$T/fe.out" 2>&1 &
prog=$!
python3 "$E2E/killcheck.py" wait "$T/attach2.stamps" 1
"$VMREC" --force -o "$T/attach2.zst" -p $prog 2> "$T/attach2.err" &
vmrec=$!
i=0
while ! grep -q "^vmrec: attached" "$T/attach2.err" && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
python3 "$E2E/killcheck.py" stop "$T/attach2.stamps"
wait $vmrec
rc=$?
check attach-exit-status test $rc -eq 5
check attach-exit-event sh -c "'$VMTRACE' dump --json '$T/attach2.zst' | tail -1 | grep -q '\"kind\":\"process_exit\".*\"status\":1280'"
wait $prog

"$VMREC" -q -o "$T/x.zst" -p 999999999 2> "$T/nopid.err"
rc=$?
check attach-nopid sh -c "[ $rc -ne 0 ] && grep -q 'cannot attach to 999999999' '$T/nopid.err'"
# as a normal user, no word of backends before the one line that matters
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null 2>&1; then
	chmod 0777 "$T"
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$VMREC" -o "$T/y.zst" -p 999999999 \
		2> "$T/nopid-user.err"
	check attach-nopid-user sh -c "[ \$(wc -l < '$T/nopid-user.err') = 1 ] &&
		grep -qx 'vmrec: cannot attach to 999999999: no such process' '$T/nopid-user.err' &&
		[ ! -e '$T/y.zst' ]"
else
	skip attach-nopid-user "needs root (to become a normal user) and setpriv"
fi
exit 0
