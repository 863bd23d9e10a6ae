#!/bin/sh
# --stacks names the workload's own functions; --touch=faults records the
# page faults of the workload's own pages with their access type.
. "$(dirname "$0")/common.inc"

rec stacks --stacks -- "$W/seed000" --log --mode new --threads 2 --iterations 20
check stacks-calls $RECORD_CHECK match "$T/stacks.zst" "$T/stacks.log"
# Every madvise of a worker was called from worker_main, every one of the
# main thread's stack mmaps from main.
check stacks-names sh -c "'$VMTRACE' dump --stacks '$T/stacks.zst' | python3 -c '
import re, sys
lines = sys.stdin.read().splitlines()
madv = main_mmap = 0
for i, l in enumerate(lines):
    m = re.search(r\"\\[p0 t(\\d+)\\] (madvise|mmap)\\(\", l)
    if not m:
        continue
    frames = []
    for f in lines[i + 1:i + 40]:
        if not f.lstrip().startswith(\"#\"):
            break
        frames.append(f)
    text = \" \".join(frames)
    if m.group(2) == \"madvise\":
        assert \"worker_main+\" in text and \"(seed000)\" in text, l + text
        madv += 1
    elif m.group(1) == \"0\" and \"MAP_STACK\" in l:
        assert re.search(r\"\\bmain\\+\", text), l + text
        main_mmap += 1
assert madv == 40 and main_mmap == 1, (madv, main_mmap)
'"

rec faults --touch=faults -- "$W/seed004" --log --pages 16 --rounds 1
if [ "$rc" -ne 0 ] && grep -q 'cannot sample page faults' "$T/faults.err"; then
	skip faults "$(head -1 "$T/faults.err")"
	exit 0
fi
check faults-calls $RECORD_CHECK match "$T/faults.zst" "$T/faults.log"
# seed 004 reads then writes each of its 16 pages: a read fault and a write
# fault per page, in that order, inside its mapping; where the kernel has no
# zero page, only the read fault.
check faults-pages sh -c "'$VMTRACE' dump --json '$T/faults.zst' | python3 -c '
import json, sys
zero_page = $(zero_page "$T/faults.zst")
evs = [json.loads(l) for l in sys.stdin]
mm = [e for e in evs if e[\"kind\"] == \"syscall\" and e[\"op\"] == \"mmap\" and e[\"args\"][1] == 65536][-1]
lo, hi = mm[\"result\"], mm[\"result\"] + 65536
f = [e for e in evs if e[\"kind\"] == \"fault\" and lo <= e[\"addr\"] < hi]
pages = {}
for e in f:
    pages.setdefault((e[\"addr\"] - lo) // 4096, []).append(e[\"access\"])
assert sorted(pages) == list(range(16)), sorted(pages)
typed = all(a != 0 for e in f for a in [e[\"access\"]])
if typed and zero_page:
    assert all(v[0] == 1 and 2 in v for v in pages.values()), pages
elif typed:
    assert all(v == [1] for v in pages.values()), pages
assert not any(e[\"kind\"] == \"touch\" for e in evs)
'"
exit 0
