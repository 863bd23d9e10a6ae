#!/usr/bin/env python3
"""record_check.py - compare a vmrec trace with reality (helper of the
tests/e2e/record_*.sh scripts).

  record_check.py match TRACE LOG      the calls a workload printed with --log
                                       are in the trace, on the right thread
                                       and process, with the same args/results
  record_check.py counts TRACE STRACE  per-op call counts equal strace -f's
  record_check.py touch TRACE          page totals of TOUCH events as JSON
  record_check.py events TRACE         event counts per kind/op as JSON
  record_check.py touch-before TRACE LOG OP
                                       for each logged call OP (in log order):
                                       the page states of the TOUCH events the
                                       trace has right before it, as JSON
  record_check.py touch-at-exit TRACE ADDR NPAGES
                                       page states of [ADDR, +NPAGES) in the
                                       exit TOUCH events, one letter a page
  record_check.py same-calls TRACE1 TRACE2
                                       each thread makes the same calls (op,
                                       arguments and result but addresses) in
                                       the same order
  record_check.py same-stacks TRACE1 TRACE2 [CUT]
                                       each thread's calls have the same
                                       call stacks (functions and offsets)
                                       in the same order, but for at most
                                       CUT (default 0) whose stack in TRACE1
                                       is a strict prefix of TRACE2's (cut
                                       where a stack copy ended)
  record_check.py order TRACE          no mmap without MAP_FIXED returns a
                                       page the trace still has mapped (calls
                                       are in the order the kernel ran them)
  record_check.py files TRACE          every mmap of an fd that succeeded has
                                       its map_file right before it, on its
                                       thread

Exit status 0 when the check holds; otherwise 1 and one line saying why.
Environment: B (build directory), VMTRACE (default B/vmtrace).
"""
import collections
import json
import os
import re
import subprocess
import sys

B = os.environ.get("B", "build")
VMTRACE = os.environ.get("VMTRACE", os.path.join(B, "vmtrace"))
OPS = ["mmap", "munmap", "mprotect", "pkey_mprotect", "madvise",
       "process_madvise", "mlock", "mlock2", "munlock", "mlockall",
       "munlockall", "mremap", "brk", "msync", "mincore", "remap_file_pages",
       "shmat", "shmdt", "mseal"]


def fail(msg):
    print(msg)
    sys.exit(1)


def events(trace):
    if not os.access(VMTRACE, os.X_OK):
        fail("no %s (build it first)" % VMTRACE)
    p = subprocess.run([VMTRACE, "dump", "--json", trace],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail("vmtrace dump failed: " + p.stderr.strip())
    return [json.loads(line) for line in p.stdout.splitlines()]


def num(s):
    s = s.strip()
    return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s)


LOG_RE = re.compile(r"^(?:(thread|proc)=(\d+) )?op=(\w+) args=(\S*) result=(-?\w+)$")


def parse_log(path):
    """label -> [(op, [args], result, line)] in program order."""
    calls = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = LOG_RE.match(line)
            if not m:
                continue
            label = (m.group(1) or "main", int(m.group(2) or 0))
            args = [num(a) for a in m.group(4).split(",")] if m.group(4) else []
            calls.setdefault(label, []).append((m.group(3), args, num(m.group(5)), line))
    return calls


def arg_equal(traced, logged):
    if traced == logged & (2**64 - 1):
        return True
    # An int argument (fd -1, pkey -1): the register may hold it zero- or
    # sign-extended; the kernel reads 32 bits.
    return -2**31 <= logged < 2**31 and (traced & 0xffffffff) == (logged & 0xffffffff)


def same_call(ev, call):
    op, args, result, _ = call
    return (ev["op"] == op and len(ev["args"]) == len(args)
            and all(arg_equal(a, b) for a, b in zip(ev["args"], args))
            and ev["result"] == result and not ev.get("flags"))


def cmd_match(trace, log):
    evs = events(trace)
    calls = parse_log(log)
    if not calls:
        fail("no op= lines in " + log)
    by_thread = collections.defaultdict(list)
    thread_proc = {}
    proc_threads = collections.defaultdict(list)  # proc -> threads in start order
    for e in evs:
        if e["kind"] == "thread_start":
            thread_proc[e["thread"]] = e["proc"]
            proc_threads[e["proc"]].append(e["thread"])
        elif e["kind"] == "syscall":
            by_thread[e["thread"]].append(e)
            if thread_proc.get(e["thread"], e["proc"]) != e["proc"]:
                fail("thread %d has calls in two processes" % e["thread"])
    for (kind, i), want in calls.items():
        if kind == "main":
            tid, exact = proc_threads[0][0], False
        elif kind == "thread":
            # worker i of the root process: the (i+1)-th thread it started
            if len(proc_threads[0]) <= i + 1:
                fail("no thread for thread=%d (root process has %d threads)"
                     % (i, len(proc_threads[0])))
            tid, exact = proc_threads[0][i + 1], True
        else:
            if not proc_threads.get(i):
                fail("no process %d in the trace" % i)
            tid, exact = proc_threads[i][0], False
        got = by_thread[tid]
        if exact and len(got) != len(want):
            fail("%s=%d: %d calls logged, %d traced on thread %d"
                 % (kind, i, len(want), len(got), tid))
        k = 0
        for call in want:
            while k < len(got) and not same_call(got[k], call):
                if exact:
                    fail("%s=%d: logged '%s', traced '%s'" % (kind, i, call[3], got[k]["text"]))
                k += 1
            if k == len(got):
                fail("%s=%d: '%s' not found (in order) on thread %d" % (kind, i, call[3], tid))
            k += 1
    print("%d calls of %d threads/processes match" %
          (sum(len(v) for v in calls.values()), len(calls)))


def strace_counts(path):
    c = collections.Counter()
    with open(path) as f:
        for line in f:
            m = re.match(r"^(?:\[pid\s+\d+\] |\d+\s+)?(\w+)\(", line)
            if m and m.group(1) in OPS:
                c[m.group(1)] += 1
    return c


def cmd_counts(trace, strace_out, ops=None):
    want = strace_counts(strace_out)
    only = set(ops.split(",")) if ops else set(OPS)
    got = collections.Counter(e["op"] for e in events(trace)
                              if e["kind"] == "syscall" and e["op"] in only)
    if want != got:
        diff = {op: (want[op], got[op]) for op in set(want) | set(got) if want[op] != got[op]}
        fail("per-op counts differ (strace, vmrec): %s" % json.dumps(diff, sort_keys=True))
    print("counts match: %s" % json.dumps(dict(sorted(got.items()))))


STATES = ["absent", "present", "read", "written"]


def cmd_touch(trace):
    out = {"before_op": collections.Counter(), "exit": collections.Counter(), "events": 0}
    for e in events(trace):
        if e["kind"] != "touch":
            continue
        out["events"] += 1
        reason = "exit" if e["reason"] == "exit" else "before_op"
        for pages, state in e["runs"]:
            out[reason][STATES[state]] += pages
    print(json.dumps(out, sort_keys=True))


def cmd_events(trace):
    kinds = collections.Counter()
    ops = collections.Counter()
    flags = 0
    for e in events(trace):
        kinds[e["kind"]] += 1
        if e["kind"] == "syscall":
            ops[e["op"]] += 1
            flags += 1 if e.get("flags") else 0
    print(json.dumps({"kinds": kinds, "ops": ops, "flagged": flags}, sort_keys=True))


def thread_calls(evs):
    """thread -> [(syscall event, [touch events right before it])]"""
    out = collections.defaultdict(list)
    pending = collections.defaultdict(list)
    for e in evs:
        if e["kind"] == "touch" and e["reason"] == "before_op":
            pending[e["thread"]].append(e)
        elif e["kind"] == "syscall":
            out[e["thread"]].append((e, pending.pop(e["thread"], [])))
    return out


def cmd_touch_before(trace, log, op):
    evs = events(trace)
    calls = thread_calls(evs)
    flat = [c for t in sorted(calls) for c in calls[t]]
    res = []
    for label, want in parse_log(log).items():
        for call in want:
            if call[0] != op:
                continue
            hits = [c for c in flat if same_call(c[0], call)]
            if not hits:
                fail("'%s' not in the trace" % call[3])
            states = collections.Counter()
            for t in hits[0][1]:
                for pages, state in t["runs"]:
                    if state:
                        states[STATES[state]] += pages
            flat.remove(hits[0])
            res.append(dict(states))
    print(json.dumps(res, sort_keys=True))


def cmd_touch_at_exit(trace, addr, npages):
    addr, npages = num(addr), int(npages)
    page = [0] * npages
    for e in events(trace):
        if e["kind"] != "touch" or e["reason"] != "exit":
            continue
        a = e["start"]
        for pages, state in e["runs"]:
            for _ in range(pages):
                i = (a - addr) // 4096
                if 0 <= i < npages:
                    page[i] = state
                a += 4096
    print("".join("-PRW"[s] for s in page))


# Arguments and results that are addresses: which ones the kernel gives
# depends on how threads raced, run by run.  (shmat's shmid is the
# kernel's choice too.)
ADDR_ARGS = {"mmap": [0], "mremap": [0, 4], "shmat": [0, 1], "brk": [0], "mincore": [0, 2],
             "process_madvise": [1]}
ADDR_RESULT = {"mmap", "mremap", "brk", "shmat"}


def per_thread_calls(trace):
    calls = collections.defaultdict(list)
    for e in events(trace):
        if e["kind"] == "syscall":
            op, args, res = e["op"], list(e["args"]), e["result"]
            for i in ADDR_ARGS.get(op, [0]):
                if i < len(args):
                    args[i] = "addr"
            if op in ADDR_RESULT and not -4096 < res < 0:
                res = "addr"
            calls[e["thread"]].append((op, tuple(args), res))
    return calls


def cmd_same_calls(trace1, trace2):
    a, b = per_thread_calls(trace1), per_thread_calls(trace2)
    if sorted(a) != sorted(b):
        fail("threads differ: %s against %s" % (sorted(a), sorted(b)))
    for t in sorted(a):
        for i, (x, y) in enumerate(zip(a[t], b[t])):
            if x != y:
                fail("thread %d, call %d: %s against %s" % (t, i, x, y))
        if len(a[t]) != len(b[t]):
            fail("thread %d: %d calls against %d" % (t, len(a[t]), len(b[t])))


def per_thread_stacks(trace):
    """thread -> [(op, (frame, ...))], frames as vmtrace dump --stacks
    names them (function+offset (module)); addresses of code outside any
    module differ from run to run and are left out."""
    p = subprocess.run([VMTRACE, "dump", "--stacks", trace], capture_output=True, text=True)
    if p.returncode != 0:
        fail("vmtrace dump failed: " + p.stderr.strip())
    calls = collections.defaultdict(list)
    cur = None
    for line in p.stdout.splitlines():
        m = re.match(r"\s*\S+ \[p\d+ t(\d+)\] (\w+)\(", line)
        if m and m.group(2) in OPS:
            cur = (m.group(2), [])
            calls[int(m.group(1))].append(cur)
            continue
        f = re.match(r"\s+#\d+\s+(.*)", line)
        if f and cur is not None:
            name = f.group(1)
            cur[1].append("?" if name.startswith("0x") else name)
        elif not line.startswith(" " * 4 + "#"):
            cur = None if not m else cur
    return {t: [(op, tuple(fr)) for op, fr in v] for t, v in calls.items()}


def cmd_same_stacks(trace1, trace2, cut="0"):
    a, b = per_thread_stacks(trace1), per_thread_stacks(trace2)
    if sorted(a) != sorted(b):
        fail("threads differ: %s against %s" % (sorted(a), sorted(b)))
    n = prefixes = 0
    for t in sorted(a):
        for i, (x, y) in enumerate(zip(a[t], b[t])):
            if (x != y and x[0] == y[0] and 0 < len(x[1]) < len(y[1])
                    and y[1][:len(x[1])] == x[1] and prefixes < int(cut)):
                prefixes += 1
            elif x != y:
                k = next((k for k, (f, g) in enumerate(zip(x[1], y[1])) if f != g),
                         min(len(x[1]), len(y[1])))
                fail("thread %d, call %d (%s against %s), %d and %d frames: frame %d is %s against %s"
                     % (t, i, x[0], y[0], len(x[1]), len(y[1]), k,
                        x[1][k] if k < len(x[1]) else "missing",
                        y[1][k] if k < len(y[1]) else "missing"))
            n += len(x[1]) > 0
        if len(a[t]) != len(b[t]):
            fail("thread %d: %d calls against %d" % (t, len(a[t]), len(b[t])))
    if not n:
        fail("no call has a stack")


def cmd_order(trace):
    live = collections.defaultdict(set)  # proc -> pages mapped by hint-less mmaps
    n = bad = 0
    for e in events(trace):
        if e["kind"] != "syscall" or -4096 < e["result"] < 0:
            continue
        op, a, p = e["op"], e["args"], e["proc"]
        if op == "mmap" and not a[3] & 0x10:
            n += 1
            pages = set(range(e["result"], e["result"] + a[1], 4096))
            if live[p] & pages:
                bad += 1
            live[p] |= pages
        elif op == "munmap":
            live[p] -= set(range(a[0], a[0] + a[1], 4096))
    if bad:
        fail("%d of %d hint-less mmaps returned pages the trace still had mapped" % (bad, n))


def cmd_files(trace):
    last = {}  # (proc, thread) -> the map_file just before, if any
    n = bad = 0
    for e in events(trace):
        key = (e.get("proc"), e.get("thread"))
        if e["kind"] == "map_file":
            last[key] = e
            continue
        if e["kind"] != "syscall":
            continue
        f = last.pop(key, None)
        a = e["args"]
        if e["op"] != "mmap" or -4096 < e["result"] < 0 or a[3] & 0x20 or a[4] < 0:
            continue
        n += 1
        bad += f is None
    if not n:
        fail("no mmap of a file in the trace")
    if bad:
        fail("%d of %d mmaps of a file have no file in the trace" % (bad, n))


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"match": cmd_match, "counts": cmd_counts, "touch": cmd_touch,
     "events": cmd_events, "touch-before": cmd_touch_before,
     "touch-at-exit": cmd_touch_at_exit, "same-calls": cmd_same_calls,
     "same-stacks": cmd_same_stacks,
     "order": cmd_order, "files": cmd_files}[cmd](*args)


if __name__ == "__main__":
    main()
