#!/usr/bin/env python3
"""A corpus program's replay against its native runs.

    judge.py faults NATIVE.json REPLAY.json [STAT.json]
                                              replay minor faults (median)
                                              within 2% of the recorded
                                              run's own (the trace's
                                              COUNTERS, from vmreplay's
                                              fidelity section), else of
                                              native (median); native is
                                              printed beside; STAT.json
                                              (vmtrace stat --json) adds
                                              the trace's FAULT events
    judge.py div REPLAY.json                  0 divergences in every run
    judge.py speed NATIVE.json REPLAY.json STAT.json
                                              the --speed=1 replay's wall
                                              time against the recorded
                                              run's (STAT.json's duration)
                                              and native: printed, fails
                                              only if the replay did not run
                                              at recorded speed (under half
                                              the recorded time)
    judge.py row NAME NATIVE.json REPLAY.json RECWALL_NS SPEED.json STAT.json
                                              one bench/corpus.sh row

NATIVE.json is written by native.py, REPLAY.json by vmreplay --json.
"""
import json
import sys

TOLERANCE = 0.02


def load(path):
    with open(path) as f:
        return json.load(f)


def recorded_faults(rep):
    """The recorded run's own minor faults (its COUNTERS), or None."""
    fid = rep.get("fidelity") or {}
    m = (fid.get("total") or {}).get("minor_faults") if fid.get("recorded") else None
    return m["recorded"] if m and m.get("recorded") else None


def faults(nat, rep, stat=None):
    # The yardstick is the recorded run itself: a program's native runs
    # spread (a JVM by 20%), its recording is the run the trace holds.
    n, r, rec = nat["minor_faults"], rep["median"]["minor_faults"], recorded_faults(rep)
    base = rec if rec else n
    ratio = r / base if base else 0.0
    line = "replay %d minor faults, %s %d (ratio %.3f, want %.2f-%.2f); native %d (%.3f), runs %s; replay runs %s" % (
        r, "the recorded run's" if rec else "native", base, ratio, 1 - TOLERANCE, 1 + TOLERANCE,
        n, r / n if n else 0.0, ",".join(str(x["minor_faults"]) for x in nat["runs"]),
        ",".join(str(x["minor_faults"]) for x in rep["runs"]))
    if stat and "faults" in stat:
        line += "; FAULT events %d" % stat["faults"]["total"]
    print(line)
    return 0 if abs(ratio - 1) <= TOLERANCE else 1


def div(rep):
    d = [x["divergences"] for x in rep["runs"]]
    print("divergences per run: %s" % d)
    return 0 if not any(d) else 1


def speed(nat, rep, stat):
    w, n, d = rep["median"]["wall_ns"], nat["wall_ns"], stat["duration_ns"]
    print("--speed=1 replay wall %.1f ms, the recorded run's %.1f ms (ratio %.2f), native %.1f ms"
          % (w / 1e6, d / 1e6, w / d if d else 0, n / 1e6))
    return 0 if w >= d / 2 else 1


def fid_ratio(rep, key):
    """replay/recorded of the fidelity section's total KEY ("-" when the
    trace has no counters or the recorded value is 0)."""
    fid = rep.get("fidelity") or {}
    if key == "wall":
        x = fid.get("wall_ns")
    else:
        x = (fid.get("total") or {}).get(key) if fid.get("recorded") else None
    return "%.3f" % x["ratio"] if x and x.get("recorded") else "-"


def row(name, nat, rep, recwall, spd, stat):
    n, r = nat["minor_faults"], rep["median"]["minor_faults"]
    rec = recorded_faults(rep)
    print("%-10s %9d %9s %9d %7.3f %7s %7s %7s %7s %7s %7s %5d %8.2f" % (
        name, n, rec if rec else "-", r, r / n if n else 0, fid_ratio(rep, "minor_faults"),
        fid_ratio(rep, "voluntary_cs"), fid_ratio(rep, "involuntary_cs"),
        fid_ratio(spd, "voluntary_cs"), fid_ratio(spd, "involuntary_cs"), fid_ratio(spd, "wall"),
        rep["median"]["divergences"], recwall / nat["wall_ns"]))
    return 0


def main():
    a = sys.argv
    if a[1] == "faults":
        return faults(load(a[2]), load(a[3]), load(a[4]) if len(a) > 4 else None)
    if a[1] == "div":
        return div(load(a[2]))
    if a[1] == "speed":
        return speed(load(a[2]), load(a[3]), load(a[4]))
    if a[1] == "row":
        return row(a[2], load(a[3]), load(a[4]), int(a[5]), load(a[6]), load(a[7]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
