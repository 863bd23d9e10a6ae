#!/bin/sh
# Record-then-replay of every workload of tests/workloads (and of
# `python3 -c pass`): the replay exits 0 with zero divergences, and where
# the workload's own getrusage count covers nearly all of its faults, the
# replay's minor faults are within 2% of it (what vmreplay(1) measures:
# DESCRIPTION).
. "$(dirname "$0")/common.inc"
need replay_workloads "$VMREC" "$VMREPLAY" || exit 0

# NAME FAULTS(yes|no) VMREC-OPTION|- PROGRAM ARGS...
run() {
	name=$1 faults=$2 ropt=$3; shift 3
	[ "$ropt" = - ] && ropt=
	# shellcheck disable=SC2086
	if ! "$VMREC" -q $ropt -o "$T/$name.zst" -- "$@" > "$T/$name.out" 2> "$T/$name.err"; then
		not_ok "$name" "recording failed"; show "$T/$name.err"; return
	fi
	if ! "$VMREPLAY" -q --json="$T/$name.json" "$T/$name.zst" > "$T/$name.rp" 2>&1; then
		not_ok "$name" "vmreplay failed"; show "$T/$name.rp"; return
	fi
	check "$name" python3 - "$T/$name.json" <<'PY' || return
import json, sys
med = json.load(open(sys.argv[1]))['median']
if med['divergences']:
    for d in med['divergence_list']:
        print(f"event {d['event']}: {d['text']} -> {d['replayed']}")
    sys.exit(f"{med['divergences']} divergences")
PY
	[ "$faults" = yes ] || return
	if [ "${SAN:-}" = 1 ]; then
		skip "$name-faults" "a sanitized replayer's faults include its shadow memory"
		return
	fi
	check "$name-faults" python3 - "$T/$name.json" "$T/$name.out" <<'PY'
import json, re, sys
med = json.load(open(sys.argv[1]))['median']
native = None
for line in open(sys.argv[2]):
    if line.startswith('summary:'):
        native = int(re.search(r' minflt=(\d+)', line).group(1))
if not native:
    sys.exit("no summary line from the workload")
got = med['minor_faults']
r = got / native
if not 0.98 <= r <= 1.02:
    sys.exit(f"replay {got} minor faults, workload {native} ({r:.3f}, want 0.98-1.02)")
PY
}

# NAME: the replay's figures are the replayed program's, its threads' own
# (the sum of the per-thread rows), and of a trace of several processes
# within 2% of the recorded run's own count (the trace's COUNTERS); what
# vmreplay spent forking the replay processes around them is apart, in
# "setup", and not nothing where it forked.
own_figures() {
	[ -f "$T/$1.json" ] || return
	if [ "${SAN:-}" = 1 ]; then
		skip "$1-own-figures" "a sanitized replayer's faults include its shadow memory"
		return
	fi
	check "$1-own-figures" python3 - "$T/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['runs']:
    for k in ('minor_faults', 'major_faults', 'voluntary_cs', 'involuntary_cs'):
        own = sum(t[k] for t in r['threads'])
        assert r[k] == own, f"{k} {r[k]}, the threads' own {own}"
    assert r['rusage']['minor_faults'] == r['minor_faults']
    if d['processes'] > 1:
        assert r['setup']['minor_faults'] > 0, "no set-up counted for a forking replay"
m = d['fidelity']['total']['minor_faults'] if d['fidelity']['recorded'] else None
print(f"replay {d['median']['minor_faults']} minor faults, set-up "
      f"{d['median']['setup']['minor_faults']}, recorded {m and m['recorded']}")
if m and m['recorded'] >= 1000:
    assert 0.98 <= m['ratio'] <= 1.02, f"replay/recorded {m['ratio']}"
PY
}

run seed000-new yes - "$W/seed000" --threads 2 --iterations "$(san_scale 20000)" --mode new
run seed000-old yes - "$W/seed000" --threads 2 --iterations "$(san_scale 10000)" --mode old
run seed001 yes - "$W/seed001" --procs 2 --size 64 --loops 2
run seed002 yes - "$W/seed002" --count 8000
# File pages: the replay's scratch file is not the recorded file's page
# cache (folio sizes, fault-around), so only divergences are compared.
run seed003 no - "$W/seed003"
# Read-then-write faults are only visible to --touch=faults.
if "$VMREC" -q --touch=faults -o "$T/probe.zst" -- true > /dev/null 2>&1; then
	run seed004 yes --touch=faults "$W/seed004"
else
	skip seed004 "this kernel cannot record page faults (--touch=faults)"
fi
run everyop no - "$W/everyop"
# Its SysV segment is attached and detached in the replay (a memfd stands
# in); only process_madvise is skipped.
if [ ! -f "$T/everyop.json" ]; then
	:
elif grep '^summary:' "$T/everyop.out" | head -1 | grep -q ' failed=[^[:space:]]*shmat:'; then
	skip everyop-shm "SysV shared memory is not available here (shmat failed)"
else
	check everyop-shm python3 - "$T/everyop.json" <<'PY'
import json, sys
med = json.load(open(sys.argv[1]))['median']
got = (med['ops'].get('shmat', {}).get('count'), med['ops'].get('shmdt', {}).get('count'),
       med['skipped'])
if got != (1, 1, 1):
    sys.exit(f"shmat, shmdt, skipped = {got}, want (1, 1, 1)")
PY
fi
run forkexec no - "$W/forkexec"
own_figures seed001
own_figures forkexec
if command -v python3 > /dev/null; then
	run python3 no - python3 -c pass
	# subprocess starts its child with vfork (CPython 3.10 and later):
	# the replay makes the parent thread wait for the child's exec.
	run python3-vfork no - python3 -c "import subprocess; subprocess.run(['true'])"
	own_figures python3-vfork
	# (python3 on PATH may be a wrapper script that forks a dozen shells)
	run python3-json no - python3 -c "import json"
	own_figures python3-json
	if [ -f "$T/python3-vfork.zst" ] && need python3-vfork-kind "$VMTRACE"; then
		if "$VMTRACE" dump "$T/python3-vfork.zst" | grep -q '+++ process_start .* vfork +++'; then
			ok python3-vfork-kind
		else
			skip python3-vfork-kind "this python3 did not vfork"
		fi
	fi
fi

# vmreplay killed (SIGKILL: nothing of it runs) while the replay processes
# of its forked children work: the whole run goes with it, none of its
# processes is left behind.  At --speed=0.1 the replay would last about
# 15 s (mostly the recorded gaps, slept), so processes left behind would
# still be there at the end of the 5 s wait, however fast this machine.
live_runs() { # processes (not zombies) of the copy of vmreplay
	n=0
	for p in $(pgrep -f "$T/vmreplay-killed"); do
		st=$(cut -d' ' -f3 "/proc/$p/stat" 2> /dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && n=$((n + 1))
	done
	echo $n
}
if "$VMREC" -q -o "$T/long.zst" -- "$W/seed001" --procs 2 --size 8 --loops 300 --advice dontneed \
	> /dev/null 2>&1; then
	cp "$VMREPLAY" "$T/vmreplay-killed"
	"$T/vmreplay-killed" -q --speed=0.1 "$T/long.zst" > /dev/null 2>&1 &
	top=$! n=0
	while [ "$(live_runs)" -lt 4 ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
	before=$(live_runs)
	kill -9 $top
	n=0
	while [ "$(live_runs)" -gt 0 ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
	left=$(live_runs)
	wait $top 2> /dev/null
	if [ "$before" -lt 4 ]; then
		not_ok killed-run "the replay had $before processes, want 4 (vmreplay, run, 2 children)"
	elif [ "$left" -eq 0 ]; then
		ok killed-run
	else
		not_ok killed-run "$left of $before processes left 30 s after SIGKILL to vmreplay"
		pkill -9 -f "$T/vmreplay-killed"
	fi
else
	not_ok killed-run "recording failed"
fi
exit 0
