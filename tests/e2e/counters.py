#!/usr/bin/env python3
"""The COUNTERS events of a trace against what the kernel counted.

    counters.py shape TRACE
        every THREAD_EXIT comes right after a COUNTERS of its thread,
        every PROCESS_EXIT right after a COUNTERS of its process, every
        EXEC right after a COUNTERS of scope exec (vmtrace(5)); every call
        of a stream recording has its waits, and no thread's calls waited
        more often than the thread left its CPU
    counters.py summary TRACE OUT SLACK
        the first process's counters at its exit against the workload's own
        getrusage at its summary line in OUT (self=...): faults equal but
        for at most SLACK taken after the line; switches no fewer
    counters.py rusage TRACE FILE
        the processes below the first one (its child and that child's
        tree) against wait4's rusage of that child, which FILE holds
        (rusage_run.py): faults equal, switches no more
    counters.py faults [--at-most] TRACE
        every thread's FAULT events against its COUNTERS: as many as the
        kernel counted (minflt + majflt; the first thread's from the exec
        that starts the recording on, its COUNTERS of scope exec taken
        off), and as many of them major (a trace of format 1.3 or later,
        whose faults say it); with --at-most, no more than it counted (a
        backend that misses some it counts, none it does not); of a
        thread without COUNTERS (its exit not seen) nothing is judged
    counters.py badfault TRACE OUT
        the faults of tests/workloads/badfault's pages, whose summary line
        OUT holds: one for each of its barrier's pages (the access error
        before it is no fault the kernel counts), none for the page past
        the end of its file (SIGBUS), one for each page of its retry kind
        (the fault the signal interrupted goes uncounted)
    counters.py proc TRACE FILE
        the first process at its exit against /proc, read when it had
        done all it would do (FILE: "self MINFLT MAJFLT" and "children
        MINFLT MAJFLT" of /proc/PID/stat, "main NVCSW NIVCSW" of its status):
        faults equal, its child's faults those /proc counted for children

Prints one line; exits 1 on a difference, 2 on bad input.
"""
import json
import os
import subprocess
import sys

VMTRACE = os.environ.get("VMTRACE", "build/vmtrace")
KEYS = ("minflt", "majflt", "nvcsw", "nivcsw")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def events(trace):
    p = subprocess.run([VMTRACE, "dump", "--json", trace], capture_output=True, text=True)
    if p.returncode != 0:
        print("vmtrace dump failed: " + p.stderr.strip())
        sys.exit(2)
    return [json.loads(line) for line in p.stdout.splitlines()]


def process_counters(evs):
    """proc -> COUNTERS event of scope process (with nthreads: the threads
    it had); proc -> parent proc."""
    procs, parent, nthreads = {}, {}, {}
    for e in evs:
        if e["kind"] == "counters" and e["scope"] == "process":
            procs[e["proc"]] = e
        elif e["kind"] == "process_start":
            parent[e["proc"]] = e["parent_proc"]
        elif e["kind"] == "thread_start":
            nthreads[e["proc"]] = nthreads.get(e["proc"], 0) + 1
    for p in procs:
        procs[p]["nthreads"] = nthreads.get(p, 1)
    return procs, parent


def shape(trace):
    evs = events(trace)
    backend = ""
    p = subprocess.run([VMTRACE, "dump", trace], capture_output=True, text=True)
    for line in p.stdout.splitlines()[:2]:
        if "backend=stream" in line:
            backend = "stream"
    threads = procs = execs = calls = 0
    waited, tids = {}, {}
    for i, e in enumerate(evs):
        prev = evs[i - 1] if i else {}
        k = e["kind"]
        if k == "thread_start":
            # (a short test's tids are not reused: one task, one start;
            # a task taken in before its creator reported it must not
            # start a second time when the report comes)
            if e["os_tid"] in tids:
                fail("event %d: tid %d starts twice (threads %d and %d)" %
                     (i, e["os_tid"], tids[e["os_tid"]], e["thread"]))
            tids[e["os_tid"]] = e["thread"]
        elif k == "thread_exit":
            threads += 1
            if not (prev.get("kind") == "counters" and prev["scope"] == "thread" and
                    prev["thread"] == e["thread"]):
                fail("event %d: thread %d exits without its counters" % (i, e["thread"]))
            c = prev
            w = waited.get(e["thread"], (0, 0))
            if w[0] > c["nvcsw"] or w[1] > c["nivcsw"]:
                fail("thread %d: its calls left the CPU %s times, the thread %s" %
                     (e["thread"], w, (c["nvcsw"], c["nivcsw"])))
        elif k == "process_exit":
            procs += 1
            if not (prev.get("kind") == "counters" and prev["scope"] == "process" and
                    prev["proc"] == e["proc"]):
                fail("event %d: process %d exits without its counters" % (i, e["proc"]))
        elif k == "exec":
            execs += 1
            if not (prev.get("kind") == "counters" and prev["scope"] == "exec" and
                    prev["proc"] == e["proc"]):
                fail("event %d: process %d execs without its counters" % (i, e["proc"]))
        elif k == "syscall" and e["result"] is not None:
            calls += 1
            if backend == "stream" and "off_cpu_ns" not in e:
                fail("event %d: a stream recording's call without its waits" % i)
            if "off_cpu_ns" in e:
                v, iv = waited.get(e["thread"], (0, 0))
                waited[e["thread"]] = (v + e["vcsw"], iv + e["ivcsw"])
                if e["off_cpu_ns"] > e["exit_ns"] - e["ts_ns"]:
                    fail("event %d: off CPU longer than the call" % i)
    if not threads or not procs:
        fail("no thread or process exit in the trace")
    print("shape: %d threads, %d processes, %d execs with counters; %d calls%s" %
          (threads, procs, execs, calls, ", all with waits" if backend == "stream" else ""))


def summary(trace, out, slack):
    self_ = None
    for line in open(out):
        if line.startswith("summary:"):
            for w in line.split():
                if w.startswith("self="):
                    self_ = [int(x) for x in w[5:].split(",")]
    if not self_:
        print("no summary line with self= in " + out)
        sys.exit(2)
    procs, _ = process_counters(events(trace))
    if 0 not in procs:
        fail("the first process has no counters")
    c = procs[0]
    got = [c[k] for k in KEYS]
    for i in (0, 1):
        if not self_[i] <= got[i] <= self_[i] + slack:
            fail("%s: trace %d, the program's own getrusage %d (want that, + at most %d)" %
                 (KEYS[i], got[i], self_[i], slack))
    # A process's counters summed over its threads (SUM) miss the switches
    # each thread made after the recorder saw it exit, which the kernel
    # adds to the process's own (a thread's stop at its exit resumed,
    # its wait to be reaped): at most 2 per thread that ended before.
    ended = (c["nthreads"] - 1) * 2 if c["sum"] else 0
    for i in (2, 3):
        if got[i] + ended < self_[i]:
            fail("%s: trace %d, fewer than the program's own %d (- %d for its %d threads gone)" %
                 (KEYS[i], got[i], self_[i], ended, c["nthreads"] - 1))
    print("summary: trace %s, the program's getrusage %s" % (got, self_))


def below(parent, root):
    """The processes whose ancestry reaches root (root excluded)."""
    out = []
    for p in parent:
        q = parent.get(p)
        while q is not None and q != root:
            q = parent.get(q)
        if q == root and p != root:
            out.append(p)
    return out


def rusage(trace, path):
    want = [int(x) for x in open(path).read().split()]
    procs, parent = process_counters(events(trace))
    tree = below(parent, 0)
    if not tree:
        fail("no process below the first one")
    missing = [p for p in tree if p not in procs]
    if missing:
        fail("processes %s have no counters" % missing)
    got = [sum(procs[p][k] for p in tree) for k in KEYS]
    for i in (0, 1):
        if got[i] != want[i]:
            fail("%s: trace %d over %d processes, wait4 %d" % (KEYS[i], got[i], len(tree), want[i]))
    # The kernel counts what the threads did after the recorder saw them
    # exit (their last switch): never fewer.
    for i in (2, 3):
        if got[i] > want[i]:
            fail("%s: trace %d over %d processes, more than wait4's %d" %
                 (KEYS[i], got[i], len(tree), want[i]))
    print("rusage: trace %s over %d processes, wait4 %s" % (got, len(tree), want))


def faults(trace, at_most=False):
    evs = events(trace)
    thread_cnt, n, major, before = {}, {}, {}, None
    for e in evs:
        k = e["kind"]
        if k == "counters" and e["scope"] == "thread":
            thread_cnt[e["thread"]] = e
        elif k == "counters" and e["scope"] == "exec" and e["proc"] == 0 and before is None:
            before = e  # the launch's, before the program's first instruction
        elif k == "fault":
            n[e["thread"]] = n.get(e["thread"], 0) + 1
            major[e["thread"]] = major.get(e["thread"], 0) + (1 if e.get("major") else 0)
    if not thread_cnt:
        fail("no thread has counters")
    head = subprocess.run([VMTRACE, "dump", trace], capture_output=True, text=True).stdout
    version = head.split(",", 1)[0].split()[-1] if head.startswith("# vmtrace ") else "1.0"
    has_major = tuple(int(x) for x in version.split(".")) >= (1, 3)
    bad, total, kernel = [], 0, 0
    for t, c in sorted(thread_cnt.items()):
        # (less the recorder's own faults in the program: the inproc
        # runtime's, on its own memory, which are no events of the trace)
        want_min, want_maj = c["minflt"] - c.get("own_flt", 0), c["majflt"]
        if t == 0 and before is not None:
            want_min -= before["minflt"] - before.get("own_flt", 0)
            want_maj -= before["majflt"]
        got, got_maj = n.get(t, 0), major.get(t, 0)
        total += got
        kernel += want_min + want_maj
        if got > want_min + want_maj or (got < want_min + want_maj and not at_most):
            bad.append("thread %d: %d faults in the trace, the kernel counted %d (%d minor, %d major)"
                       % (t, got, want_min + want_maj, want_min, want_maj))
        elif has_major and (got_maj > want_maj or (got_maj < want_maj and not at_most)):
            bad.append("thread %d: %d major faults in the trace, the kernel counted %d"
                       % (t, got_maj, want_maj))
    for line in bad[:-1]:
        print(line)
    if bad:
        fail(bad[-1])
    print("faults: %d in the trace, %d counted by the kernel, in %d threads%s" %
          (total, kernel, len(thread_cnt), " (at most)" if at_most else ""))


def badfault(trace, out):
    keys = {}
    for line in open(out):
        if line.startswith("summary:"):
            for w in line.split():
                if "=" in w:
                    k, v = w.split("=", 1)
                    keys[k] = v
    if "barrier_at" not in keys:
        print("no badfault summary line in " + out)
        sys.exit(2)
    n, page = int(keys["pages"]), 4096
    # (name, the mapping's start, first page, pages, faults each)
    sig = int(keys["sigbus_at"], 0)
    regions = [("barrier", int(keys["barrier_at"], 0), 0, n, 1), ("sigbus", sig - page, 1, 1, 0)]
    if keys.get("retry") == "1":
        regions.append(("retry", int(keys["retry_at"], 0), 0, n, 1))
    evs = events(trace)
    said, wrong = [], []
    for name, start, first, npages, want in regions:
        # the faults on the region's pages while it is mapped: from its
        # mmap to its munmap (the addresses are handed out again)
        per, live = {}, False
        for e in evs:
            if e["proc"] != 0:
                continue
            if e["kind"] == "syscall" and e["op"] == "mmap" and e["result"] == start:
                live = True
            elif e["kind"] == "syscall" and e["op"] == "munmap" and e["args"][0] == start and live:
                break
            elif live and e["kind"] == "fault" and not e.get("gup"):
                pg = (e["addr"] - start) // page
                per[pg] = per.get(pg, 0) + 1
        got = [per.get(first + i, 0) for i in range(npages)]
        bad = [(i, g) for i, g in enumerate(got) if g != want]
        if bad:
            wrong.append("%s: %d of %d pages with other than %d fault%s (page, faults: %s)" %
                         (name, len(bad), npages, want, "" if want == 1 else "s", bad[:5]))
        said.append("%s %d x %d" % (name, npages, want))
    for line in wrong[:-1]:
        print(line)
    if wrong:
        fail(wrong[-1])
    print("badfault: the pages' faults as the kernel counted them: " + ", ".join(said))


def proc(trace, path):
    seen = {}
    for line in open(path):
        w = line.split()
        seen[w[0]] = [int(x) for x in w[1:]]
    evs = events(trace)
    procs, parent = process_counters(evs)
    if 0 not in procs:
        fail("the first process has no counters")
    c = procs[0]
    if [c["minflt"], c["majflt"]] != seen["self"]:
        fail("first process: faults %s in the trace, /proc %s" %
             ([c["minflt"], c["majflt"]], seen["self"]))
    kids = [p for p in parent if parent[p] == 0]
    if len(kids) != 1 or kids[0] not in procs:
        fail("want one child process with counters, got %s" % kids)
    k = procs[kids[0]]
    if [k["minflt"], k["majflt"]] != seen["children"]:
        fail("its child: faults %s in the trace, /proc counted %s for children" %
             ([k["minflt"], k["majflt"]], seen["children"]))
    main = [e for e in evs if e["kind"] == "counters" and e["scope"] == "thread"
            and e["thread"] == 0][0]
    # (after /proc was read it went to sleep, was signalled, died)
    v, iv = seen["main"]
    if not v <= main["nvcsw"] <= v + 4 or not iv <= main["nivcsw"] <= iv + 4:
        fail("main thread: switches %s in the trace, /proc %s (+ at most 4)" %
             ([main["nvcsw"], main["nivcsw"]], seen["main"]))
    print("proc: faults %s and its child's %s as /proc counted them; main thread's switches "
          "%s, /proc %s" % (seen["self"], seen["children"], [main["nvcsw"], main["nivcsw"]],
                             seen["main"]))


def main():
    a = sys.argv[1:]
    if a[:1] == ["shape"] and len(a) == 2:
        shape(a[1])
    elif a[:1] == ["summary"] and len(a) == 4:
        summary(a[1], a[2], int(a[3]))
    elif a[:1] == ["rusage"] and len(a) == 3:
        rusage(a[1], a[2])
    elif a[:1] == ["faults"] and len(a) == 2:
        faults(a[1])
    elif a[:2] == ["faults", "--at-most"] and len(a) == 3:
        faults(a[2], True)
    elif a[:1] == ["badfault"] and len(a) == 3:
        badfault(a[1], a[2])
    elif a[:1] == ["proc"] and len(a) == 3:
        proc(a[1], a[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
