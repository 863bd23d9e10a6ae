#!/bin/sh
# Recording overhead: wall time under vmrec / native, beside
# strace -f -e trace=<the same ops> / native, measured in one run with the
# three variants interleaved (native, vmrec, strace, native, ...) and medians
# of ROUNDS rounds.  Goals: seed-000 (new style, every iteration a traced
# syscall) at or below strace's ratio; python3 -c pass and a gcc build of a
# small C file at most 1.10.
# Usage: B=build sh bench/record.sh [ROUNDS] [ITERATIONS]
set -eu
B=${B:-build}
rounds=${1:-7}
iters=${2:-20000}
make -s B="$B" "$B/vmrec" "$B/workloads/seed000" >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ops=mmap,munmap,mprotect,pkey_mprotect,madvise,process_madvise,mlock,mlock2,munlock,mlockall,munlockall,mremap,brk,msync,mincore,remap_file_pages,shmat,shmdt
cat > "$tmp/small.c" <<'C'
#include <stdio.h>
int main(void) { puts("hello"); return 0; }
C

now() { date +%s%N; }
# time_of CMD...: wall ns of one run
time_of() { t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now); echo $((t1 - t0)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

bench() { # NAME, then the command (VMREC_OPTS: extra vmrec options)
	name=$1; shift
	: > "$tmp/n"; : > "$tmp/v"; : > "$tmp/s"
	for r in $(seq "$rounds"); do
		time_of "$@" >> "$tmp/n"
		time_of "$B/vmrec" -q --force ${VMREC_OPTS:-} -o "$tmp/t.zst" -- "$@" >> "$tmp/v"
		time_of strace -f -o /dev/null -e trace="$ops" "$@" >> "$tmp/s"
	done
	n=$(median < "$tmp/n"); v=$(median < "$tmp/v"); s=$(median < "$tmp/s")
	awk -v name="$name" -v n="$n" -v v="$v" -v s="$s" 'BEGIN {
		printf "%-28s %10.1f %10.1f %10.1f %8.2f %8.2f\n", name, n/1e6, v/1e6, s/1e6, v/n, s/n }'
}

printf '%-28s %10s %10s %10s %8s %8s\n' workload native_ms vmrec_ms strace_ms vmrec_x strace_x
bench "seed000 new 1 thread" "$B/workloads/seed000" --mode new --threads 1 --iterations "$iters"
bench "seed000 new 2 threads" "$B/workloads/seed000" --mode new --threads 2 --iterations "$iters"
VMREC_OPTS=--touch=none bench "  same, vmrec --touch=none" "$B/workloads/seed000" --mode new --threads 1 --iterations "$iters"
bench "python3 -c pass" python3 -c pass
bench "gcc -c small.c" gcc -O2 -c -o "$tmp/small.o" "$tmp/small.c"
echo "($rounds rounds interleaved, medians; seed000 with $iters iterations per thread)"
