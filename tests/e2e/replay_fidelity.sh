#!/bin/sh
# The fidelity section of vmreplay's reports (vmreplay(1), FIDELITY):
#  - a faithful replay of a workload is judged so (faults within 2% of
#    the recorded run's own count), in the text, -q and JSON reports;
#  - an unfaithful one (recorded without its touches, so the replay
#    re-touches nothing) is flagged: outside tolerance, with a warning
#    naming the process;
#  - a trace recorded before the counters says it has none;
#  - at --speed=1 switches, waits and wall time are judged too;
#  - a child reading shared memory its parent filled replays the faults
#    it took (the mapping keeps its recorded offset modulo 2 MiB), and so
#    does a program an exec mapped, in its files;
#  - a forking shell replays its own faults, not those its replay's forks
#    cost vmreplay's own memory;
#  - a process that execs twice replays the faults each exec took in its
#    new image (in the kernel, before the exec's snapshot; through page
#    tables for the arguments; on the vDSO), its faults told apart by the
#    kind of mapping of each image;
#  - a multi-threaded process that forks: every thread replays its own
#    faults, not the copy-on-write faults of vmreplay's own memory that
#    each fork costs it;
#  - scratch files hold the page cache the recorded files held: major
#    faults where the program took them, and only there.
. "$(dirname "$0")/common.inc"
need replay_fidelity "$VMREC" "$VMREPLAY" "$W/seed000" "$W/forkmt" || exit 0

# NAME VMREC-OPTIONS|- PROGRAM ARGS...: recorded, then replayed with the
# JSON in $T/NAME.json and the text in $T/NAME.out
replay() {
	name=$1 ropt=$2; shift 2
	[ "$ropt" = - ] && ropt=
	# shellcheck disable=SC2086
	if ! "$VMREC" -q --force $ropt -o "$T/$name.zst" -- "$@" > "$T/$name.log" 2> "$T/$name.err"; then
		not_ok "$name" "recording failed"; show "$T/$name.err"; return 1
	fi
	if ! "$VMREPLAY" --json="$T/$name.json" "$T/$name.zst" > "$T/$name.out" 2>&1; then
		not_ok "$name" "vmreplay failed"; show "$T/$name.out"; return 1
	fi
}

# JSON FAITHFUL(1|0) [WARNINGS-ALLOWED]: the fidelity object of a replay
# says so, and why.  (A small process of a faithful tree may still be off
# by more than its own tolerance, and is warned about.)
judged() {
	python3 - "$1" "$2" "${3:-0}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f, want = d["fidelity"], sys.argv[2] == "1"
assert f["recorded"], "no recorded counters: %s" % f.get("why")
m = f["total"]["minor_faults"]
print("minor faults %d replayed, %d recorded (%s); %s" % (m["replay"], m["recorded"], m["ratio"],
                                                          f["verdict"]))
assert m["judged"], "minor faults not judged"
assert f["ok"] == want and m["ok"] == want, "want ok=%s" % want
if want:
    assert 0.98 <= m["ratio"] <= 1.02 or abs(m["replay"] - m["recorded"]) <= 2
    assert sys.argv[3] == "1" or not f["warnings"], f["warnings"]
    assert f["verdict"].endswith("within tolerance")
else:
    assert "outside tolerance: minor faults" in f["verdict"]
    assert any(w.startswith("process 0 (pid ") for w in f["warnings"]), f["warnings"]
# the rows: every process and thread of the trace, with the recorded side
assert len(f["processes"]) == d["processes"] and len(f["threads"]) == d["threads"]
for t in f["threads"]:
    assert t["minor_faults"] is None or t["minor_faults"]["recorded"] >= 0
# switches are shown at --speed=max, never judged
assert not f["total"]["voluntary_cs"]["judged"] and not f["speed1"]
PY
}

# (a sanitized replayer's faults include its shadow memory's: no replay of
# it is faithful, and the section says so)
faithful() {
	if [ "${SAN:-}" = 1 ]; then
		skip "$1" "a sanitized replayer's faults include its shadow memory"
		return 1
	fi
}
if replay seed000 - "$W/seed000" --threads 2 --iterations 2000 --mode new && faithful seed000-faithful; then
	check seed000-faithful judged "$T/seed000.json" 1
	check seed000-text grep -q '^fidelity: minor faults 0\.9[89][0-9], .*: within tolerance$\|^fidelity: minor faults 1\.0[0-2][0-9], .*: within tolerance$' "$T/seed000.out"
	check_exit seed000-quiet 0 "$VMREPLAY" -q "$T/seed000.zst"
	# (the totals, the verdict, and a reclaim line if reclaim did anything)
	check seed000-quiet-verdict awk 'NR == 1 && !/^wall / { exit 1 }
		NR == 2 && !/^fidelity: .*within tolerance$/ { exit 1 }
		NR > 2 && !/^reclaim during the replay / { exit 1 } END { exit NR < 2 }' "$T/out"
fi
if replay seed001 - "$W/seed001" --procs 2 --size 16 --loops 2 && faithful seed001-faithful; then
	check seed001-faithful judged "$T/seed001.json" 1 1
fi
# Recorded without touches, replayed without them: the replay takes a
# few of the program's faults.
if replay seed004-untouched --touch=none "$W/seed004"; then
	check seed004-untouched-flagged judged "$T/seed004-untouched.json" 0
	check seed004-untouched-warning grep -q '^warning: process 0 (pid [0-9]*, .*seed004) replayed [0-9]* minor faults, recorded [0-9]*: the trace has no fault addresses' "$T/seed004-untouched.out"
fi

# A child that reads shared anonymous memory its parent filled: each
# read fault maps the cached pages of its 64 KiB block of addresses
# (fault-around), so the faults it takes depend on where the mapping lies
# modulo 64 KiB.  In each of 16 mappings of 2 MiB and 0-15 pages, it
# reads, at the start of each 128 KiB, the first page and the page
# D = 1..15 further: one fault for both where the mapping lies M pages
# past a 64 KiB boundary with D <= 15 - M, two otherwise.  The mappings'
# offsets modulo 64 KiB differ (made one below the other, each a page
# longer), so a replay that put them elsewhere modulo 64 KiB replays
# fewer of the child's faults for most of them.  The replay places each
# at the recorded offset modulo 2 MiB, so the child replays the faults
# it took.  (Each side makes a call after its touches, so that they are
# replayed before the fork and before its exit.  Debian's python3, not a
# wrapper script on PATH that forks shells.)
PY3=/usr/bin/python3
[ -x $PY3 ] || PY3=python3
if replay shmem - $PY3 -c '
import mmap, os
n = 2 << 20
maps = [mmap.mmap(-1, n + (i << 12), flags=mmap.MAP_SHARED) for i in range(16)]
for m in maps:
    for i in range(0, len(m), 4096):
        m[i] = 1
mmap.mmap(-1, 4096).close()
pid = os.fork()
if pid == 0:
    s = sum(m[b] + m[b + ((1 + k) << 12)] for m in maps for k, b in enumerate(range(0, n - (128 << 10), 128 << 10)))
    mmap.mmap(-1, 4096).close()
    os._exit(0 if s == 16 * 2 * 15 else 1)
os._exit(os.waitpid(pid, 0)[1])' && faithful shmem-faultaround; then
	check shmem-faultaround python3 - "$T/shmem.json" <<'PY'
import json, sys
procs = json.load(open(sys.argv[1]))["fidelity"]["processes"]
p = procs[len(procs) - 1]["fault_kinds"]["shared_memory"]
print("the child's faults in shared memory: replayed %d, recorded %d" % (p["replay"], p["recorded"]))
assert p["recorded"] >= 240 and abs(p["replay"] - p["recorded"]) <= 0.01 * p["recorded"], p
PY
fi

# A shell that forks ten children: its replay takes the faults the shell
# took, not those a fork costs vmreplay's own memory (copy-on-write of
# libc's locks and of the replay thread's stack and TLS: about 8 a fork,
# which count as vmreplay's set-up).
if replay forks - sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done' && faithful forks-parent; then
	check forks-parent python3 - "$T/forks.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["fidelity"]["processes"][0]["minor_faults"]
print("the shell's minor faults: replayed %d, recorded %d" % (m["replay"], m["recorded"]))
assert abs(m["replay"] - m["recorded"]) <= max(4, 0.05 * m["recorded"]), m
PY
fi
# Children that exec twice (env, then true): each exec takes faults in
# its new image before the trace's snapshot of it (the kernel clears the
# ELF images' bss and writes the new stack; they are recorded with the old
# image's addresses), and through page tables (the arguments: no event
# shows them, the exec's counters do), and the new program's first reads
# of the vDSO are faults.  Each child replays the faults it took, and
# those of each image are classified by its own mappings (a drain at the
# exec: read later, the old image's samples would be vmreplay's memory).
if replay execs - sh -c 'for i in 1 2 3 4 5 6; do env /bin/true; done' && faithful execs; then
	check execs python3 - "$T/execs.json" <<'PY'
import json, sys
procs = json.load(open(sys.argv[1]))["fidelity"]["processes"][1:]
assert len(procs) == 6, len(procs)
for p in procs:
    m, k = p["minor_faults"], p["fault_kinds"]
    print("%s: replayed %d, recorded %d; stack %d/%d, other %d/%d" % (
        p["path"], m["replay"], m["recorded"], k["stack"]["replay"], k["stack"]["recorded"],
        k["other"]["replay"], k["other"]["recorded"]))
    assert p["path"].endswith("/true"), p["path"]
    assert m["ok"], m
    assert k["stack"]["replay"] == k["stack"]["recorded"], k["stack"]
    assert k["other"]["replay"] <= k["other"]["recorded"] + 1, k["other"]
PY
fi
# A process whose threads work on while it forks (forkmt: 3 threads map
# and write pages, the main thread forks 8 times): after each fork a
# write to any page it shares with the child is a copy-on-write fault.
# The pages its threads wrote before each fork are written before the
# fork in the replay too (their touches wait for their threads' next
# calls, after the fork), and each thread's figures are its own: not
# the copy-on-write faults that the fork costs vmreplay's own memory in
# every thread (stacks, TLS, region bases), which are its set-up.
if replay forkmt - "$W/forkmt" && faithful forkmt-threads; then
	check forkmt-threads python3 - "$T/forkmt.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["fidelity"]
assert len(f["threads"]) == 12, len(f["threads"])
for t in f["threads"]:
    m = t["minor_faults"]
    print("thread %d: replayed %d, recorded %d" % (t["thread"], m["replay"], m["recorded"]))
    assert m["ok"], m  # (within 2%, or 2 faults)
PY
fi
# A program an exec maps (gcc's cc1, its text read through fault-around)
# takes the faults it took in its files: its stand-ins keep the recorded
# addresses' offsets modulo 2 MiB (elsewhere, cc1 took 10% fewer).
# Fault-around maps only what the page cache holds, so these counts also
# follow which of cc1's pages were cached at the time; on a machine where
# DAMON pages out cold memory (kdamond), cc1's text can lose pages
# between the runs (seen twice in many runs: 496 recorded, 481 replayed).
# With DAMON pageout on, a miss is recorded and replayed once more, and
# both runs' figures are printed; a second miss fails.
exec_files_ok() {
	python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
procs = d["fidelity"]["processes"]
cc1 = [p for p in procs if (p["path"] or "").endswith("/cc1")]
assert cc1, "no cc1 in the trace"
k, mj = cc1[0]["fault_kinds"]["private_file"], cc1[0]["major_faults"]
print("cc1's faults in private file mappings: replayed %d, recorded %d (major: %s/%s)" % (
    k["replay"], k["recorded"], mj["replay"] if mj else "-", mj["recorded"] if mj else "-"))
assert abs(k["replay"] - k["recorded"]) <= 0.03 * k["recorded"], k
PY
}
damon_pageout() {
	python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["fidelity"]; sys.exit(0 if (f.get("reclaim") or {}).get("damon_pageout") else 1)' "$1"
}
if command -v gcc > /dev/null 2>&1 &&
   replay exec-files - gcc -O2 -c format/render.c -Iformat -o "$T/render.o" &&
   faithful exec-files; then
	if ! exec_files_ok "$T/exec-files.json" > "$T/exec-files.first" 2>&1 &&
	   damon_pageout "$T/exec-files.json"; then
		echo "# exec-files: DAMON pageout is on; once more after: $(grep '^cc1' "$T/exec-files.first")"
		replay exec-files - gcc -O2 -c format/render.c -Iformat -o "$T/render.o"
	fi
	check exec-files exec_files_ok "$T/exec-files.json"
fi

# Scratch files hold the page cache the recorded files held: a program
# maps a sparse file of 1 GiB, reads 200 pages past its first 512 MiB
# that it had read before (in the page cache: minor faults), and 16
# pages 16 MiB apart in its first 256 MiB, in no order, that it never
# read (major faults, each reading only the 8 MiB or less around it).
# The replay takes the major faults the program took and no others: it
# fills the windows the trace touches, however far into the file, and
# leaves those where the program faulted major cold.  (Before, it read
# the first 256 MiB of each scratch file: the replay took 2 of the 17
# major faults, and 7% fewer minor ones, as the kernel's readahead of
# the pages it had not read filled their neighbours.)
if replay file-cache - $PY3 -c '
import mmap, os, sys
path, M = sys.argv[1], 1 << 20
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.ftruncate(fd, 1024 * M)
for i in range(600, 800):
    os.pread(fd, 4096, i * M)
m = mmap.mmap(fd, 1024 * M, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
s = sum(m[i * M] for i in range(600, 800))
s += sum(m[(i * 7 % 16) * 16 * M + 8 * M] for i in range(16))
mmap.mmap(-1, 4096).close()
os.unlink(path)' "$T/sparse" && faithful file-cache; then
	check file-cache python3 - "$T/file-cache.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["fidelity"]["total"]
mi, ma = f["minor_faults"], f["major_faults"]
print("minor faults: replayed %d, recorded %d; major: replayed %d, recorded %d" % (
    mi["replay"], mi["recorded"], ma["replay"], ma["recorded"]))
assert ma["recorded"] >= 12, "the program took too few major faults to judge: %s" % ma
assert abs(ma["replay"] - ma["recorded"]) <= 2, ma
assert mi["ok"], mi
PY
fi

# A trace of format 1.0: no counters, and it says so.
check_exit old-trace 0 "$VMREPLAY" --json="$T/old.json" "$D/seed000-old.zst"
check old-trace-says grep -q '^fidelity: the trace holds no counters of its recorded run (format 1.0' "$T/out"
check old-trace-json python3 -c "
import json
f = json.load(open('$T/old.json'))['fidelity']
assert f['recorded'] is False and 'format 1.0' in f['why'], f
"

# At --speed=1: switches, waits and wall time are judged (how well they
# match is the machine's: only that they are).
if [ -f "$T/seed000.zst" ]; then
	check_exit speed1 0 "$VMREPLAY" --speed=1 --json="$T/speed1.json" "$T/seed000.zst"
	check speed1-judged python3 -c "
import json
f = json.load(open('$T/speed1.json'))['fidelity']
assert f['speed1'] and f['wall_ns']['judged'] and f['total']['voluntary_cs']['judged'], f
assert ', wall ' in f['verdict'], f['verdict']
"
fi
exit 0
