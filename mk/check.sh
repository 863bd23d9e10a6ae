#!/bin/sh
# Runs the test suite: the cmocka unit test programs given as arguments,
# every tests/e2e/*.sh script, and a short fuzz run of the trace reader.
# Counts individual tests and ends with one "check: N passed, N failed" line.
# Environment: B (build dir), SAN (1 for sanitizer build), FUZZ_SECONDS.
set -u
B=${B:-build}
passed=0 failed=0 skipped=0
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

# End-to-end scripts print "ok NAME", "not ok NAME: why", "skip NAME: why".
for t in tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	out=$B/check-e2e-$name.out
	echo "== e2e/$name" | tee -a "$log"
	B=$B SAN=${SAN:-} sh "$t" > "$out" 2>&1
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

# A short libFuzzer run of the reader, seeded with the golden traces.
fz=$B/fuzz/fuzz_reader
if [ -x "$fz" ]; then
	echo "== fuzz_reader (${FUZZ_SECONDS:-20} s)"
	mkdir -p "$B/fuzz/corpus"
	if "$fz" -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=1024 -print_final_stats=1 \
		"$B/fuzz/corpus" tests/data > "$B/check-fuzz.out" 2>&1; then
		passed=$((passed + 1))
		grep -E '^(stat::number_of_executed_units|Done)' "$B/check-fuzz.out" | head -2
	else
		failed=$((failed + 1)); failures="$failures fuzz_reader"
		tail -40 "$B/check-fuzz.out"
	fi
fi

echo
[ -n "$failures" ] && echo "failed:$failures"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
