#!/usr/bin/env python3
# A stand-in for qemu-system-x86_64 in tests/e2e/vm.sh: what vmreplay
# --kernel sees of qemu (its console on stdout, the results port on the
# -chardev file path, its exit), without a kernel.  FAKE_MODE says what it
# plays:
#   hang      start a child (its pid in FAKE_CHILD), then sleep forever
#   panic     the console of a kernel that panics, exit 0 (as with -no-reboot)
#   oom       the console of a guest's out-of-memory kill, then the panic
#   qemufail  qemu's own error on stderr, exit 1
#   garbage   bytes on the results port that are not frames
#   guest     the frames of a guest that replayed: hello, release 9.9.9-fake,
#             3 CPUs, a setting it could not set, output, what else ran
#             there, JSON, exit status FAKE_STATUS (default 0)
#   badtrace  a guest whose replay found the trace bad (status 2)
#   silent    nothing on the console, exit 0: a kernel that resets at once
#             (a triple fault, with -no-reboot)
# FAKE_MODES ("IMAGE=MODE,...") gives the mode by the -kernel image's file
# name instead, for several kernels in one vmreplay.  It also copies the
# initramfs (-initrd) to FAKE_INITRD if set, and its command line to
# FAKE_ARGS.
# `fakeqemu.py --bzimage FILE` writes a file with an x86 boot header, all
# that vmreplay checks of an image before qemu runs (its init_size: 100
# MiB), to give the fake as -kernel.
import os
import sys
import time

if sys.argv[1:2] == ["--bzimage"]:
    h = bytearray(0x500)  # more than its header gives: as if signed, no CRC check
    h[0x1f1] = 1
    h[0x1fe:0x200] = b"\x55\xaa"
    h[0x202:0x206] = b"HdrS"
    h[0x206:0x208] = (0x20f).to_bytes(2, "little")
    h[0x236] = 1
    h[0x258:0x260] = (16 << 20).to_bytes(8, "little")
    h[0x260:0x264] = (100 << 20).to_bytes(4, "little")
    with open(sys.argv[2], "wb") as f:
        f.write(h)
    sys.exit(0)

args = sys.argv[1:]
mode = os.environ.get("FAKE_MODE", "hang")
opt = {}
for i, a in enumerate(args[:-1]):
    if a.startswith("-"):
        opt.setdefault(a, args[i + 1])
for m in os.environ.get("FAKE_MODES", "").split(","):
    name, _, m = m.partition("=")
    if name and name == os.path.basename(opt.get("-kernel", "")):
        mode = m
res_path = None
for i, a in enumerate(args):
    if a == "-chardev" and "id=res" in args[i + 1]:
        res_path = args[i + 1].split("path=", 1)[1]
if os.environ.get("FAKE_ARGS"):
    with open(os.environ["FAKE_ARGS"], "w") as f:
        f.write("\n".join(args) + "\n")
if os.environ.get("FAKE_INITRD"):
    with open(opt["-initrd"], "rb") as i, open(os.environ["FAKE_INITRD"], "wb") as o:
        o.write(i.read())


def con(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def frames(*fs):
    with open(res_path, "wb") as r:
        for t, body in fs:
            r.write(b"@@%s %d\n" % (t.encode(), len(body)) + body + b"\n")


if mode == "silent":
    sys.exit(0)
con("[    0.000000] Linux version 9.9.9-fake (test)")
if mode == "hang":
    pid = os.fork()
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    if os.environ.get("FAKE_CHILD"):
        with open(os.environ["FAKE_CHILD"], "w") as f:
            f.write("%d\n" % pid)
    time.sleep(1000)
elif mode == "panic":
    con("[    0.512345] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)")
    con("[    0.512400] ---[ end Kernel panic - not syncing: VFS: Unable to mount root fs ]---")
elif mode == "oom":
    frames(("H", b"1"), ("U", b"9.9.9-fake"), ("N", b"3"))
    con("[    3.100000] Out of memory: Killed process 77 (vmreplay) total-vm:9000kB")
    con("[    3.200000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009")
elif mode == "qemufail":
    sys.stderr.write("qemu-system-x86_64: -m 1024M: cannot set up guest memory 'pc.ram'\n")
    sys.exit(1)
elif mode == "garbage":
    with open(res_path, "wb") as r:
        r.write(b"not a frame\n")
    time.sleep(1000)
elif mode == "guest":
    status = os.environ.get("FAKE_STATUS", "0").encode()
    frames(("H", b"1"), ("U", b"9.9.9-fake"), ("N", b"3"), ("T", b""),
           ("W", b"/sys/kernel/mm/transparent_hugepage/defrag=madvise: Invalid argument"),
           ("O", b"replayed by a fake guest\n"), ("E", b"a warning from the guest\n"),
           ("Q", b"others_ns=300000000 elapsed_ns=4000000000 cpus=3 replay_cpu_ns=9"),
           ("J", b'{"trace":"t.zst","kernel":"9.9.9-fake","cpus":3,"mm":"thp=madvise",'
                 b'"runs":[{"wall_ns":5,"minor_faults":7}],"median":{"wall_ns":5}}\n'),
           ("X", status))
    con("[    4.000000] reboot: Power down")
elif mode == "badtrace":
    frames(("H", b"1"), ("U", b"9.9.9-fake"), ("N", b"3"),
           ("E", b"vmreplay: 't.zst': truncated at byte 99\n"), ("X", b"2"))
