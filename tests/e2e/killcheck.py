#!/usr/bin/env python3
"""The checks of killed.sh, on the stamps file of tests/workloads/pacer:

  killcheck.py kill STAMPS PID      wait until every process of the tree has
                                    made calls, SIGKILL PID (vmrec), print the
                                    CLOCK_MONOTONIC ns of the kill
  killcheck.py prefix STAMPS TRACE KILL_NS
                                    every call that returned 100 ms or more
                                    before the kill is in TRACE
  killcheck.py ended STAMPS         every process of the tree has ended
  killcheck.py wait STAMPS N        until every worker has made N more calls
                                    than now (N calls in all for a file that
                                    is not there yet)
  killcheck.py stop STAMPS          ask the workers to stop (the stop word)
  killcheck.py total STAMPS         the calls made, in all

Waits are counted conditions with generous bounds, not timings: a slow or
loaded machine makes them wait longer, not fail."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

SLACK_NS = 100_000_000  # vmrec.1: a chunk at least every 100 ms
CALL = re.compile(r'^\{"kind":"syscall",.*?"proc":(\d+),.*?"op":"madvise","args":\[(\d+),')


def slots(path, with_stamps=False):
    """[(pid, page, done, stamps)] of every worker (stamps only when asked:
    the file is large), or None before the header."""
    try:
        f = open(path, 'rb')
    except FileNotFoundError:
        return None
    with f:
        b = f.read(40)
        if len(b) < 40 or b[:8] != b'pacer1\0\0':
            return None
        procs, threads, calls = struct.unpack_from('<3Q', b, 8)
        per = 3 + calls
        out = []
        for s in range(procs * threads):
            off = 40 + s * per * 8
            f.seek(off)
            pid, page, done = struct.unpack('<3Q', f.read(24))
            done = min(done, calls)
            stamps = struct.unpack('<%dQ' % done, f.read(8 * done)) if with_stamps else ()
            out.append((pid, page, done, stamps))
        return out


def wait(stamps, n):
    n = int(n)
    s = slots(stamps)
    base = [w[2] for w in s] if s else None
    for _ in range(12000):
        s = slots(stamps)
        if s and all(w[0] for w in s):
            if base is None:
                base = [0] * len(s)
            if all(w[2] >= b + n for w, b in zip(s, base)):
                return
        time.sleep(0.01)
    sys.exit('the workers did not make %d calls in 120 s' % n)


def stop(stamps):
    with open(stamps, 'r+b') as f:
        f.seek(32)
        f.write(struct.pack('<Q', 1))


def kill(stamps, pid):
    # every worker has started and made 50 calls (a loaded machine just
    # takes longer), then a little more so the busy one fills chunks
    for _ in range(12000):
        s = slots(stamps)
        if s and all(w[0] and w[2] >= 50 for w in s):
            break
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit('vmrec ended before the program got going')
        time.sleep(0.01)
    else:
        sys.exit('the program did not get going in 120 s')
    time.sleep(0.5)
    t = time.monotonic_ns()
    os.kill(pid, signal.SIGKILL)
    print(t)


def prefix(stamps, trace, kill_ns):
    kill_ns = int(kill_ns)
    vmtrace = os.environ.get('VMTRACE', 'vmtrace')
    p = subprocess.run([vmtrace, 'dump', '--json', trace], capture_output=True, text=True)
    if 'truncated' not in p.stderr and p.returncode != 0:
        sys.exit('dump: exit %d: %s' % (p.returncode, p.stderr.strip()))
    os_pid, got = {}, {}
    for line in p.stdout.splitlines():
        if '"process_start"' in line:
            e = json.loads(line)
            os_pid[e['proc']] = e['os_pid']
        elif '"madvise"' in line:
            m = CALL.search(line)  # (json.loads is too slow for millions)
            if m:
                k = (os_pid.get(int(m.group(1))), int(m.group(2)))
                got[k] = got.get(k, 0) + 1
    bad = []
    for pid, page, done, st in slots(stamps, True):
        due = sum(1 for t in st if t <= kill_ns - SLACK_NS)
        have = got.get((pid, page), 0)
        print('pid %d page %#x: %d calls made, %d due by kill-100ms, %d in the trace'
              % (pid, page, done, due, have))
        if have < due:
            bad.append('pid %d: %d of %d due calls' % (pid, have, due))
    if bad:
        sys.exit('; '.join(bad))


def gone(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except (FileNotFoundError, ProcessLookupError):
        return True


def ended(stamps):
    pids = sorted({w[0] for w in slots(stamps) if w[0]})
    for _ in range(3000):
        left = [p for p in pids if not gone(p)]
        if not left:
            print('all %d processes ended' % len(pids))
            return
        time.sleep(0.01)
    for p in left:  # (so that they do not run on after the test)
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    sys.exit('still running 30 s after vmrec was killed: %s' % left)


if __name__ == '__main__':
    cmd, args = sys.argv[1], sys.argv[2:]
    {'kill': lambda: kill(args[0], int(args[1])),
     'prefix': lambda: prefix(*args),
     'ended': lambda: ended(args[0]),
     'wait': lambda: wait(*args),
     'stop': lambda: stop(args[0]),
     'total': lambda: print(sum(w[2] for w in slots(args[0])))}[cmd]()
