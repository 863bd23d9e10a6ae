#!/bin/sh
# Record-then-replay of every workload of tests/workloads (and of
# `python3 -c pass`): the replay exits 0 with zero divergences, and where
# the workload's own getrusage count covers nearly all of its faults, the
# replay's minor faults are within 2% of it (DESIGN.md section 6).
B=${B:-build}
REC=$B/vmrec RP=$B/vmreplay WL=$B/workloads
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$REC" ] || [ ! -x "$RP" ]; then
	echo "skip replay_workloads: $REC or $RP not built"; exit 0
fi

# NAME FAULTS(yes|no) VMREC-OPTION|- PROGRAM ARGS...
run() {
	name=$1 faults=$2 ropt=$3; shift 3
	[ "$ropt" = - ] && ropt=
	# shellcheck disable=SC2086
	if ! "$REC" -q $ropt -o "$tmp/$name.zst" -- "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"; then
		echo "not ok $name: recording failed"; sed 's/^/    /' "$tmp/$name.err" | head; return
	fi
	if ! "$RP" -q --json="$tmp/$name.json" "$tmp/$name.zst" > "$tmp/$name.rp" 2>&1; then
		echo "not ok $name: vmreplay failed"; sed 's/^/    /' "$tmp/$name.rp" | head; return
	fi
	python3 - "$tmp/$name.json" "$tmp/$name.out" "$name" "$faults" "${SAN:-}" <<'PY'
import json, re, sys
js, out, name, faults, san = sys.argv[1:6]
med = json.load(open(js))['median']
if med['divergences']:
    print(f"not ok {name}: {med['divergences']} divergences:")
    for d in med['divergence_list']:
        print(f"    event {d['event']}: {d['text']} -> {d['replayed']}")
    sys.exit()
print(f"ok {name}: zero divergences in {med['events']} ops")
if faults != 'yes':
    sys.exit()
if san == '1':
    print(f"skip {name}-faults: a sanitized replayer's faults include its shadow memory")
    sys.exit()
native = None
for line in open(out):
    if line.startswith('summary:'):
        native = int(re.search(r' minflt=(\d+)', line).group(1))
if not native:
    print(f"not ok {name}-faults: no summary line from the workload"); sys.exit()
got = med['minor_faults']
r = got / native
if 0.98 <= r <= 1.02:
    print(f"ok {name}-faults: replay {got} minor faults, workload {native} ({r:.3f})")
else:
    print(f"not ok {name}-faults: replay {got} minor faults, workload {native} ({r:.3f}, want 0.98-1.02)")
PY
}

run seed000-new yes - "$WL/seed000" --threads 2 --iterations 20000 --mode new
run seed000-old yes - "$WL/seed000" --threads 2 --iterations 10000 --mode old
run seed001 yes - "$WL/seed001" --procs 2 --size 64 --loops 2
run seed002 yes - "$WL/seed002" --count 8000
# File pages: the replay's scratch file is not the recorded file's page
# cache (folio sizes, fault-around), so only divergences are compared.
run seed003 no - "$WL/seed003"
# Read-then-write faults are only visible to --touch=faults.
if "$REC" -q --touch=faults -o "$tmp/probe.zst" -- true > /dev/null 2>&1; then
	run seed004 yes --touch=faults "$WL/seed004"
else
	echo "skip seed004: this kernel cannot record page faults (--touch=faults)"
fi
run everyop no - "$WL/everyop"
# Its SysV segment is attached and detached in the replay (a memfd stands
# in); only process_madvise is skipped.
[ -f "$tmp/everyop.json" ] && python3 - "$tmp/everyop.json" "$tmp/everyop.out" <<'PY'
import json, re, sys
summary = [l for l in open(sys.argv[2]) if l.startswith('summary:')]
failed = re.search(r' failed=(\S+)', summary[0]) if summary else None
if failed and 'shmat:' in failed.group(1):
    print("skip everyop-shm: SysV shared memory is not available here (shmat failed)")
    sys.exit()
med = json.load(open(sys.argv[1]))['median']
got = (med['ops'].get('shmat', {}).get('count'), med['ops'].get('shmdt', {}).get('count'),
       med['skipped'])
if got == (1, 1, 1):
    print("ok everyop-shm: shmat and shmdt replayed once each, one op skipped")
else:
    print(f"not ok everyop-shm: shmat, shmdt, skipped = {got}, want (1, 1, 1)")
PY
run forkexec no - "$WL/forkexec"
if command -v python3 > /dev/null; then
	run python3 no - python3 -c pass
	# subprocess starts its child with vfork (CPython 3.10 and later):
	# the replay makes the parent thread wait for the child's exec.
	run python3-vfork no - python3 -c "import subprocess; subprocess.run(['true'])"
	if [ -f "$tmp/python3-vfork.zst" ] && [ -x "$B/vmtrace" ]; then
		if "$B/vmtrace" dump "$tmp/python3-vfork.zst" | grep -q '+++ process_start .* vfork +++'; then
			echo "ok python3-vfork-kind: the trace has a vfork"
		else
			echo "skip python3-vfork-kind: this python3 did not vfork"
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
	for p in $(pgrep -f "$tmp/vmreplay-killed"); do
		st=$(cut -d' ' -f3 "/proc/$p/stat" 2> /dev/null)
		[ -n "$st" ] && [ "$st" != Z ] && n=$((n + 1))
	done
	echo $n
}
if "$REC" -q -o "$tmp/long.zst" -- "$WL/seed001" --procs 2 --size 8 --loops 300 --advice dontneed \
	> /dev/null 2>&1; then
	cp "$RP" "$tmp/vmreplay-killed"
	"$tmp/vmreplay-killed" -q --speed=0.1 "$tmp/long.zst" > /dev/null 2>&1 &
	top=$! n=0
	while [ "$(live_runs)" -lt 4 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
	before=$(live_runs)
	kill -9 $top
	n=0
	while [ "$(live_runs)" -gt 0 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
	left=$(live_runs)
	wait $top 2> /dev/null
	if [ "$before" -lt 4 ]; then
		echo "not ok killed-run: the replay had $before processes, want 4 (vmreplay, run, 2 children)"
	elif [ "$left" -eq 0 ]; then
		echo "ok killed-run: $before processes, none left within 5 s of SIGKILL to vmreplay"
	else
		echo "not ok killed-run: $left of $before processes left 5 s after SIGKILL to vmreplay"
		pkill -9 -f "$tmp/vmreplay-killed"
	fi
else
	echo "not ok killed-run: recording failed"
fi
exit 0
