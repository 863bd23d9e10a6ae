#!/bin/sh
# Hostile traces: every program that reads traces gets random-but-valid
# event streams (absurd addresses and lengths, unknown threads, dangling
# ids), damaged files (bit flips, cuts) and garbage, and must end with a
# clean exit status (0, 1 or 2) and, when it fails, a message naming the
# file — never a signal, a hang or a sanitizer report.
B=${B:-build}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
VT=$B/vmtrace VR=$B/vmreplay
n=0

run() { # NAME TRACE
	name=$1 f=$2
	for cmd in "dump" "dump --json" "stat" "stat --json" "lint" "export --format=perfetto" \
		   "export --format=csv" "plot -o $tmp/p.svg" "rewrite --rules=prot-none-free,populate,mlock-onfault,dontneed-to-free $f $tmp/rw.zst"; do
		set -- $cmd
		sub=$1; shift
		if [ "$sub" = rewrite ]; then
			timeout 60 "$VT" rewrite "$@" > /dev/null 2> "$tmp/err"
		else
			timeout 60 "$VT" "$sub" "$@" "$f" > /dev/null 2> "$tmp/err"
		fi
		rc=$?
		check "$name vmtrace $sub${1:+ $1}" "$rc"
	done
	timeout 120 "$VR" -q --max-memory=1G "$f" > /dev/null 2> "$tmp/err"
	check "$name vmreplay" $?
	timeout 120 "$B/vmtrace" diff "$f" tests/data/every-kind.zst > /dev/null 2> "$tmp/err"
	check "$name vmtrace diff" $?
}

check() { # NAME RC
	n=$((n + 1))
	if [ "$2" -le 2 ] && ! grep -q -E 'Sanitizer|runtime error' "$tmp/err"; then
		if [ "$2" = 2 ] && ! [ -s "$tmp/err" ]; then
			echo "not ok $1: exit 2 without a message"
		else
			echo "ok $1 (exit $2)"
		fi
	else
		echo "not ok $1: exit $2"; head -5 "$tmp/err"
	fi
}

# random valid streams
for seed in 1 2 3 4 5 6; do
	"$B/mkrandom" "$seed" 3000 "$tmp/r$seed.zst" || { echo "not ok mkrandom $seed"; continue; }
	run "random-$seed" "$tmp/r$seed.zst"
done
# damaged golden traces: bit flips and cuts
python3 - "$tmp" <<'PY'
import random, sys
d = sys.argv[1]
src = open('tests/data/every-kind.zst', 'rb').read()
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
for f in "$tmp"/flip*.zst "$tmp"/cut*.zst "$tmp"/garbage.zst; do
	run "$(basename "$f" .zst)" "$f"
done
exit 0
