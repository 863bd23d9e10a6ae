#!/usr/bin/env python3
"""What the kernel counted for a recorded program, for counters.py.

    rusage_run.py wait4 FILE -- CMD [ARG...]
        run CMD as a child, wait for it with wait4 and write its rusage
        (minflt majflt nvcsw nivcsw: its own and its waited-for children's,
        as a parent gets them) to FILE; exit with CMD's status
    rusage_run.py proc FILE -- VMREC [OPTION...] -- PROGRAM [ARG...]
        run the vmrec command line, which records PROGRAM; once PROGRAM
        prints "ready" (forkexec --sleep-ms, whose work is then done), read
        /proc of the recorded process (its stat: faults of itself and of
        its children; its status: the main thread's switches) into FILE,
        end it with SIGTERM, wait for vmrec and exit with vmrec's status
"""
import os
import signal
import subprocess
import sys


def wait4(path, cmd):
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    with open(path, "w") as f:
        f.write("%d %d %d %d\n" % (ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw, ru.ru_nivcsw))
    return os.waitstatus_to_exitcode(status) & 0xff


def children(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def proc(path, cmd):
    prog = cmd[cmd.index("--") + 1]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    target = None
    for line in p.stdout:
        if line.strip() == "ready":
            break
    else:
        print("the program never said it was ready", file=sys.stderr)
        return 2
    # The recorded program: vmrec's child that runs PROGRAM (not its
    # keeper, the stream backend's other child).
    for c in children(p.pid):
        try:
            if os.path.realpath("/proc/%d/exe" % c) == os.path.realpath(prog):
                target = c
        except OSError:
            pass
    if target is None:
        print("no child of vmrec runs %s" % prog, file=sys.stderr)
        p.kill()
        return 2
    with open("/proc/%d/stat" % target) as f:
        st = f.read()
    w = st[st.rindex(")") + 2:].split()
    # (fields from 3 on: minflt is field 10, i.e. w[7]; cminflt w[8],
    # majflt w[9], cmajflt w[10])
    with open("/proc/%d/status" % target) as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    with open(path, "w") as f:
        f.write("self %s %s\n" % (w[7], w[9]))
        f.write("children %s %s\n" % (w[8], w[10]))
        f.write("main %d %d\n" % (int(status["voluntary_ctxt_switches"]),
                                   int(status["nonvoluntary_ctxt_switches"])))
    os.kill(target, signal.SIGTERM)
    for _ in p.stdout:
        pass
    return p.wait()


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] in ("wait4", "proc") and a[2] == "--":
        return (wait4 if a[0] == "wait4" else proc)(a[1], a[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
