#!/usr/bin/env python3
"""A replay loaded as it runs against the same trace loaded whole.

    samerun.py WHOLE.json STREAMED.json [NAME]

Both written by vmreplay --json (the second with a small --window, so
that the trace is loaded as it is replayed): every run of both replays
the same ops with the same errors, touches the same pages, skips and
diverges as often (the same divergences), and the median minor faults
of the replay threads themselves (getrusage: what the replayed calls and
touches took: a run's minor_faults) agree within 1% + 20 + 4 per
process (not sanitized, SAN=1): a replay process forked for a recorded
process may fault on pages of elements loaded after its fork.  (Not
vmreplay's own set-up around them, "setup", which differs between a
load kept private and one shared as it streams: python3 -c, 41
processes, took 9,406-9,499 faults in its replay threads both ways, and
11,750-12,165 with the set-up, the streamed replay from 370 fewer here
to 316 more on another machine.)  Prints one line; exit 1 on a
difference.
"""
import json
import os
import sys


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def facts(run):
    ops = {k: (v["count"], v["errors"]) for k, v in run["ops"].items()}
    return {"ops": ops, "events": run["events"], "touched_pages": run["touched_pages"],
            "touch_faults": run["touch_faults"], "skipped": run["skipped"],
            "divergences": run["divergences"]}


def main():
    whole, streamed = (json.load(open(p)) for p in sys.argv[1:3])
    name = sys.argv[3] if len(sys.argv) > 3 else "replay"
    want = facts(whole["median"])
    bad = []
    for i, run in enumerate(streamed["runs"] + whole["runs"]):
        got = facts(run)
        for k in want:
            if got[k] != want[k]:
                bad.append("run %d %s: %s, whole: %s" % (i + 1, k, got[k], want[k]))
    dw = [(d["event"], d["text"]) for d in whole["median"]["divergence_list"]]
    ds = [(d["event"], d["text"]) for d in streamed["median"]["divergence_list"]]
    if dw != ds:
        bad.append("divergences %s, whole: %s" % (ds, dw))
    fw, fs = (median(r["minor_faults"] for r in x["runs"]) for x in (whole, streamed))
    tol = fw * 0.01 + 20 + 4 * whole.get("processes", 1)
    # (sanitized, the faults are mostly the sanitizer's)
    if abs(fs - fw) > tol and os.environ.get("SAN") != "1":
        bad.append("minor faults %d, whole %d" % (fs, fw))
    print("%s: streamed %d ops, %d minor faults in its threads; whole %d ops, %d%s" % (
        name, streamed["median"]["events"], fs, whole["median"]["events"], fw,
        "".join("; " + b for b in bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
