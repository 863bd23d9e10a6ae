#!/usr/bin/env python3
"""Native runs of a command: its exit status, minor faults and wall time.

    native.py N OUT.json -- CMD [ARG...]

Runs CMD N times (its stdout and stderr to /dev/null) and writes to OUT.json
"status" (that of the last run), "minor_faults" and "major_faults" (median
over the runs, of the whole process tree: getrusage RUSAGE_CHILDREN, which
counts every descendant that was waited for) and "wall_ns" (median), with
the per-run lists beside them.
"""
import json
import resource
import statistics
import subprocess
import sys
import time


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[4:]
    runs = []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic_ns()
        rc = subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic_ns() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        status = rc if rc >= 0 else 128 - rc
        runs.append({"status": status, "wall_ns": wall,
                     "minor_faults": after.ru_minflt - before.ru_minflt,
                     "major_faults": after.ru_majflt - before.ru_majflt})
    res = {"status": runs[-1]["status"], "runs": runs}
    for k in ("minor_faults", "major_faults", "wall_ns"):
        res[k] = int(statistics.median_low(r[k] for r in runs))
    with open(out, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
