#!/bin/sh
# Runs the test suite: the cmocka unit test programs given as arguments,
# the layering check, every tests/e2e/*.sh script, and short fuzz runs of
# the trace reader and the replayer.
# Counts individual tests and ends with one "check: N passed, N failed" line.
# Environment: B (build dir), SAN (1 for sanitizer build), FUZZ_SECONDS.
set -u
B=${B:-build}
passed=0 failed=0 skipped=0 seen=
failures=""
log=$B/check.log
: > "$log"

count_cmocka() { # $1 = output file
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
}

for t in "$@"; do
	name=$(basename "$t")
	out=$B/check-$name.out
	echo "== $name" | tee -a "$log"
	"$t" > "$out" 2>&1
	rc=$?
	cat "$out" >> "$log"
	count_cmocka "$out"
	passed=$((passed + p)); skipped=$((skipped + s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	failed=$((failed + f))
	if [ "$f" -ne 0 ]; then
		failures="$failures $name"
		cat "$out"
	else
		echo "   $p passed${s:+, $s skipped}" | sed 's/, 0 skipped//'
	fi
done

# The build's layering: no cycle between a folder's files, no internal
# header used from another folder (mk/layers.py).
echo "== layers" | tee -a "$log"
if python3 mk/layers.py "$B" > "$B/check-layers.out" 2>&1; then
	passed=$((passed + 1)); echo "   1 passed"
else
	failed=$((failed + 1)); failures="$failures layers"; cat "$B/check-layers.out"
fi
cat "$B/check-layers.out" >> "$log"

# End-to-end scripts print "ok NAME", "not ok NAME: why", "skip NAME: why".
# The recording scripts run a second time with the ptrace backend (the
# first uses vmrec's default: the stream backend where it can run).
for t in tests/e2e/*.sh tests/e2e/record_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	backend=
	case " $seen " in *" $name "*) backend=ptrace name="$name[ptrace]" ;; esac
	seen="$seen $name"
	out=$B/check-e2e-$name.out
	echo "== e2e/$name" | tee -a "$log"
	B=$B SAN=${SAN:-} VMREC_BACKEND=$backend sh "$t" > "$out" 2>&1
	rc=$?
	cat "$out" >> "$log"
	p=$(grep -c '^ok ' "$out"); f=$(grep -c '^not ok ' "$out"); s=$(grep -c '^skip ' "$out")
	grep -E '^(skip|not ok) ' "$out"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; echo "not ok $name: script exited $rc"; tail -20 "$out"
	fi
	[ "$f" -ne 0 ] && failures="$failures e2e/$name"
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	echo "   $p passed, $f failed, $s skipped"
done

# Short libFuzzer runs: the reader (seeded with the golden traces), and
# the replayer on generated traces (loaded and replayed).
fuzz_run() { # NAME SECONDS SEED-DIR|"" [OPTION...]
	name=$1 secs=$2 seeds=$3; shift 3
	fz=$B/fuzz/$name
	[ -x "$fz" ] || return 0
	echo "== $name ($secs s)"
	mkdir -p "$B/fuzz/corpus-$name"
	# The first directory is the corpus libFuzzer adds to; seeds only read.
	if "$fz" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "$@" \
		"$B/fuzz/corpus-$name" $seeds > "$B/check-$name.out" 2>&1; then
		passed=$((passed + 1))
		grep -E '^(stat::number_of_executed_units|Done)' "$B/check-$name.out" | head -2
	else
		failed=$((failed + 1)); failures="$failures $name"
		tail -40 "$B/check-$name.out"
	fi
}
fuzz_run fuzz_reader "${FUZZ_SECONDS:-20}" tests/data
fuzz_run fuzz_replay "${FUZZ_SECONDS:-20}" "" -timeout=30 -max_len=2048 -len_control=10

echo
[ -n "$failures" ] && echo "failed:$failures"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
