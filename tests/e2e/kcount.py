#!/usr/bin/env python3
"""The kernel's own count of a recording's calls, for the same run.

    kcount.py VMTRACE TRACE -- VMREC [OPTION...] -- CMD [ARG...]

Runs the vmrec command line given (which must write TRACE) inside a tracefs
instance of its own that counts the sys_enter events of the recorded ops for
vmrec and every task it creates (event-fork), then compares, thread by
thread (by tid), the kernel's counts with the SYSCALL events of TRACE.
vmrec's own calls, its helper children's, and those of the launched command
before its exec are not recorded, so they are left out of the kernel's count
too: counted are the launched command from its exec on and the tasks it
creates (sched_process_fork), whatever they exec.  So are the mmaps the inproc
backend's runtime makes for itself in the program: their offset is the
runtime's tag, 0x5ec000000000 (vmrec(1), Backends).

Prints one line per difference and exits 1 if there is any, 77 (with a
line saying why) when tracefs or the syscall events are not there, and
vmrec's status if it failed.
"""
import collections
import json
import os
import re
import subprocess
import sys

OPS = ["mmap", "munmap", "mprotect", "pkey_mprotect", "madvise", "process_madvise",
       "mlock", "mlock2", "munlock", "mlockall", "munlockall", "mremap", "brk",
       "msync", "mincore", "remap_file_pages", "shmat", "shmdt", "mseal"]
TRACEFS = "/sys/kernel/tracing"
RUNTIME_OFF = 0x5ec000000000  # record/inproc/ipshm.h, IP_MAGIC_OFF


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def main():
    vmtrace, trace = sys.argv[1], sys.argv[2]
    cmd = sys.argv[4:] if sys.argv[3] == "--" else None
    if not cmd:
        print(__doc__, file=sys.stderr)
        return 2
    if not os.path.exists(TRACEFS + "/instances"):
        if subprocess.call(["mount", "-t", "tracefs", "nodev", TRACEFS],
                           stderr=subprocess.DEVNULL) != 0:
            skip("no tracefs at " + TRACEFS + " (and it cannot be mounted)")
    inst = "%s/instances/vmrec-kcount-%d" % (TRACEFS, os.getpid())
    try:
        os.mkdir(inst)
    except OSError as e:
        skip("cannot make a tracefs instance: %s" % e)
    try:
        ops = [op for op in OPS if os.path.exists("%s/events/syscalls/sys_enter_%s" % (inst, op))]
        if "mmap" not in ops:
            skip("the kernel has no syscalls:sys_enter_* events")
        write(inst + "/tracing_on", "0")  # until the set holds only vmrec
        write(inst + "/buffer_size_kb", "65536")
        for op in ops:
            write("%s/events/syscalls/sys_enter_%s/enable" % (inst, op), "1")
        write(inst + "/events/sched/sched_process_exec/enable", "1")
        write(inst + "/events/sched/sched_process_fork/enable", "1")
        write(inst + "/options/event-fork", "1")
        write(inst + "/options/record-tgid", "1")
        # The shell puts itself in the set and becomes vmrec.
        pidfile = "%s.pid" % trace
        rc = subprocess.call(["sh", "-c", 'echo $$ > "$1" && echo $$ > "$0/set_event_pid" && '
                              'echo 1 > "$0/tracing_on" && shift && exec "$@"', inst, pidfile] + cmd)
        with open(pidfile) as f:
            vmrec_pid = int(f.read())
        os.unlink(pidfile)
        write(inst + "/tracing_on", "0")
        # Recorded are the launched command from its exec on and every task
        # it creates; vmrec's own threads and helper children are not.
        root, kept = None, set()
        kernel = collections.defaultdict(collections.Counter)
        with open(inst + "/trace") as f:
            for line in f:
                m = re.match(r"\s*.*?-(\d+)\s+\(\s*(?:\d+|-+)\)\s+\[\d+\]\s+\S+\s+[\d.]+: (\w+)[:(](.*)", line)
                if not m:
                    continue
                tid, what, rest = int(m.group(1)), m.group(2), m.group(3)
                if what == "sched_process_exec":
                    if root is None and tid != vmrec_pid:
                        root = tid
                        kept.add(tid)
                elif what == "sched_process_fork":
                    c = re.search(r"child_pid=(\d+)", rest)
                    if c and tid in kept:
                        kept.add(int(c.group(1)))
                elif tid in kept and what.startswith("sys_"):
                    off = re.search(r"off: 0x([0-9a-f]+)", rest)
                    if what == "sys_mmap" and off and int(off.group(1), 16) == RUNTIME_OFF:
                        continue  # the inproc runtime's own
                    kernel[tid][what[4:]] += 1
        lost = 0
        for cpu in os.listdir(inst + "/per_cpu"):
            with open("%s/per_cpu/%s/stats" % (inst, cpu)) as f:
                for line in f:
                    if line.startswith("overrun:"):
                        lost += int(line.split()[1])
    finally:
        os.rmdir(inst)
    if rc != 0:
        print("vmrec exited %d" % rc)
        return rc
    if lost:
        print("tracefs lost %d events: the counts cannot be compared" % lost)
        return 1
    # The trace: SYSCALL events per thread, threads by tid.
    out = subprocess.run([vmtrace, "dump", "--json", trace], capture_output=True, text=True)
    tids, rec = {}, collections.defaultdict(collections.Counter)
    for line in out.stdout.splitlines():
        e = json.loads(line)
        if e["kind"] == "thread_start":
            tids[e["thread"]] = e["os_tid"]
        elif e["kind"] == "syscall":
            rec[tids.get(e["thread"], -1)][e["op"]] += 1
    bad = 0
    for tid in sorted(set(kernel) | set(rec)):
        k = +kernel[tid]
        r = rec[tid]
        if k != r:
            bad += 1
            print("tid %d: kernel %s, trace %s" % (tid, dict(k), dict(r)))
    total = sum(sum(c.values()) for c in rec.values())
    print("%d calls in %d threads: %s" % (total, len(rec), "equal" if not bad else "%d differ" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
