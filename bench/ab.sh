#!/bin/sh
# Two builds against each other (before and after a change), interleaved
# in each round (A B A B ...): for each task, the median time of each
# build and the median over the rounds of B's time / A's time.
#
# Tasks: record (vmrec of the seed-000 loop, ptrace backend), start
# (vmrec -- /bin/true with vmrec's default backend, the stream one as
# root: its fixed cost), read (vmtrace stat and dump of one trace),
# replay (vmreplay of that trace).
# The trace is made once by build A, so that both read the same file
# (an older reader may not know a newer format).
#
# Usage: sh bench/ab.sh A_BUILD B_BUILD [ROUNDS] [ITERATIONS]
#   A_BUILD, B_BUILD: build directories (vmrec, vmtrace, vmreplay and
#   workloads/seed000 in each), e.g. of a git worktree at the old commit.
set -eu
. "$(dirname "$0")/common.inc"
[ $# -ge 2 ] || { echo "usage: sh bench/ab.sh A_BUILD B_BUILD [ROUNDS] [ITERATIONS]" >&2; exit 2; }
A=$1 B=$2 rounds=${3:-7} iters=${4:-20000}
for d in "$A" "$B"; do
	for f in vmrec vmtrace vmreplay workloads/seed000; do
		[ -x "$d/$f" ] || { echo "ab.sh: no $d/$f" >&2; exit 2; }
	done
done

# vmrec's ptrace backend: --backend=ptrace where the build knows it.
recopts() {
	if "$1/vmrec" --help 2>&1 | grep -q -- '--backend'; then echo "--backend=ptrace"; fi
}
ra=$(recopts "$A") rb=$(recopts "$B")
"$A/vmrec" -q $ra --force -o "$tmp/t.zst" -- "$A/workloads/seed000" --mode old \
	--threads 2 --iterations "$iters" > /dev/null
"$A/vmtrace" stat "$tmp/t.zst" > /dev/null

# task NAME BUILD: one run, its time in ns
task() {
	t0=$(now)
	case $1 in
	record)
		r=$ra; [ "$2" = "$B" ] && r=$rb
		"$2/vmrec" -q $r --force -o "$tmp/r.zst" -- "$2/workloads/seed000" --mode new \
			--threads 1 --iterations "$iters" > /dev/null ;;
	start) "$2/vmrec" -q --force -o "$tmp/s.zst" -- true > /dev/null ;;
	stat) "$2/vmtrace" stat "$tmp/t.zst" > /dev/null ;;
	dump) "$2/vmtrace" dump "$tmp/t.zst" > /dev/null ;;
	replay) "$2/vmreplay" -q "$tmp/t.zst" > /dev/null ;;
	esac
	echo $(($(now) - t0))
}

echo "B / A, medians of $rounds interleaved rounds (A = $A, B = $B)"
printf '%-10s %10s %10s %8s\n' task "A ms" "B ms" "B/A"
for t in record start stat dump replay; do
	: > "$tmp/a"; : > "$tmp/b"; : > "$tmp/q"
	for r in $(seq "$rounds"); do
		# (which goes first alternates: neither always gets a warm cache)
		if [ $((r % 2)) = 1 ]; then
			a=$(task $t "$A"); b=$(task $t "$B")
		else
			b=$(task $t "$B"); a=$(task $t "$A")
		fi
		echo "$a" >> "$tmp/a"; echo "$b" >> "$tmp/b"
		echo "$b $a" | awk '{print $1 / $2}' >> "$tmp/q"
	done
	printf '%-10s %10.1f %10.1f %8.3f\n' $t "$(median < "$tmp/a" | awk '{print $1 / 1e6}')" \
		"$(median < "$tmp/b" | awk '{print $1 / 1e6}')" "$(median < "$tmp/q")"
done
