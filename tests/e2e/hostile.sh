#!/bin/sh
# Hostile traces: every program that reads traces gets random-but-valid
# event streams (absurd addresses and lengths, unknown threads, dangling
# ids), damaged files (bit flips, cuts) and garbage, and must end with a
# clean exit status (0, 1 or 2) and, when it fails, a message naming the
# file — never a signal, a hang or a sanitizer report.
. "$(dirname "$0")/common.inc"

run() { # NAME TRACE
	name=$1 f=$2
	for cmd in "dump" "dump --json" "stat" "stat --json" "lint" "export --format=perfetto" \
		   "export --format=csv" "plot -o $T/p.svg" "rewrite --rules=prot-none-free,populate,mlock-onfault,dontneed-to-free $f $T/rw.zst"; do
		set -- $cmd
		sub=$1; shift
		if [ "$sub" = rewrite ]; then
			timeout 60 "$VMTRACE" rewrite "$@" > /dev/null 2> "$T/err"
		else
			timeout 60 "$VMTRACE" "$sub" "$@" "$f" > /dev/null 2> "$T/err"
		fi
		rc=$?
		clean_exit "$name vmtrace $sub${1:+ $1}" "$rc"
	done
	timeout 120 "$VMREPLAY" -q --max-memory=1G "$f" > /dev/null 2> "$T/err"
	clean_exit "$name vmreplay" $?
	timeout 120 "$VMTRACE" diff "$f" $D/every-kind.zst > /dev/null 2> "$T/err"
	clean_exit "$name vmtrace diff" $?
}

# NAME RC: RC is 0, 1 or 2 (2 with a message in $T/err), and no sanitizer
# report.
clean_exit() {
	if [ "$2" -le 2 ] && ! grep -q -E 'Sanitizer|runtime error' "$T/err"; then
		if [ "$2" = 2 ] && ! [ -s "$T/err" ]; then
			not_ok "$1" "exit 2 without a message"
		else
			ok "$1"
		fi
	else
		not_ok "$1" "exit $2"; show "$T/err"
	fi
}

# random valid streams
for seed in $(seq 1 "$(san_scale 6 2)"); do
	"$B/mkrandom" "$seed" 3000 "$T/r$seed.zst" || { not_ok "mkrandom $seed" "mkrandom failed"; continue; }
	run "random-$seed" "$T/r$seed.zst"
done
# damaged golden traces: bit flips and cuts
python3 - "$T" "$D" "$(san_scale 6 2)" <<'PY'
import random, sys
d = sys.argv[1]
src = open(sys.argv[2] + '/every-kind.zst', 'rb').read()
rng = random.Random(42)
for i in range(int(sys.argv[3])):
    b = bytearray(src)
    for _ in range(1 + i):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    open(f'{d}/flip{i}.zst', 'wb').write(b)
for i, cut in enumerate((9, 100, len(src) // 2, len(src) - 5)):
    open(f'{d}/cut{i}.zst', 'wb').write(src[:cut])
open(f'{d}/garbage.zst', 'wb').write(bytes(rng.randrange(256) for _ in range(5000)))
PY
for f in "$T"/flip*.zst "$T"/cut*.zst "$T"/garbage.zst; do
	run "$(basename "$f" .zst)" "$f"
done

# ---- command lines ----
# a directory given as a trace: one line saying so, exit 2
for cmd in "$VMTRACE stat" "$VMTRACE dump" "$VMTRACE lint" "$VMREPLAY -q"; do
	check_exit "dir-$(basename "${cmd%% *}")-${cmd##* }" 2 $cmd "$T"
	check "dir-message-$(basename "${cmd%% *}")-${cmd##* }" grep -qx ".*: '$T': is a directory, not a trace" "$T/err"
done
# options after operands, as GNU getopt permutes them
check_exit args-after-dump 0 "$VMTRACE" dump "$D/every-kind.zst" --json
check args-after-dump-json sh -c "head -1 '$T/out' | python3 -c 'import json, sys; json.loads(sys.stdin.read())'"
check_exit args-after-diff 1 "$VMTRACE" diff "$D/seed000-old.zst" "$D/every-kind.zst" --fail-on='events>+0'
check_exit args-after-stat 0 "$VMTRACE" stat "$D/every-kind.zst" --json

# ---- --files=original: a path from a trace is opened only if it is still
# the recorded regular file: here a FIFO in its place (opening it would
# wait forever) is not opened, and the report says so
printf 'data%.0s' $(seq 1024) > "$T/mapped"
if "$VMREC" -q --force -o "$T/orig.zst" -- python3 -c "
import mmap
f = open('$T/mapped', 'rb')
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
m[100]" 2> "$T/orig.err"; then
	rm -f "$T/mapped"
	mkfifo "$T/mapped"
	check_exit orig-fifo 0 timeout 60 "$VMREPLAY" --files=original "$T/orig.zst"
	check orig-fifo-said grep -qx "  '$T/mapped': not a regular file" "$T/out"
	rm -f "$T/mapped"
else
	not_ok orig-fifo "recording failed"; show "$T/orig.err"
fi

# ---- --max-memory bounds what the replay itself takes: a small trace of
# 8,000 threads is refused at 64 MiB before the memory is taken (a
# resource, exit 1, naming the option), and replays within 1 GiB
"$B/mkrandom" threads 8000 "$T/threads.zst"
check_exit maxmem-threads-refused 1 /usr/bin/time -f 'rss %M' "$VMREPLAY" -q --max-memory=64M "$T/threads.zst"
check maxmem-threads-message grep -q "exceeds --max-memory 64.0 MiB\|more than --max-memory 64.0 MiB" "$T/err"
check maxmem-threads-refused-early sh -c "[ \$(sed -n 's/^rss //p' '$T/err') -lt 65536 ]"
check_exit maxmem-threads-fit 0 /usr/bin/time -f 'rss %M' "$VMREPLAY" -q --max-memory=1G "$T/threads.zst"
check maxmem-threads-fit-rss sh -c "[ \$(sed -n 's/^rss //p' '$T/err') -lt 1048576 ]"

# ---- --max-memory counts what the replay reserves: 8 forked children that
# inherit 256 MiB of a read-only file mapping and 128 MiB of shared memory
# replay within 256 MiB (the shared memory once, the file mapping not at
# all; once per process it would be 3 GiB), and not within 100 MiB (the
# shared memory is counted); the same with 128 MiB of each child's own
# private memory is refused at 256 MiB.  (Debian's python3: a wrapper
# script on PATH would add processes of its own.)
PY3=$(command -v python3); [ -x /usr/bin/python3 ] && PY3=/usr/bin/python3
cat > "$T/forkshare.py" <<'PY'
import mmap, os, sys
path, private = sys.argv[1], sys.argv[2] == "private"
with open(path, "wb") as f:
    f.truncate(256 << 20)
ro = mmap.mmap(os.open(path, os.O_RDONLY), 256 << 20, prot=mmap.PROT_READ)
sh = mmap.mmap(-1, 128 << 20)
for i in range(0, 128 << 20, 1 << 20):
    sh[i] = 1
kids = []
for k in range(8):
    pid = os.fork()
    if pid == 0:
        n = sum(ro[i] for i in range(0, 256 << 20, 1 << 20)) + sh[k << 20]
        if private:
            own = mmap.mmap(-1, 128 << 20, flags=mmap.MAP_PRIVATE)
            for i in range(0, 128 << 20, 1 << 20):
                own[i] = 1
        os._exit(n)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
PY
if "$VMREC" -q --force -o "$T/fs-shared.zst" -- "$PY3" "$T/forkshare.py" "$T/fs.dat" shared \
	> /dev/null 2>&1 &&
	"$VMREC" -q --force -o "$T/fs-private.zst" -- "$PY3" "$T/forkshare.py" "$T/fs.dat" private \
	> /dev/null 2>&1; then
	check_exit maxmem-inherited-fit 0 "$VMREPLAY" -q --no-progress --max-memory=256M "$T/fs-shared.zst"
	check_exit maxmem-shared-counted 1 "$VMREPLAY" -q --no-progress --max-memory=100M "$T/fs-shared.zst"
	check maxmem-shared-message grep -q "peak reserved memory .* exceeds --max-memory 100.0 MiB" "$T/err"
	check_exit maxmem-private-refused 1 "$VMREPLAY" -q --no-progress --max-memory=256M "$T/fs-private.zst"
	check maxmem-private-message grep -q "peak reserved memory .* exceeds --max-memory 256.0 MiB" "$T/err"
else
	not_ok maxmem-inherited "recording failed"
fi
rm -f "$T/fs.dat"

# ---- vmrec's output: never removes what it did not create, and stops at a
# write error (killed.sh: a killed vmrec) ----
# ---- stdout that cannot be written: one line saying so, and a failure
for cmd in "$VMTRACE stat $D/every-kind.zst" "$VMREPLAY -q $D/every-kind.zst" "$VMREPLAY --help" \
	   "$VMREC --version"; do
	name=stdout-full-$(basename "${cmd%% *}")-$(echo "$cmd" | awk '{print $2}' | tr -d -)
	$cmd > /dev/full 2> "$T/err"
	rc=$?
	check "$name" sh -c "[ $rc -ne 0 ] && grep -qx '$(basename "${cmd%% *}"): cannot write output: No space left on device' '$T/err'"
done

mkfifo "$T/fifo"
(cat "$T/fifo" > /dev/null &) # a reader, so that the open does not wait
check_exit out-fifo 0 "$VMREC" -q --force -o "$T/fifo" -- true
check out-fifo-kept test -p "$T/fifo"
if [ "$(id -u)" = 0 ]; then
	# a device that fails every write: one line, exit 1, the node stays
	mknod "$T/full" c 1 7
	check_exit out-device 1 "$VMREC" -q --force -o "$T/full" -- true
	check out-device-kept test -c "$T/full"
	check out-device-message grep -qx "vmrec: cannot write '$T/full': No space left on device; nothing of the trace was written" "$T/err"
	# a file system that fills while the program runs: the recording
	# stops then (not at the program's end), the program is killed, and
	# the trace keeps what was written
	mkdir "$T/small"
	if mount -t tmpfs -o size=64k tmpfs "$T/small" 2> /dev/null; then
		check_exit out-full-fs 1 timeout 120 "$VMREC" -q -o "$T/small/t.zst" -- "$W/pacer" \
			--stamps "$T/small.stamps" --threads 2 --calls 100000000 --interval-us 10
		check out-full-fs-message grep -q "^vmrec: cannot write '$T/small/t.zst': No space left on device; recording stopped and the program killed, the trace keeps its first [1-9][0-9]* events$" "$T/err"
		kept=$(sed -n 's/.* keeps its first \([0-9]*\) events$/\1/p' "$T/err")
		check out-full-fs-prefix sh -c "'$VMTRACE' stat --json '$T/small/t.zst' 2>&1 | grep -q 'truncated' && '$VMTRACE' dump '$T/small/t.zst' 2> /dev/null | grep -vc '^#' | grep -qx '$kept'"
		check out-full-fs-program-ended python3 "$E2E/killcheck.py" ended "$T/small.stamps"
		umount "$T/small"
	else
		skip out-full-fs "cannot mount a tmpfs here"
	fi
else
	skip out-device "mknod needs root"
fi
exit 0
