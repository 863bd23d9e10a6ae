#!/bin/sh
# vmreplay --kernel: the options in --help and the man page; the guest's
# vmreplay is static and the host's is not; one clear error for a missing
# or bad image, missing qemu, a guest that hangs, panics, runs out of
# memory or says nothing sensible (with tests/e2e/fakeqemu.py standing in
# for qemu); and, where qemu and a kernel image are installed
# (mk/kernel.sh), a small replay on that kernel, a guest that hangs ended
# by --vm-timeout, and the guest's errors passed on.  Several kernels in
# one command: tests/e2e/kernels.sh.
. "$(dirname "$0")/common.inc"
need vm "$VMREPLAY" "$VMREC" "$B/vmreplay-static" || exit 0
STATIC=$B/vmreplay-static
KERNEL=${VMREC_KERNEL:-/var/cache/vmrec/vmlinuz-6.1}

one_line() { # NAME PATTERN: stderr of the last check_exit is one matching line
	if [ "$(wc -l < "$T/err")" -eq 1 ] && grep -q -- "$2" "$T/err"; then ok "$1"
	else not_ok "$1" "stderr is not one line matching '$2'"; show "$T/err"; fi
}

# ---- options, build ---------------------------------------------------------
check_exit help 0 "$VMREPLAY" --help
missing=
for opt in --kernel= --vm-cpus= --vm-memory= --vm-accel= --vm-timeout= --vm-console= \
	--host --vm-jobs= --vm-sysctl= --vm-cmdline=; do
	grep -q -- "$opt" "$T/out" || missing="$missing help:$opt"
	grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" man/vmreplay.1 || missing="$missing man:$opt"
done
for env in VMREPLAY_QEMU VMREPLAY_STATIC; do
	grep -q "$env" man/vmreplay.1 || missing="$missing man:$env"
done
if [ -z "$missing" ]; then ok help-and-man-list-vm-options
else not_ok help-and-man-list-vm-options "missing$missing"; fi

if command -v readelf > /dev/null 2>&1; then
	if readelf -l "$STATIC" | grep -q 'program interpreter'; then
		not_ok static-has-no-interpreter "$STATIC asks for an ELF interpreter"
	else ok static-has-no-interpreter; fi
	if readelf -l "$VMREPLAY" | grep -q 'program interpreter'; then ok host-vmreplay-dynamic
	else not_ok host-vmreplay-dynamic "$VMREPLAY is static"; fi
else
	skip static-has-no-interpreter "readelf is not installed"
fi
check_exit static-runs 0 "$STATIC" -q $D/seed000-old.zst

# ---- errors before qemu ----------------------------------------------------------
check_exit vm-opt-needs-kernel 2 "$VMREPLAY" --vm-cpus=2 $D/seed000-old.zst
grep -q "^vmreplay: --vm-cpus needs --kernel" "$T/err" && ok vm-opt-needs-kernel-message ||
	{ not_ok vm-opt-needs-kernel-message "no message"; show "$T/err"; }
check_exit missing-image 2 "$VMREPLAY" --kernel=/nonexistent/vmlinuz $D/seed000-old.zst
one_line missing-image-message "^vmreplay: --kernel: '/nonexistent/vmlinuz': No such file or directory$"
check_exit not-a-kernel 2 "$VMREPLAY" --kernel=$D/seed000-old.zst $D/seed000-old.zst
one_line not-a-kernel-message "^vmreplay: --kernel: '$D/seed000-old.zst': not a bootable x86 kernel image"

# A file with a bzImage boot header (for the checks made before qemu runs).
python3 tests/e2e/fakeqemu.py --bzimage "$T/fake.bzImage"
FAKE=$T/fake.bzImage
check_exit missing-trace 2 "$VMREPLAY" --kernel=$FAKE "$T/none.zst"
one_line missing-trace-message "^vmreplay: '$T/none.zst': No such file or directory$"
check_exit no-qemu 1 env PATH=/nonexistent "$VMREPLAY" --kernel=$FAKE $D/seed000-old.zst
one_line no-qemu-message "^vmreplay: qemu-system-x86_64 is not installed (not in PATH); on Debian: apt-get install qemu-system-x86$"
check_exit dynamic-guest 1 env VMREPLAY_STATIC="$VMREPLAY" "$VMREPLAY" --kernel=$FAKE $D/seed000-old.zst
one_line dynamic-guest-message "is linked dynamically: the guest has no libraries"
check_exit memory-for-kernel 2 "$VMREPLAY" --kernel=$FAKE --vm-memory=128M --vm-accel=tcg \
	--max-memory=1G $D/seed000-old.zst
one_line memory-for-kernel-message "^vmreplay: --vm-memory=128M is too little for this kernel"

# ---- what qemu and the guest may do (a fake qemu) -----------------------------------
mkdir -p "$T/bin"
ln -s "$PWD/tests/e2e/fakeqemu.py" "$T/bin/qemu-system-x86_64"
fake() { # MODE WANT-EXIT VMREPLAY-ARG...: run vmreplay with the fake qemu in PATH
	_mode=$1 _want=$2
	shift 2
	_start=$(date +%s)
	check_exit "fake-$_mode" "$_want" env PATH="$T/bin:$PATH" FAKE_MODE=$_mode \
		FAKE_CHILD="$T/child" FAKE_INITRD="$T/initrd" FAKE_ARGS="$T/qargs" \
		"$VMREPLAY" --kernel=$FAKE --vm-accel=tcg "$@"
	_secs=$(($(date +%s) - _start))
}
fake hang 1 --vm-timeout=5 $D/seed000-old.zst
one_line hang-message "^vmreplay: the guest did not finish within 5 s (--vm-timeout); it was ended$"
# (ended, not waited for: a loaded machine may take longer than the 2 s)
if [ "$_secs" -le 30 ]; then ok hang-ended-in-time; else not_ok hang-ended-in-time "took $_secs s"; fi
gone() { # PID: not running (gone, or a zombie nobody reaped yet)
	! kill -0 "$1" 2> /dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2> /dev/null)" = Z ]
}
if [ -s "$T/child" ] && wait_for gone "$(cat "$T/child")"; then ok hang-child-killed
else not_ok hang-child-killed "qemu's child $(cat "$T/child" 2>/dev/null) outlived it"; fi
check qemu-args sh -c "grep -qx -- '-no-reboot' $T/qargs && grep -qx -- 'tcg' $T/qargs &&
	grep -qx -- '-nodefaults' $T/qargs && grep -q 'console=ttyS0 .*panic=-1' $T/qargs"

fake panic 1 --vm-console="$T/console.txt" $D/seed000-old.zst
check vm-console grep -q '^\[    0.512345\] Kernel panic - not syncing: VFS' "$T/console.txt"
one_line panic-message "^vmreplay: the guest kernel panicked: Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)$"
fake oom 1 --vm-memory=256M $D/seed000-old.zst
one_line oom-message "^vmreplay: the guest ran out of memory (256M; give it more with --vm-memory): Out of memory: Killed process 77 (vmreplay)"
fake qemufail 1 $D/seed000-old.zst
one_line qemufail-message "^vmreplay: qemu failed: qemu-system-x86_64: -m 1024M: cannot set up guest memory 'pc.ram'$"
fake garbage 1 --vm-timeout=20 $D/seed000-old.zst
one_line garbage-message "^vmreplay: the guest's results port sent bytes that are not results"
cp $D/seed000-old.zst "$T/t.zst"
(cd "$T" && fake guest 0 --json=g.json --vm-cpus=3 --vm-memory=512M t.zst)
check fake-guest-output sh -c "head -1 $T/out | grep -qx 'guest: Linux 9.9.9-fake, 3 CPUs, 512M memory, qemu tcg (emulated: compare counts and ratios, not times)' &&
	grep -qx 'replayed by a fake guest' $T/out && grep -qx 'a warning from the guest' $T/err"
check fake-guest-json python3 -c "
import json
d = json.load(open('$T/g.json'))
assert d['kernel'] == '9.9.9-fake' and d['runs'][0]['wall_ns'] == 5, d
vm = d['vm']
assert vm['accel'] == 'tcg' and vm['cpus'] == 3 and vm['memory_bytes'] == 512 << 20, vm
assert vm['image'] == '$FAKE' and vm['qemu'] == '$T/bin/qemu-system-x86_64', vm
# what the guest could not set, and what else ran there (0.3 s of 3 CPUs' 4 s)
assert vm['mm_unset'].endswith('defrag=madvise: Invalid argument'), vm
assert abs(vm['noise']['others_pct'] - 2.5) < 1e-6, vm['noise']
"
grep -qx "vmreplay: the guest could not set: /sys/kernel/mm/transparent_hugepage/defrag=madvise: Invalid argument" "$T/err" &&
	ok fake-guest-unset-said || { not_ok fake-guest-unset-said "not on stderr"; show "$T/err"; }
# The initramfs: /init is the static vmreplay; the trace at its absolute
# path; the replay's command line names it as given here.
check fake-guest-initramfs python3 -c "
import os
a = open('$T/initrd', 'rb').read()
files, o = {}, 0
while True:
    assert a[o:o + 6] == b'070701'
    f = [int(a[o + 6 + 8 * i:o + 14 + 8 * i], 16) for i in range(13)]
    name = a[o + 110:o + 110 + f[11] - 1].decode()
    d = (o + 110 + f[11] + 3) & ~3
    if name == 'TRAILER!!!':
        break
    files[name] = (f[1], a[d:d + f[6]])
    o = (d + f[6] + 3) & ~3
assert files['init'][1] == open('$STATIC', 'rb').read()
assert files['init'][0] & 0o777 == 0o755
assert files['$T/t.zst'.lstrip('/')][1] == open('$T/t.zst', 'rb').read()
args = files['.vmreplay/args'][1].split(b'\0')[:-1]
assert args[-2:] == [b'--', b't.zst'] and b'--json=/.vmreplay/results.json' in args, args
assert files['.vmreplay/cwd'][1] == os.path.realpath('$T').encode()
assert files['dev/ttyS1'][0] == 0o20600
"
(cd "$T" && FAKE_STATUS=2 fake guest 2 --json=g2.json t.zst)
check fake-guest-status-no-json test ! -e "$T/g2.json"
# The recorded mm settings go to the guest's /init, with --vm-sysctl over
# them, and --vm-cmdline to the kernel's command line.
rec mm -- "$W/seed000" --mode old --threads 1 --iterations 10
(cd "$T" && fake guest 0 --vm-sysctl=thp_shmem=advise --vm-sysctl=vm.max_map_count=70000 \
	--vm-sysctl=overcommit= --vm-cmdline=mitigations=off mm.zst)
"$VMTRACE" dump "$T/mm.zst" 2> /dev/null | sed -n 2p > "$T/mm.header"
check fake-guest-settings python3 - "$T" <<'EOF'
import sys
T = sys.argv[1]
words = dict(w.split('=', 1) for w in open(T + '/mm.header').read().split() if '=' in w)
a = open(T + '/initrd', 'rb').read()
files, o = {}, 0
while True:
    f = [int(a[o + 6 + 8 * i:o + 14 + 8 * i], 16) for i in range(13)]
    name = a[o + 110:o + 110 + f[11] - 1].decode()
    d = (o + 110 + f[11] + 3) & ~3
    if name == 'TRAILER!!!':
        break
    files[name] = a[d:d + f[6]]
    o = (d + f[6] + 3) & ~3
got = files['.vmreplay/sysctl'].split(b'\0')[:-1]
# the recorded THP modes, --vm-sysctl's shmem mode, no overcommit (an
# empty value: the guest's own), then the other sysctl
want = [b'/sys/kernel/mm/transparent_hugepage/enabled=' + words['thp'].encode(),
        b'/sys/kernel/mm/transparent_hugepage/defrag=' + words['thp_defrag'].encode(),
        b'/sys/kernel/mm/transparent_hugepage/shmem_enabled=advise',
        b'/proc/sys/vm/max_map_count=70000']
assert got == want, (got, want)
q = open(T + '/qargs').read()
assert 'rdinit=/init mitigations=off' in q or 'tsc=reliable mitigations=off' in q, q
EOF
grep -q "^guest settings: thp=.* thp_shmem=advise (recorded: overcommit=.* thp_shmem=" "$T/out" &&
	ok fake-guest-settings-said || { not_ok fake-guest-settings-said "no settings line"; show "$T/out"; }

# ---- a real guest -------------------------------------------------------------------------
if [ "$(uname -m)" != x86_64 ]; then
	skip vm-guest "the guest runs an x86-64 vmreplay; this is $(uname -m)"; exit 0
fi
if ! command -v qemu-system-x86_64 > /dev/null 2>&1; then
	skip vm-guest "qemu-system-x86_64 is not installed (as root: apt-get install qemu-system-x86)"
	exit 0
fi
if [ ! -r "$KERNEL" ]; then
	skip vm-guest "no kernel image at $KERNEL (as root: sh mk/kernel.sh, or set VMREC_KERNEL)"
	exit 0
fi
rec old --touch=resident -- "$W/seed000" --mode old --threads 2 --iterations 2000
[ "$rc" = 0 ] || { not_ok vm-record "vmrec exited $rc"; show "$T/old.err"; exit 0; }
check_exit vm-host-replay 0 "$VMREPLAY" -q --json="$T/host.json" "$T/old.zst"
# The default accelerator: KVM where it boots, else TCG after a retry.
(cd "$T" && check_exit vm-replay 0 "$VMREPLAY" --kernel="$KERNEL" --vm-cpus=2 --no-progress \
	--repeat=1 --json=guest.json old.zst)
check vm-replay-report sh -c "head -1 $T/out | grep -q '^guest: Linux 6\.1\..*, 2 CPUs, [0-9]*[MG] memory, qemu ' &&
	sed -n 2p $T/out | grep -q '^guest settings: overcommit=.* thp=.* (as recorded)' &&
	grep -q '^replayed [0-9]* ops of [0-9]* events: 3 threads, 1 process;' $T/out &&
	grep -q '^mprotect  *[0-9]' $T/out && tail -1 $T/out | grep -q '^wall .* divergences 0$'"
check vm-replay-json python3 -c "
import json
d = json.load(open('$T/guest.json'))
h = json.load(open('$T/host.json'))
assert d['kernel'].startswith('6.1.') and d['cpus'] == 2, (d['kernel'], d['cpus'])
assert d['trace'] == 'old.zst' and len(d['runs']) == 1, d['trace']
assert d['median']['divergences'] == 0
ops = lambda r: {k: v['count'] for k, v in r['median']['ops'].items()}
assert ops(d) == ops(h) and ops(d)['mprotect'] > 4000, (ops(d), ops(h))
assert d['vm']['accel'] in ('kvm', 'tcg') and d['vm']['cpus'] == 2, d['vm']
assert d['vm']['image_version'].startswith('6.1.'), d['vm']
assert h['kernel'] == '$(uname -r)' and 'vm' not in h
"
# This kernel's replay and the guest's, compared.
check_exit vm-diff 0 "$VMTRACE" diff "$T/host.json" "$T/guest.json"
check vm-diff-rows sh -c "grep -q '^wall_ns ' $T/out && grep -q '^ops.mprotect.count .* 1.00 .*too few runs' $T/out &&
	grep -q '^base .*: 1 run on Linux $(uname -r)' $T/out && grep -q '^new .*: 1 run on Linux 6\.1\.' $T/out"
# A guest that does not end is ended by --vm-timeout, and nothing of it is
# left behind (its image by a name of this test's own, to tell its qemu
# from others').
ln -s "$KERNEL" "$T/vmlinuz"
_start=$(date +%s)
(cd "$T" && check_exit vm-timeout 1 "$VMREPLAY" --kernel="$T/vmlinuz" --vm-accel=tcg --vm-cpus=1 \
	--speed=0.0001 --vm-timeout=8 old.zst)
_secs=$(($(date +%s) - _start))
one_line vm-timeout-message "^vmreplay: the guest did not finish within 8 s (--vm-timeout); it was ended$"
if [ "$_secs" -le 14 ]; then ok vm-timeout-in-time; else not_ok vm-timeout-in-time "took $_secs s"; fi
if pgrep -f -- "-kernel $T/vmlinuz" > /dev/null 2>&1; then
	not_ok vm-timeout-qemu-gone "a qemu is still running: $(pgrep -af -- "-kernel $T/vmlinuz")"
else ok vm-timeout-qemu-gone; fi
# The guest replay's own errors come back as they are.
cp "$D/truncated.zst" "$T/truncated.zst"
# (--vm-memory given, this machine does not load the trace: the guest finds it bad)
(cd "$T" && check_exit vm-guest-error 2 "$VMREPLAY" --kernel="$KERNEL" --vm-accel=tcg \
	--vm-cpus=1 --vm-memory=512M -q truncated.zst)
one_line vm-guest-error-message "^vmreplay: 'truncated.zst': truncated at byte [0-9]"
exit 0
