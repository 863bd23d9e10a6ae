#!/bin/sh
# vmrec's exit status, messages, output files and signal handling; threads
# that exit early, fork+exec and vfork, group-stop and signal delivery.
. "$(dirname "$0")/common.inc"

expect_rc() { # NAME WANT
	if [ "$rc" -eq "$2" ]; then ok "$1"; else not_ok "$1" "exit status $rc, want $2: $(head -2 "$T/$1.err" 2> /dev/null | tr '\n' ' ')"; fi
}

# The last two events: THREAD_EXIT then PROCESS_EXIT of the root with the
# given raw wait status.
root_exit() { # TRACE STATUS
	$VMTRACE dump --json "$1" | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
ex = [e for e in evs if e["kind"] == "process_exit" and e["proc"] == 0]
assert len(ex) == 1, "%d root process_exit events" % len(ex)
assert ex[0]["status"] == int(sys.argv[1]), "status %s" % ex[0]["status"]
assert evs[-1]["kind"] == "process_exit", "last event is " + evs[-1]["kind"]
' "$2"
}

# ---- exit status ----
rec exit7 -- "$W/forkexec" --exit 7
expect_rc exit7 7
check exit7-event root_exit "$T/exit7.zst" $((7 << 8))

rec sigterm -- "$W/forkexec" --signal TERM
expect_rc sigterm 143
check sigterm-event root_exit "$T/sigterm.zst" 15

rec sigsegv -- sh -c 'ulimit -c 0; kill -SEGV $$'
expect_rc sigsegv 139

# ---- errors ----
rec notfound -- no-such-command-vmrec
expect_rc notfound 127
check notfound-msg grep -qx "vmrec: cannot trace 'no-such-command-vmrec': command not found" "$T/notfound.err"
check notfound-nofile test ! -e "$T/notfound.zst"

chmod 644 "$T/notfound.err"
rec noexec -- "$T/notfound.err"
expect_rc noexec 126
check noexec-msg grep -q "cannot trace '.*': Permission denied" "$T/noexec.err"

"$VMREC" --touch=sometimes -- true > /dev/null 2> "$T/usage.err"
rc=$?
expect_rc usage 2
check usage-msg grep -q "^vmrec: --touch: unknown mode 'sometimes'" "$T/usage.err"
"$VMREC" > /dev/null 2>&1
rc=$?
expect_rc usage-nocmd 2
check help sh -c "'$VMREC' --help | grep -q -- --touch=MODE"
check version sh -c "'$VMREC' --version | grep -q '^vmrec [0-9]'"

# ---- output files ----
mkdir "$T/d"
(cd "$T/d" && "$VMREC" -- true 2> ../sum1.err && "$VMREC" -q -- true 2> ../sum2.err)
check default-name test -s "$T/d/true.vmtrace.zst"
check default-name-2 test -s "$T/d/true.1.vmtrace.zst"
check summary-line grep -Eq '^vmrec: [0-9]+ events, 1 thread, 1 process, [0-9]+ bytes \(ratio [0-9.]+\), 0 lost -> true.vmtrace.zst$' "$T/sum1.err"
check quiet test ! -s "$T/sum2.err"
"$VMREC" -q -o "$T/d/true.vmtrace.zst" -- true 2> "$T/exists.err"
rc=$?
expect_rc exists 1
check exists-msg grep -qx "vmrec: cannot open '$T/d/true.vmtrace.zst': File exists (use --force to overwrite)" "$T/exists.err"
"$VMREC" -q --force -o "$T/d/true.vmtrace.zst" -- true 2> "$T/force.err"
rc=$?
expect_rc force 0
check force-dump "$VMTRACE" dump "$T/d/true.vmtrace.zst"

# ---- SIGINT / SIGTERM while recording: the program is ended, the trace
# has its footer; vmrec exits 128+signal ----
interrupt() { # NAME SIGNAL WANT
	"$VMREC" -q --force -o "$T/$1.zst" -- "$W/forkexec" --sleep-ms 20000 > "$T/$1.log" 2> "$T/$1.err" &
	pid=$!
	i=0
	while ! grep -q '^ready' "$T/$1.log" 2> /dev/null && [ $i -lt 2400 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -"$2" $pid
	wait $pid
	rc=$?
	expect_rc "$1" "$3"
	check "$1-dump" "$VMTRACE" dump "$T/$1.zst"
	check "$1-exit-event" root_exit "$T/$1.zst" 9
}
interrupt sigint INT 130
interrupt sigterm-vmrec TERM 143

# ---- threads that exit early, fork + exec ----
rec forkexec -- "$W/forkexec"
check forkexec-events sh -c "'$VMTRACE' dump --json '$T/forkexec.zst' | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
pos = {}
for i, e in enumerate(evs):
    pos.setdefault((e[\"kind\"], e[\"thread\"]), i)
starts = [e for e in evs if e[\"kind\"] == \"thread_start\" and e[\"proc\"] == 0]
assert len(starts) == 4, starts
t = [e[\"thread\"] for e in starts]
ps = [e for e in evs if e[\"kind\"] == \"process_start\" and e[\"proc\"] == 1]
assert len(ps) == 1 and ps[0][\"how\"] == \"fork\" and ps[0][\"parent_proc\"] == 0, ps
fork_at = evs.index(ps[0])
# workers 0 and 1 exit before the fork, worker 2 after it
assert pos[(\"thread_exit\", t[1])] < fork_at and pos[(\"thread_exit\", t[2])] < fork_at
assert pos[(\"thread_exit\", t[3])] > fork_at
ex = [e for e in evs if e[\"kind\"] == \"exec\" and e[\"proc\"] == 1]
assert len(ex) == 1 and ex[0][\"path\"].endswith(\"/forkexec\"), ex
i = evs.index(ex[0])
assert evs[i + 1][\"kind\"] == \"maps\" and evs[i + 1][\"proc\"] == 1
pe = [e for e in evs if e[\"kind\"] == \"process_exit\" and e[\"proc\"] == 1]
assert len(pe) == 1 and pe[0][\"status\"] == 0
'"

rec vfork -- python3 -c 'import subprocess; subprocess.run(["true"])'
check vfork sh -c "'$VMTRACE' dump --json '$T/vfork.zst' | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
v = [e for e in evs if e[\"kind\"] == \"process_start\" and e[\"how\"] == \"vfork\"]
assert v, \"no vfork process\"
ex = [e for e in evs if e[\"kind\"] == \"exec\" and e[\"proc\"] == v[-1][\"proc\"]]
assert ex and ex[0][\"path\"].endswith(\"/true\"), ex
'"

# A thread that is not the leader execs: it takes the leader's tid; the
# old leader's thread ends without a wait report of its own.
rec threadexec -- python3 -c '
import os, threading, time
threading.Thread(target=lambda: os.execv("/bin/echo", ["echo", "hi"])).start()
time.sleep(10)'
check threadexec sh -c "[ $rc -eq 0 ] && grep -qx hi '$T/threadexec.log' && '$VMTRACE' dump --json '$T/threadexec.zst' | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
ex = [i for i, e in enumerate(evs) if e[\"kind\"] == \"exec\" and e[\"path\"] == \"/usr/bin/echo\"]
assert len(ex) == 1, ex
t = evs[ex[0]][\"thread\"]
assert evs[ex[0]][\"proc\"] == 0 and t != 0
lead = [i for i, e in enumerate(evs) if e[\"kind\"] == \"thread_exit\" and e[\"thread\"] == 0]
assert len(lead) == 1 and lead[0] < ex[0], lead
assert evs[ex[0] + 1][\"kind\"] == \"maps\"
assert evs[-1][\"kind\"] == \"process_exit\" and evs[-2][\"thread\"] == t
'"

# ---- signals reach the program; group-stop and SIGCONT work ----
rec handler -- sh -c 'trap "echo caught" USR1; kill -USR1 $$; echo done'
check handler sh -c "[ \"\$(cat '$T/handler.log' | tr '\n' ' ')\" = 'caught done ' ] && [ $rc -eq 0 ]"

"$VMREC" -q --force -o "$T/stop.zst" -- sh -c 'kill -STOP $$; echo resumed' > "$T/stop.log" 2>&1 &
pid=$!
stopped=""
child=""
i=0
while [ $i -lt 2400 ]; do
	child=$(pgrep -P $pid | head -1)
	case "$(awk '{print $3}' /proc/$child/stat 2> /dev/null)" in
	t|T) stopped=$child; break ;;
	esac
	sleep 0.05
	i=$((i + 1))
done
if [ -n "$stopped" ]; then
	ok group-stop
	# (the stop seen may be a recorder's own, of the exec or of a call,
	# before the program stopped itself: a SIGCONT then comes too soon,
	# so it is sent again until the program says it resumed)
	i=0
	while ! grep -qx resumed "$T/stop.log" && [ $i -lt 1200 ]; do
		kill -CONT "$stopped" 2> /dev/null
		sleep 0.05
		i=$((i + 1))
	done
else
	not_ok group-stop "the program never stopped"
	kill -CONT $child 2> /dev/null
fi
wait $pid
rc=$?
check group-stop-resume sh -c "grep -qx resumed '$T/stop.log' && [ $rc -eq 0 ]"
exit 0
