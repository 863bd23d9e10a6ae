#!/bin/sh
# --touch=resident: the pages a TOUCH event reports present before a
# discarding call (and at exit) are the pages the workload touched (the
# ptrace backend: it reads them while the program is stopped);
# --touch=none records none.
. "$(dirname "$0")/common.inc"

# touches NAME JSON EXPR: python expression over `r` (the touch-before list)
touches() {
	check "$1" python3 -c '
import json, sys
r = json.loads(sys.argv[1])
ok = eval(sys.argv[2])
if not ok:
    print("got", r)
sys.exit(0 if ok else 1)' "$2" "$3"
}

before() { # TRACE OP -> JSON list
	$RECORD_CHECK touch-before "$T/$1.zst" "$T/$1.log" "$2"
}

# seed 004: every page read then written before munmap -> all written
rec s4 --touch=resident -- "$W/seed004" --log --pages 64 --rounds 3
touches seed004-munmap "$(before s4 munmap)" 'r == [{"written": 64}] * 3'

# seed 000 new way: 3 pages written before each MADV_DONTNEED
rec s0new --touch=resident -- "$W/seed000" --log --threads 2 --iterations 10 --mode new --pages 3
touches seed000-new-madvise "$(before s0new madvise)" 'r == [{"written": 3}] * 20'
# ... and nothing left for the workers' final munmap (log order: main, then workers)
touches seed000-new-munmap "$(before s0new munmap)" 'len(r) == 4 and r[2:] == [{}, {}]'

# seed 000 old way: the mmap(PROT_NONE, MAP_FIXED) discards 3 written pages
rec s0old --touch=resident -- "$W/seed000" --log --threads 1 --iterations 10 --mode old --pages 3
touches seed000-old-mmap "$(before s0old mmap)" 'r.count({"written": 3}) == 10'

# seed 002 anonymous, read one byte of each page: the zero page, "read";
# on a kernel without the zero page the read allocates a page of its own,
# which pagemap shows as written
rec s2read --touch=resident -- "$W/seed002" --log --count 50 --kind anon-merge --touch read
R=read; [ "$(zero_page "$T/s2read.zst")" = 1 ] || R=written
touches seed002-read "$(before s2read munmap)" "r == [{'$R': 1}] * 50"
rec s2write --touch=resident -- "$W/seed002" --log --count 50 --kind anon --touch write
touches seed002-write "$(before s2write munmap)" "r == [{'written': 1}] * 25 + [{'$R': 1}] * 25 or sorted(map(str, r)) == sorted(map(str, [{'written': 1}, {'$R': 1}] * 25))"
# file pages: present (a write to a private file page makes it anonymous)
rec s2file --touch=resident -- "$W/seed002" --log --count 50 --kind file --touch read
touches seed002-file "$(before s2file munmap)" 'r == [{"present": 1}] * 50'

# seed 001: each MADV_FREE follows a memset of the whole mapping
rec s1 --touch=resident -- "$W/seed001" --log --procs 2 --size 2 --loops 2 --advice free
touches seed001-madvise "$(before s1 madvise)" 'r == [{"written": 512}] * 4'

# exit: pages still mapped when the process ends
rec atexit --touch=resident -- python3 -c '
import mmap, os
m = mmap.mmap(-1, 10 * 4096)
m[0:4096] = b"x" * 4096
m[2 * 4096] = 1
x = m[5 * 4096]
os._exit(0)'
addr=$($VMTRACE dump --json "$T/atexit.zst" | python3 -c '
import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if e["kind"] == "syscall" and e["op"] == "mmap" and e["args"][1] == 40960:
        print(e["result"])')
# mmap.mmap(-1, ...) maps MAP_SHARED: shmem pages show as present
check exit-touch sh -c "[ \"\$($RECORD_CHECK touch-at-exit '$T/atexit.zst' '$addr' 10)\" = 'P-P--P----' ]"

rec none --touch=none -- "$W/seed004" --log --pages 16 --rounds 1
check touch-none sh -c "$RECORD_CHECK events '$T/none.zst' | grep -q '\"kinds\": {' && ! $RECORD_CHECK events '$T/none.zst' | grep -q '\"touch\"'"
check touch-none-calls $RECORD_CHECK match "$T/none.zst" "$T/none.log"
exit 0
