#!/bin/sh
# Whether two vmtrace binaries give byte-identical results: stat, lint,
# dump (text and JSON), diff and every export format, their standard
# output, standard error and exit status, on every trace given (default:
# the golden and real traces in tests/data).  For changes that must not
# change a result (speed work): build the base first and keep a copy.
# Usage: sh bench/same.sh BASE-VMTRACE NEW-VMTRACE [TRACE...]
# Prints one line per difference and "same: N outputs" at the end; exit
# status 1 when any differs.
set -u
[ $# -ge 2 ] || { echo "usage: bench/same.sh BASE-VMTRACE NEW-VMTRACE [TRACE...]" >&2; exit 2; }
base=$1 new=$2
shift 2
[ $# -gt 0 ] || set -- tests/data/*.zst tests/data/real/*.zst
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
one() { # LABEL ARGS...: run both, compare
	_label=$1
	shift
	"$base" "$@" > "$tmp/a.out" 2> "$tmp/a.err"; echo $? > "$tmp/a.rc"
	"$new" "$@" > "$tmp/b.out" 2> "$tmp/b.err"; echo $? > "$tmp/b.rc"
	for _s in out err rc; do
		n=$((n + 1))
		cmp -s "$tmp/a.$_s" "$tmp/b.$_s" ||
			{ echo "DIFFERS: $_label ($_s): vmtrace $*"; bad=$((bad + 1)); }
	done
}
prev=
for t in "$@"; do
	one stat stat "$t"
	one stat-json stat --json "$t"
	one lint lint "$t"
	one lint-json lint --json "$t"
	one dump dump "$t"
	one dump-json dump --json "$t"
	for f in csv perfetto jsonl; do
		one "export-$f" export --format="$f" "$t"
	done
	one diff-self diff "$t" "$t"
	[ -n "$prev" ] && one diff diff --all "$prev" "$t" && one diff-json diff --json "$prev" "$t"
	prev=$t
done
echo "same: $((n - bad)) of $n outputs"
[ "$bad" -eq 0 ]
