#!/bin/sh
# Every workload under vmrec: the trace holds exactly the calls the program
# printed with --log (op, args, result, thread, process), the per-op counts
# equal strace -f's, and vmrec exits with the program's status.
. "$(dirname "$0")/common.inc"

one() { # NAME WORKLOAD ARGS...
	n=$1
	shift
	prog=$W/$1
	shift
	rec "$n" -- "$prog" --log "$@"
	if [ "$rc" -eq 77 ]; then
		skip "$n" "$(head -1 "$T/$n.err")"
		return
	fi
	if [ "$rc" -ne 0 ]; then
		not_ok "$n-status" "exit status $rc: $(head -2 "$T/$n.err" | tr '\n' ' ')"
		return
	fi
	check "$n-calls" $RECORD_CHECK match "$T/$n.zst" "$T/$n.log"
	counts "$n-counts" "$n" "$prog" --log "$@"
}

one seed000-old seed000 --threads 2 --iterations 200 --mode old
one seed000-new seed000 --threads 2 --iterations 200 --mode new
one seed000-pages seed000 --threads 3 --iterations 20 --mode new --pages 3
one seed001-free seed001 --procs 2 --size 4 --loops 2 --advice free
one seed001-dontneed seed001 --procs 3 --size 2 --loops 2 --advice dontneed
one seed002-file seed002 --count 300 --kind file
one seed002-anon seed002 --count 300 --kind anon --touch write
one seed002-merge seed002 --count 300 --kind anon-merge --touch none
one seed003-locked seed003 --size 4 --accesses 50 --mode locked
one seed003-mlock seed003 --size 4 --accesses 50 --mode mlock
one seed003-onfault seed003 --size 4 --accesses 50 --mode onfault
one seed004 seed004 --pages 64 --rounds 2
one seed004-wo seed004 --pages 64 --rounds 2 --write-only
one everyop everyop
one forkexec forkexec
one forkexec-true forkexec --exec true
one badfault badfault --pages 8
one forkexec-none forkexec --exec none
one forkmt forkmt --threads 2 --forks 3 --pages 4
# The header says the overcommit policy the calls ran under (the rewriter
# must not turn an uncommit into madvise under strict overcommit).
oc=$(cat /proc/sys/vm/overcommit_memory)
check header-overcommit sh -c "$VMTRACE dump '$T/everyop.zst' | sed -n 2p | grep -q ' overcommit=$oc[ :]'"
exit 0
