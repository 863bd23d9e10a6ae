#!/bin/sh
# vmrec's fixed cost: what recording a program that exits at once costs,
# as time / native time and as milliseconds more than native, medians of
# interleaved rounds (native, stream, inproc, ptrace, native, ...), on an
# idle machine and with two CPU hogs beside it.  The inproc backend runs
# as an unprivileged user (nobody, with setpriv) when this runs as root,
# as the users it is for would run it.
#
# Rows:
#  - /bin/true, python3 -c pass (/usr/bin/python3 when it is there):
#    elapsed, the whole command as a user waits for it;
#  - to main: from the exec of vmrec to the main() of a tiny program
#    (it prints CLOCK_MONOTONIC there; a launcher prints it just before
#    its exec), against the same program's exec to main without vmrec.
#
# Goals: the stream backend at most 10 ms more to main and 15 ms more in
# all for /bin/true, idle and with two hogs; python3 -c pass at most 1.15x
# elapsed; for inproc, python3 -c pass at most 1.10x.
# Usage: B=build sh bench/startup.sh [ROUNDS]
set -eu
. "$(dirname "$0")/common.inc"
rounds=${1:-11}
make -s B="$B" "$B/vmrec" > /dev/null
need "$B/vmrec"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
cat > "$tmp/stamp.c" <<'C'
#include <stdio.h>
#include <time.h>
#include <unistd.h>
/* stamp CMD...: print the time, then exec CMD; stamp: print the time. */
int main(int argc, char **argv)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	fprintf(stderr, "T %lld\n", (long long)t.tv_sec * 1000000000ll + t.tv_nsec);
	if (argc > 1) {
		execvp(argv[1], argv + 1);
		return 127;
	}
	return 0;
}
C
${CC:-cc} -O2 -o "$tmp/stamp" "$tmp/stamp.c"
chmod 755 "$tmp"
mkdir "$tmp/user" && chmod 777 "$tmp/user"
AS_USER=""
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null 2>&1; then
	AS_USER="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
stream=1
"$B/vmrec" -q --backend=stream --force -o "$tmp/t.zst" -- true 2> "$tmp/probe" || stream=0

# run VARIANT CMD...: elapsed ns
run() {
	v=$1; shift
	t0=$(now)
	case $v in
	native) "$@" > /dev/null 2>&1 || true ;;
	stream|ptrace) "$B/vmrec" -q --backend=$v --force -o "$tmp/t.zst" -- "$@" > /dev/null 2>&1 || true ;;
	inproc) $AS_USER "$B/vmrec" -q --backend=inproc --force -o "$tmp/user/t.zst" -- "$@" > /dev/null 2>&1 || true ;;
	esac
	echo $(($(now) - t0))
}
# tomain VARIANT: ns from the exec of the command to the tiny program's main
tomain() {
	case $1 in
	native) "$tmp/stamp" "$tmp/stamp" 2> "$tmp/st" > /dev/null || true ;;
	inproc) $AS_USER "$tmp/stamp" "$B/vmrec" -q --backend=inproc --force -o "$tmp/user/t.zst" -- \
		"$tmp/stamp" 2> "$tmp/st" > /dev/null || true ;;
	*) "$tmp/stamp" "$B/vmrec" -q --backend=$1 --force -o "$tmp/t.zst" -- "$tmp/stamp" \
		2> "$tmp/st" > /dev/null || true ;;
	esac
	awk '$1 == "T" { t[++n] = $2 } END { print t[2] - t[1] }' "$tmp/st"
}
variants="inproc ptrace"
[ $stream = 1 ] && variants="stream inproc ptrace"

# row NAME MEASURE ARGS...: medians of native, then per variant
# "ratio +ms" (each against the native run of its own round)
row() {
	name=$1 measure=$2; shift 2
	: > "$tmp/n"
	for v in $variants; do : > "$tmp/r.$v"; : > "$tmp/d.$v"; done
	for _ in $(seq "$rounds"); do
		n=$($measure native "$@")
		echo "$n" >> "$tmp/n"
		for v in $variants; do
			x=$($measure "$v" "$@")
			echo "$x $n" | awk '{print $1 / $2}' >> "$tmp/r.$v"
			echo "$x $n" | awk '{print ($1 - $2) / 1e6}' >> "$tmp/d.$v"
		done
	done
	line=$(printf '%-24s %9.1f' "$name" "$(median < "$tmp/n" | awk '{print $1 / 1e6}')")
	for v in stream inproc ptrace; do
		case " $variants " in *" $v "*)
			line="$line $(printf '%7.2f %8.1f' "$(median < "$tmp/r.$v")" "$(median < "$tmp/d.$v")")" ;;
		*) line="$line $(printf '%7s %8s' - -)" ;;
		esac
	done
	echo "$line"
}
elapsed() { run "$@"; }

table() {
	printf '%-24s %9s %16s %16s %16s\n' "" "native" "vmrec stream" "vmrec inproc" "vmrec ptrace"
	printf '%-24s %9s %7s %8s %7s %8s %7s %8s\n' workload ms ratio +ms ratio +ms ratio +ms
	row "/bin/true" elapsed /bin/true
	row "python3 -c pass" elapsed $PY -c pass
	row "to main (tiny program)" tomain
}

echo "vmrec's start-up: time / native and ms over native, medians of $rounds interleaved rounds"
echo "idle:"
table
echo "with two CPU hogs:"
hogs=""
for _ in 1 2; do
	sh -c 'while :; do :; done' &
	hogs="$hogs $!"
done
trap 'kill $hogs 2> /dev/null; rm -rf "$tmp"' EXIT
table
kill $hogs 2> /dev/null || true
[ $stream = 1 ] || echo "(no stream column: $(tail -1 "$tmp/probe"))"
[ -n "$AS_USER" ] && echo "(vmrec inproc ran as nobody: $AS_USER)"
