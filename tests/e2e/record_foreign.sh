#!/bin/sh
# Programs nobody here wrote: per-op counts under vmrec equal strace -f's,
# and their output and exit status are untouched by the recording.
. "$(dirname "$0")/common.inc"

foreign() { # NAME CMD...
	n=$1
	shift
	if ! command -v "$1" > /dev/null 2>&1; then
		skip "$n" "$1 is not installed"
		return
	fi
	"$@" > "$T/$n.native" 2>&1
	native_rc=$?
	rec "$n" -- "$@"
	if [ "$rc" -ne "$native_rc" ]; then
		not_ok "$n-status" "exit status $rc under vmrec, $native_rc natively"
		return
	fi
	check "$n-output" cmp "$T/$n.native" "$T/$n.log"
	counts "$n-counts" "$n" "$@"
}

cd "$T" || exit 1
mkdir -p dir && touch dir/a dir/b dir/c
foreign python3 python3 -c pass
foreign python3-spawn python3 -c 'import subprocess; subprocess.run(["true"]); print("spawned")'
foreign sh-pipe sh -c 'ls dir | wc -l'
foreign git git --version
foreign cc cc --version
foreign false false
exit 0
