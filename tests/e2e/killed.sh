#!/bin/sh
# SIGKILL to vmrec, under each backend (itself, so not a record_*.sh that
# mk/check.sh runs again with ptrace): the trace decodes up to its last
# chunk and holds every call the program made until 100 ms before the
# kill (vmrec.1: a chunk at least every 100 ms), for a slow program (a
# call every 10 ms) and a busy one (calls as fast as they go); and the
# launched program, its children and grandchildren die with vmrec.
. "$(dirname "$0")/common.inc"

need killed "$VMREC" "$W/pacer" || exit 0

# killed NAME BACKEND PACER-OPTION...: record pacer, kill vmrec once every
# process of the tree has made some calls, then check.
killed() {
	_n=$1 _b=$2
	shift 2
	rm -f "$T/$_n.zst" "$T/$_n.stamps"
	"$VMREC" -q --backend=$_b --force -o "$T/$_n.zst" -- \
		"$W/pacer" --stamps "$T/$_n.stamps" "$@" > "$T/$_n.log" 2> "$T/$_n.err" &
	_v=$!
	python3 "$E2E/killcheck.py" kill "$T/$_n.stamps" "$_v" > "$T/$_n.kill" 2>&1
	_krc=$?
	wait $_v 2> /dev/null
	if [ $_krc -ne 0 ]; then
		not_ok "$_n" "$(tail -1 "$T/$_n.kill")"
		show "$T/$_n.err"
		return
	fi
	check "$_n-prefix" python3 "$E2E/killcheck.py" prefix "$T/$_n.stamps" "$T/$_n.zst" "$(cat "$T/$_n.kill")"
	check "$_n-tree-ends" python3 "$E2E/killcheck.py" ended "$T/$_n.stamps"
}

for b in stream ptrace inproc; do
	if ! "$VMREC" -q --backend=$b --force -o "$T/probe.zst" -- true 2> "$T/probe.err"; then
		skip "killed-$b" "$(tail -1 "$T/probe.err")"
		continue
	fi
	# slow: a call every 10 ms, 2 threads in each of 3 processes
	killed killed-$b-slow $b --threads 2 --depth 2 --calls 100000 --interval-us 10000
	# busy: calls as fast as they go
	killed killed-$b-busy $b --threads 2 --depth 1 --calls 50000000 --no-touch
done
exit 0
