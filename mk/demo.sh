#!/bin/sh
# make demo: the README's first command.  Seed 000's story in three
# commands: record the bundled seed-000 workload freeing memory the old
# glibc way (mprotect(RW), touch, mmap(PROT_NONE, MAP_FIXED)) in 2 threads,
# replay it against its rewrite to touch + madvise(MADV_DONTNEED) in one
# table, and lint it.  Then, where qemu and Debian's kernel images are
# installed (mk/kernel.sh), a shorter recording of the same on Linux 6.1,
# 6.12 and this machine in one table (KITER iterations; VM_ACCEL=tcg or
# kvm to choose the guests' accelerator), and the same table for a real
# program's recording, node's worker threads (tests/data/real).  Everything is written under
# $B/demo/ (the build directory, recreated on each run), never next to the
# user's files.
set -eu
B=${B:-build}
ITER=${ITER:-50000}
KITER=${KITER:-3000}
KDIR=${VMREC_KERNEL_DIR:-/var/cache/vmrec}
for x in vmrec vmreplay vmtrace workloads/seed000; do
	[ -x "$B/$x" ] || { echo "demo: '$B/$x' is not built" >&2; exit 1; }
done
bin=$(cd "$B" && pwd)
top=$(pwd)
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

# The same pattern on other kernels: 6.1 (no per-VMA locks), 6.12 (per-VMA
# locks) and this one.  Under TCG the guests' times are emulated: their
# counts (faults, context switches, VMAs) are what compares.
kernels=
for v in 6.1 6.12; do
	[ -r "$KDIR/vmlinuz-$v" ] && kernels="$kernels --kernel=$KDIR/vmlinuz-$v"
done
if ! command -v qemu-system-x86_64 > /dev/null 2>&1; then
	printf '\n(no qemu-system-x86_64: as root, apt-get install qemu-system-x86 and sh mk/kernel.sh\n'
	printf ' replay seed 000 on Linux 6.1 and 6.12 too)\n'
elif [ -z "$kernels" ]; then
	printf '\n(no kernel image in %s: as root, sh mk/kernel.sh replays seed 000 on Linux 6.1\n' "$KDIR"
	printf ' and 6.12 too)\n'
else
	say vmrec -o k.zst -- ../workloads/seed000 --mode old --threads 2 --iterations "$KITER"
	vmrec -q -o k.zst -- ../workloads/seed000 --mode old --threads 2 --iterations "$KITER"
	# shellcheck disable=SC2086
	say vmreplay k.zst$kernels --host ${VM_ACCEL:+--vm-accel=$VM_ACCEL} --json=kernels/
	rc=0
	# shellcheck disable=SC2086
	vmreplay k.zst $kernels --host ${VM_ACCEL:+--vm-accel=$VM_ACCEL} --json=kernels/ || rc=$?
	# 1: a kernel gave no results, said above, the others' table printed
	if [ "$rc" -gt 1 ]; then
		echo "demo: vmreplay on several kernels failed (exit $rc)" >&2
		exit 1
	fi
	# A real program on the same kernels: node's worker threads tearing
	# down V8 isolates (tests/data/real).  The trace predates vmrec's
	# recording of the mm settings: the guests get this machine's THP
	# modes, so that the three columns compare alike.
	thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2> /dev/null)
	defrag=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2> /dev/null)
	cp "$top/tests/data/real/node20-workers.zst" .
	# shellcheck disable=SC2086
	say vmreplay node20-workers.zst$kernels --host ${thp:+--vm-sysctl=thp=$thp} \
		${defrag:+--vm-sysctl=thp_defrag=$defrag} ${VM_ACCEL:+--vm-accel=$VM_ACCEL} --json=node/
	rc=0
	# shellcheck disable=SC2086
	vmreplay node20-workers.zst $kernels --host ${thp:+--vm-sysctl=thp=$thp} \
		${defrag:+--vm-sysctl=thp_defrag=$defrag} ${VM_ACCEL:+--vm-accel=$VM_ACCEL} \
		--json=node/ || rc=$?
	if [ "$rc" -gt 1 ]; then
		echo "demo: vmreplay of node20-workers.zst on several kernels failed (exit $rc)" >&2
		exit 1
	fi
fi
if [ -d kernels ]; then
	printf '\n(the traces are in %s: old.zst, k.zst and node20-workers.zst, with their results\n' "$dir"
	printf ' per kernel in kernels/ and node/)\n'
else
	printf '\n(the trace is in %s/old.zst)\n' "$dir"
fi
