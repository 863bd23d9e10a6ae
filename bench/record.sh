#!/bin/sh
# Recording overhead, one table, all variants interleaved in each round
# (native, stream, inproc, ptrace, strace, perf trace, native, ...): for
# every workload the median over the rounds of each variant's time / the
# native time of the same round.  The inproc backend runs as an
# unprivileged user (nobody, with setpriv) when this runs as root, as a
# user who cannot use the stream backend would run it; the commands are
# then given by absolute path (python3: /usr/bin/python3 when it is
# there, for every variant, since nobody cannot read a per-user install).
#
# Two times per run:
#  - elapsed: the whole command, as a user waits for it (vmrec's set-up
#    and teardown included: loading the BPF programs, the ring);
#  - program: what the program itself took under the recorder: for the
#    seed-000 loop its own wall_ns (the loop only), otherwise the trace's
#    duration (the program's exec to its exit), against native elapsed.
#
# Goals: the seed-000 loop at most 1.3x
# native (stretch 1.15x); python3 -c pass and gcc -c at most 1.05x; node
# with two worker threads at most 1.10x.  The inproc backend's: the
# seed-000 loop at most 1.5x, python3 -c pass at most 1.10x, node with
# workers at most 1.2x.  The touch rows measure what the
# ptrace backend's touch sources cost (resident, faults: the default where
# the fault tracepoints open, user and kernel mode), on real programs too.
# --stacks (stream): the seed-000 loop at most 1.6x native, and with two
# threads at most 1% of its calls without a stack; the --stacks table
# gives each variant's share of calls without a stack (nostk%, from
# vmrec's summary line).
# Usage: B=build [SECTIONS="main touch stacks"] sh bench/record.sh [ROUNDS] [ITERATIONS]
# (SECTIONS: which of the three tables to measure, all by default)
set -eu
. "$(dirname "$0")/common.inc"
rounds=${1:-7}
sections=${SECTIONS:-main touch stacks}
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
iters=${2:-20000}
make -s B="$B" "$B/vmrec" "$B/vmtrace" "$B/vmrec-inproc.rt" "$B/workloads/seed000" > /dev/null
chmod 755 "$tmp"
mkdir "$tmp/user" && chmod 777 "$tmp/user"
umask 000 # (what one variant writes, the next may overwrite)
case $B in /*) ;; *) B=$PWD/$B ;; esac
AS_USER=""
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null 2>&1; then
	AS_USER="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
NODE=$(command -v node 2> /dev/null || true)
GCC=$(command -v gcc)
ops=mmap,munmap,mprotect,pkey_mprotect,madvise,process_madvise,mlock,mlock2,munlock,mlockall,munlockall,mremap,brk,msync,mincore,remap_file_pages,shmat,shmdt
cat > "$tmp/small.c" <<'C'
#include <stdio.h>
int main(void) { puts("hello"); return 0; }
C
cat > "$tmp/workers.js" <<'JS'
const { Worker, isMainThread } = require('worker_threads');
if (isMainThread) {
  for (let i = 0; i < 2; i++) new Worker(__filename);
} else {
  let keep = [];
  for (let r = 0; r < 20; r++) { for (let i = 0; i < 2000; i++) keep.push(new Array(64).fill(r)); keep = []; }
}
JS

stream=1
"$B/vmrec" -q --backend=stream --force -o "$tmp/p.zst" -- true 2> "$tmp/probe" || stream=0
perftrace=0
if command -v perf > /dev/null 2>&1 && perf trace -e mmap -o /dev/null -- true > /dev/null 2>&1; then
	perftrace=1
fi

# run VARIANT CMD...: "ELAPSED PROGRAM NOSTACK": times in ns (PROGRAM 0:
# unknown); NOSTACK: the % of calls without a stack (vmrec's summary, which
# the --stacks variants print), "-" for the others
run() {
	v=$1; shift
	out=$tmp/out
	t0=$(now)
	case $v in
	native) "$@" > "$out" 2>&1 || true ;;
	stream) "$B/vmrec" -q --backend=stream --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	inproc) $AS_USER "$B/vmrec" -q --backend=inproc --force -o "$tmp/user/t.zst" -- "$@" > "$out" 2>&1 || true
		cp "$tmp/user/t.zst" "$tmp/t.zst" 2> /dev/null ;;
	ptrace) "$B/vmrec" -q --backend=ptrace --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	resident) "$B/vmrec" -q --backend=ptrace --touch=resident --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	faults) "$B/vmrec" -q --backend=ptrace --touch=faults --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	sstacks) "$B/vmrec" --backend=stream --stacks --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	pstacks) "$B/vmrec" --backend=ptrace --stacks --force -o "$tmp/t.zst" -- "$@" > "$out" 2>&1 || true ;;
	strace) strace -f -o /dev/null -e trace="$ops" "$@" > "$out" 2>&1 || true ;;
	perf) perf trace -o /dev/null -e "$ops" -- "$@" > "$out" 2>&1 || true ;;
	esac
	t1=$(now)
	prog=$(sed -n 's/.*wall_ns=\([0-9]*\).*/\1/p' "$out" | head -1)
	if [ -z "$prog" ]; then
		case $v in
		native) prog=$((t1 - t0)) ;;
		stream|inproc|ptrace|resident|faults|sstacks|pstacks)
			prog=$("$B/vmtrace" stat --json "$tmp/t.zst" 2> /dev/null |
			       sed -n 's/.*"duration_ns":\([0-9]*\).*/\1/p') ;;
		esac
	fi
	nost=$(sed -n 's/.* of \([0-9]*\) calls, \([0-9]*\) without a stack.*/\1 \2/p' "$out" |
	       awk 'NR == 1 && $1 > 0 {printf "%.3f", 100 * $2 / $1}')
	echo "$((t1 - t0)) ${prog:-0} ${nost:--}"
}
# ratio R: R as %7.2f, or "-" when there is none
ratio() { case $1 in -) printf '%7s' - ;; *) printf '%7.2f' "$1" ;; esac; }

# bench NAME VARIANTS -- CMD...
bench() {
	name=$1; variants=$2; shift 3
	for v in $variants; do : > "$tmp/e.$v"; : > "$tmp/p.$v"; done
	: > "$tmp/e.native"
	for r in $(seq "$rounds"); do
		run native "$@" > "$tmp/base"
		read -r be bp _ < "$tmp/base"
		for v in $variants; do
			run "$v" "$@" > "$tmp/one"
			read -r e p _ < "$tmp/one"
			echo "$e $be" | awk '{print $1 / $2}' >> "$tmp/e.$v"
			[ "$p" != 0 ] && echo "$p $bp" | awk '{print $1 / $2}' >> "$tmp/p.$v"
		done
		echo "$be" >> "$tmp/e.native"
	done
	line=$(printf '%-24s %9.1f' "$name" "$(median < "$tmp/e.native" | awk '{print $1 / 1e6}')")
	for v in stream inproc ptrace strace perf; do
		case " $variants " in *" $v "*)
			line="$line $(ratio "$(median < "$tmp/e.$v")") $(ratio "$(median < "$tmp/p.$v")")" ;;
		*) line="$line $(printf '%7s %7s' - -)" ;;
		esac
	done
	echo "$line"
}
# bench_two NAME V1 V2 -- CMD...: two variants against native; with
# STK=1 (bench_stacks), after each variant's times the median % of calls
# without a stack (the third number `run` prints for a --stacks variant)
bench_two() {
	name=$1 v1=$2 v2=$3; shift 4
	for v in $v1 $v2; do : > "$tmp/e.$v"; : > "$tmp/p.$v"; : > "$tmp/s.$v"; done
	: > "$tmp/e.native"
	for r in $(seq "$rounds"); do
		run native "$@" > "$tmp/base"
		read -r be bp _ < "$tmp/base"
		echo "$be" >> "$tmp/e.native"
		for v in $v1 $v2; do
			run "$v" "$@" > "$tmp/one"
			read -r e p s < "$tmp/one"
			echo "$e $be" | awk '{print $1 / $2}' >> "$tmp/e.$v"
			[ "$p" != 0 ] && echo "$p $bp" | awk '{print $1 / $2}' >> "$tmp/p.$v"
			[ -n "$s" ] && [ "$s" != - ] && echo "$s" >> "$tmp/s.$v"
		done
	done
	line=$(printf '%-24s %9.1f' "$name" "$(median < "$tmp/e.native" | awk '{print $1 / 1e6}')")
	for v in $v1 $v2; do
		line="$line $(ratio "$(median < "$tmp/e.$v")") $(ratio "$(median < "$tmp/p.$v")")"
		[ "${STK:-0}" = 1 ] && line="$line $(ratio "$(median < "$tmp/s.$v")")"
	done
	echo "$line"
}

# bench_stacks NAME V1 V2 -- CMD...: bench_two with the stacks column
bench_stacks() {
	STK=1 bench_two "$@"
}

if want main; then
variants="inproc ptrace strace"
[ $stream = 1 ] && variants="stream $variants"
[ $perftrace = 1 ] && variants="$variants perf"
echo "recording overhead: time / native time of the same round, medians of $rounds interleaved rounds"
echo "(elapsed: the whole command; prog: the program itself: the seed-000 loop's wall_ns, else the trace's exec-to-exit duration)"
printf '%-24s %9s %15s %15s %15s %15s %15s\n' "" "native" "vmrec stream" "vmrec inproc" "vmrec ptrace" "strace -f" "perf trace"
printf '%-24s %9s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n' workload ms elapsed prog elapsed prog elapsed prog elapsed prog elapsed prog
bench "seed000 new 1 thread" "$variants" -- "$B/workloads/seed000" --mode new --threads 1 --iterations "$iters"
bench "seed000 new 2 threads" "$variants" -- "$B/workloads/seed000" --mode new --threads 2 --iterations "$iters"
bench "python3 -c pass" "$variants" -- $PY -c pass
bench "gcc -O2 -c small.c" "$variants" -- "$GCC" -O2 -c -o "$tmp/user/small.o" "$tmp/small.c"
if [ -n "$NODE" ]; then
	bench "node, 2 worker threads" "$variants" -- "$NODE" "$tmp/workers.js"
fi
# The inproc backend: a burst of 2 threads x 1,000,000 madvise (its
# goal: exact counts, nothing lost; this row is its time)
bench "burst 2 x 1,000,000" "inproc" -- "$B/workloads/seed000" --mode new --threads 2 --iterations 1000000 --no-touch
[ $stream = 1 ] || echo "(no stream column: $(tail -1 "$tmp/probe"))"
[ $perftrace = 1 ] || echo "(no perf trace column: perf trace does not run here)"
[ -n "$AS_USER" ] && echo "(vmrec inproc ran as nobody: $AS_USER)"
echo
fi
want touch || { want stacks || exit 0; }
if want touch; then
echo "the ptrace backend's touch sources: time / native, medians of $rounds interleaved rounds"
printf '%-24s %9s %15s %15s\n' "" "native" "resident" "faults"
printf '%-24s %9s %7s %7s %7s %7s\n' workload ms elapsed prog elapsed prog
bench_two "seed000 new 1 thread" resident faults -- "$B/workloads/seed000" --mode new --threads 1 --iterations "$iters"
bench_two "python3 -c pass" resident faults -- python3 -c pass
bench_two "gcc -O2 -c small.c" resident faults -- gcc -O2 -c -o "$tmp/small.o" "$tmp/small.c"
if command -v node > /dev/null 2>&1; then
	bench_two "node, 2 worker threads" resident faults -- node "$tmp/workers.js"
fi
echo
fi
want stacks || exit 0
echo "--stacks: time / native, medians of $rounds interleaved rounds; nostk%: % of calls without a stack"
printf '%-24s %9s %23s %23s\n' "" "native" "stream" "ptrace"
printf '%-24s %9s %7s %7s %7s %7s %7s %7s\n' workload ms elapsed prog nostk% elapsed prog nostk%
if [ $stream = 1 ]; then
	bench_stacks "seed000 new 1 thread" sstacks pstacks -- "$B/workloads/seed000" --mode new --threads 1 --iterations "$iters"
	bench_stacks "seed000 new 2 threads" sstacks pstacks -- "$B/workloads/seed000" --mode new --threads 2 --iterations "$iters"
	bench_stacks "python3 -c pass" sstacks pstacks -- python3 -c pass
	bench_stacks "gcc -O2 -c small.c" sstacks pstacks -- gcc -O2 -c -o "$tmp/small.o" "$tmp/small.c"
else
	echo "(no stream backend: $(tail -1 "$tmp/probe"))"
fi
