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

# The unit test programs, one at a time.  A hang fails its test after 10
# minutes rather than hold CI.
for t in "$@"; do
	name=$(basename "$t")
	out=$B/check-$name.out
	echo "== $name" | tee -a "$log"
	timeout --foreground 600 "$t" > "$out" 2>&1
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
# header used from another folder, the parts of a folder in their order
# (mk/layers.py).
echo "== layers" | tee -a "$log"
if python3 mk/layers.py "$B" > "$B/check-layers.out" 2>&1; then
	passed=$((passed + 1)); echo "   1 passed"
else
	failed=$((failed + 1)); failures="$failures layers"; cat "$B/check-layers.out"
fi
cat "$B/check-layers.out" >> "$log"

# End-to-end scripts print "ok NAME", "not ok NAME: why", "skip NAME: why".
# The recording scripts run a second time with the ptrace backend (the
# first uses vmrec's default: the stream backend where it can run), and
# a third with the inproc backend, all but those of what it does not do
# (attaching with -p, --stacks).
# The sanitized pass reruns only the broadest two under the other
# backends: the rest check what the plain pass checks, and the backends'
# own code is sanitized by those two and by inproc.sh and record_attach.sh.
INPROC_SKIPS="record_attach record_stacks_faults"
RERUNS=tests/e2e/record_*.sh
[ "${SAN:-}" = 1 ] && RERUNS="tests/e2e/record_workloads.sh tests/e2e/record_status.sh"
ptrace_runs= inproc_runs=
for t in $RERUNS; do
	ptrace_runs="$ptrace_runs $t"
	case " $INPROC_SKIPS " in *" $(basename "$t" .sh) "*) ;; *) inproc_runs="$inproc_runs $t" ;; esac
done
# Two scripts run at once (CHECK_JOBS, default 2; 1: one at a time), as
# the machine has two CPUs and most scripts wait on programs more than
# they compute; a script that judges timing or keeps up with a program at
# full speed runs alone (ALONE).  Each one's lines are printed when it
# ends.
ALONE="record_stream killed kernels vm replay_fidelity record_counters"
JOBS=${CHECK_JOBS:-2}
running=

report() { # NAME OUT (its own variables: it runs inside the loop below)
	r_name=$1 r_out=$2
	r_rc=$(cat "$r_out.rc") r_secs=$(cat "$r_out.secs")
	echo "== e2e/$r_name" | tee -a "$log"
	cat "$r_out" >> "$log"
	r_p=$(grep -c '^ok ' "$r_out"); r_f=$(grep -c '^not ok ' "$r_out"); r_s=$(grep -c '^skip ' "$r_out")
	# (a failure with the lines its script showed under it, as CI prints
	# only this)
	awk '/^not ok /{p=1; print; next} /^skip /{p=0; print; next} /^    /{if (p) print; next} {p=0}' "$r_out"
	if [ "$r_rc" -ne 0 ] && [ "$r_f" -eq 0 ]; then
		r_f=1; echo "not ok $r_name: script exited $r_rc"; tail -20 "$r_out"
	fi
	[ "$r_f" -ne 0 ] && failures="$failures e2e/$r_name"
	passed=$((passed + r_p)); failed=$((failed + r_f)); skipped=$((skipped + r_s))
	echo "   $r_p passed, $r_f failed, $r_s skipped ($r_secs s)"
}

# reap N: wait until at most N scripts run, reporting those that ended
reap() {
	while :; do
		still= n=0
		for j in $running; do
			if [ -f "$B/check-e2e-$j.out.rc" ]; then
				report "$(echo "$j" | sed 's/@\(.*\)/[\1]/')" "$B/check-e2e-$j.out"
			else
				still="$still $j" n=$((n + 1))
			fi
		done
		running=$still
		[ "$n" -le "$1" ] && return
		sleep 0.2
	done
}

# The jobs (SCRIPT@BACKEND), those that run alone last.
shared= alone=
for t in tests/e2e/*.sh $ptrace_runs $inproc_runs; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	backend=
	case " $seen " in
	*" $name[ptrace] "*) backend=inproc ;;
	*" $name "*) backend=ptrace ;;
	esac
	seen="$seen $name${backend:+[$backend]}"
	case " $ALONE " in
	*" $name "*) alone="$alone $t@$backend" ;;
	*) shared="$shared $t@$backend" ;;
	esac
done
for j in $shared - $alone; do
	if [ "$j" = - ]; then
		reap 0; JOBS=1; continue
	fi
	t=${j%@*} backend=${j#*@}
	job=$(basename "$t" .sh)${backend:+@$backend}
	out=$B/check-e2e-$job.out
	rm -f "$out.rc" "$out.secs"
	reap $((JOBS - 1))
	(
		t0=$(date +%s)
		B=$B SAN=${SAN:-} VMREC_BACKEND=$backend timeout --foreground 900 sh "$t" > "$out" 2>&1
		rc=$?
		echo $(($(date +%s) - t0)) > "$out.secs"
		echo $rc > "$out.rc.tmp" && mv "$out.rc.tmp" "$out.rc"
	) &
	running="$running $job"
done
reap 0

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
# (The fuzzers are sanitized in every build: the plain pass runs them.)
if [ "${SAN:-}" = 1 ]; then
	echo "== fuzz: skipped, the fuzzers are sanitized in every build and make check runs them"
	skipped=$((skipped + 2))
else
	fuzz_run fuzz_reader "${FUZZ_SECONDS:-20}" tests/data
	fuzz_run fuzz_replay "${FUZZ_SECONDS:-20}" "" -timeout=30 -max_len=2048 -len_control=10
fi

echo
[ -n "$failures" ] && echo "failed:$failures"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
