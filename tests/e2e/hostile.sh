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
for seed in 1 2 3 4 5 6; do
	"$B/mkrandom" "$seed" 3000 "$T/r$seed.zst" || { not_ok "mkrandom $seed" "mkrandom failed"; continue; }
	run "random-$seed" "$T/r$seed.zst"
done
# damaged golden traces: bit flips and cuts
python3 - "$T" "$D" <<'PY'
import random, sys
d = sys.argv[1]
src = open(sys.argv[2] + '/every-kind.zst', 'rb').read()
rng = random.Random(42)
for i in range(6):
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
exit 0
