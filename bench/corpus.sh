#!/bin/sh
# The corpus of real programs (tests/corpus/programs.sh): how faithfully
# each replays, and what recording it costs.  One row per program:
#   native   minor faults of the program, median of ROUNDS runs (getrusage
#            over the whole process tree)
#   recorded the recorded run's own minor faults (the last of the record
#            rounds), as the kernel counted them (the trace's COUNTERS):
#            one draw of the program's own spread
#   replay   the replay's minor faults (median of 3 runs)
#   /nat     replay / native
#   /rec     replay / recorded: how faithful the replay is to its own run
#            (the goal: 0.98-1.02)
#   vcs ivcs voluntary and involuntary context switches, replay/recorded,
#            at --speed=max (not expected to match: the replay does not
#            wait where the program did) and at --speed=1 (the s1 columns)
#   wall1    the --speed=1 replay's wall time / the recorded run's
#   div      divergences of the replay's median run
#   record   vmrec's elapsed time / native elapsed time (medians)
# Usage: B=build sh bench/corpus.sh [ROUNDS] [VMREC OPTION...]
# (e.g. "5 --backend=ptrace --touch=resident" for the resident mode).
# Run it alone on the machine: flock /tmp/vmrec-bench.lock sh bench/corpus.sh
set -u
. "$(dirname "$0")/common.inc"
rounds=${1:-5}
[ $# -gt 0 ] && shift
make -s B="$B" "$B/vmrec" "$B/vmreplay" "$B/vmtrace" > /dev/null || exit 1
. tests/corpus/programs.sh
corpus_setup "$tmp" > /dev/null 2>&1 || { echo "corpus: setup failed" >&2; exit 1; }

echo "corpus: replay faults against native, recorded with: vmrec ${*:-(defaults)}"
printf '%-10s %9s %9s %9s %7s %7s %7s %7s %7s %7s %7s %5s %8s\n' program native recorded replay /nat /rec \
	vcs ivcs vcs.s1 ivcs.s1 wall1 div record
for p in $(corpus_names); do
	missing=$(corpus_missing "$p")
	if [ -n "$missing" ]; then
		printf '%-10s (not installed:%s)\n' "$p" "$missing"
		continue
	fi
	cmd=$(corpus_cmd "$p" "$tmp")
	# shellcheck disable=SC2086
	python3 "$CORPUS/native.py" "$rounds" "$tmp/$p.native.json" -- $cmd
	: > "$tmp/rec"
	for _ in $(seq "$rounds"); do
		t0=$(now)
		# shellcheck disable=SC2086
		"$B/vmrec" -q --force -o "$tmp/$p.zst" "$@" -- $cmd > /dev/null 2>&1
		echo $(($(now) - t0)) >> "$tmp/rec"
	done
	if ! "$B/vmreplay" "$tmp/$p.zst" --repeat=3 -q --no-progress --json="$tmp/$p.replay.json" > /dev/null 2>&1 ||
	   ! "$B/vmreplay" "$tmp/$p.zst" --speed=1 -q --no-progress --json="$tmp/$p.speed.json" > /dev/null 2>&1; then
		printf '%-10s (the replay failed)\n' "$p"
		continue
	fi
	"$B/vmtrace" stat --json "$tmp/$p.zst" > "$tmp/$p.stat.json"
	python3 "$CORPUS/judge.py" row "$p" "$tmp/$p.native.json" "$tmp/$p.replay.json" \
		"$(median < "$tmp/rec")" "$tmp/$p.speed.json" "$tmp/$p.stat.json"
done
