#!/bin/sh
# make demo: the README's first command.  Seed 000's story in three
# commands: record the bundled seed-000 workload freeing memory the old
# glibc way (mprotect(RW), touch, mmap(PROT_NONE, MAP_FIXED)) in 2 threads,
# replay it against its rewrite to touch + madvise(MADV_DONTNEED) in one
# table, and lint it.  Everything is written under $B/demo/ (the build
# directory, recreated on each run), never next to the user's files.
set -eu
B=${B:-build}
ITER=${ITER:-50000}
for x in vmrec vmreplay vmtrace workloads/seed000; do
	[ -x "$B/$x" ] || { echo "demo: '$B/$x' is not built" >&2; exit 1; }
done
bin=$(cd "$B" && pwd)
dir=$B/demo
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
PATH=$bin:$PATH
export PATH

say() { printf '\n$ %s\n' "$*"; }

say vmrec -o old.zst -- ../workloads/seed000 --mode old --threads 2 --iterations "$ITER"
vmrec -o old.zst -- ../workloads/seed000 --mode old --threads 2 --iterations "$ITER"

say vmreplay old.zst --compare
vmreplay old.zst --compare

# lint exits 1 when it has a finding, and this trace has the one it is
# meant to have (seed 000's pattern): that is the demo working.
say vmtrace lint old.zst
rc=0
vmtrace lint old.zst || rc=$?
if [ "$rc" -gt 1 ]; then
	echo "demo: vmtrace lint failed (exit $rc)" >&2
	exit 1
fi
printf '\n(the trace is in %s/old.zst)\n' "$dir"
