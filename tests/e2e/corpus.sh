#!/bin/sh
# A corpus of real programs (tests/corpus/programs.sh), recorded in the
# default mode and replayed.  Per program:
#  (a) vmrec exits with the program's own status;
#  (b) the trace's op counts equal the kernel's own count of the same run,
#      thread by thread (kcount.py, through tracefs);
#  (c) the replay has 0 divergences;
#  (d) the replay's minor faults (median of 3 runs) are within 2% of the
#      recorded run's own (the trace's COUNTERS, as vmreplay's fidelity
#      section has them); the program's native minor faults (median of 3
#      runs, of 1 for the programs that run for seconds; getrusage over
#      the whole process tree: native.py) are printed beside: a program's
#      runs spread, and a recorded run is one draw of that spread.  One
#      recording is judged: the yardstick is the run it recorded, so a
#      replay that misses it is a gap of the replay (or of the recording)
#      whichever run it was, and another recording would only hide it
#      when it is not in every run;
#  (e) the replay at --speed=1 runs at the recorded pace: its wall time is
#      printed against the recorded run's and native, and must be at least
#      half of the recorded run's (a loaded machine slows a native run, not
#      the recorded one).
# The programs come from Debian packages that mk/deps.sh installs; where
# one is missing here, its rows are skipped, saying so.
. "$(dirname "$0")/common.inc"
need corpus "$VMREC" "$VMREPLAY" "$VMTRACE" || exit 0
. tests/corpus/programs.sh
KCOUNT="python3 $E2E/kcount.py $VMTRACE"
judge() { python3 "$CORPUS/judge.py" "$@"; }

if ! corpus_setup "$T" > "$T/setup.out" 2>&1; then
	not_ok corpus-setup "$(tail -1 "$T/setup.out")"
	exit 0
fi

# (under SAN the fault and time judgments are skipped: one native run and
# one replay of each kind are enough for what it checks there)
REPEAT=$(san_scale 3 3)
for p in $(corpus_names); do
	NATIVE=$(san_scale 3 3)
	corpus_long "$p" && NATIVE=1
	missing=$(corpus_missing "$p")
	if [ -n "$missing" ]; then
		skip "$p" "not installed:$missing (mk/deps.sh installs it)"
		continue
	fi
	cmd=$(corpus_cmd "$p" "$T")
	# shellcheck disable=SC2086
	python3 "$CORPUS/native.py" "$NATIVE" "$T/$p.native.json" -- $cmd
	want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$T/$p.native.json")
	# (a) and (b): one recording, in the kernel's count.
	# shellcheck disable=SC2086
	$KCOUNT "$T/$p.zst" -- "$VMREC" -q --force -o "$T/$p.zst" -- $cmd > "$T/$p.kcount" 2>&1
	krc=$?
	if [ $krc = 77 ]; then
		skip "$p-kernel-count" "$(grep '^skip: ' "$T/$p.kcount" | cut -c7-)"
		# shellcheck disable=SC2086
		"$VMREC" -q --force -o "$T/$p.zst" -- $cmd > /dev/null 2> "$T/$p.err"
		krc=$?
		if [ "$krc" = "$want" ]; then ok "$p-status"; else not_ok "$p-status" "vmrec exited $krc, the program $want"; fi
	elif [ $krc = 0 ]; then
		if [ "$want" = 0 ]; then ok "$p-status"; else not_ok "$p-status" "vmrec exited 0, the program $want"; fi
		ok "$p-kernel-count"
	else
		if grep -q '^vmrec exited' "$T/$p.kcount"; then
			not_ok "$p-status" "$(tail -1 "$T/$p.kcount"), the program $want"
		else
			[ "$want" = 0 ] && ok "$p-status"
			not_ok "$p-kernel-count" "$(tail -1 "$T/$p.kcount")"
		fi
		show "$T/$p.kcount"
	fi
	[ -s "$T/$p.zst" ] || continue
	# (c) and (d)
	if ! "$VMREPLAY" "$T/$p.zst" --repeat="$REPEAT" -q --no-progress --json="$T/$p.replay.json" > "$T/$p.replay.out" 2>&1; then
		not_ok "$p-replay" "$(tail -1 "$T/$p.replay.out")"
		show "$T/$p.replay.out"
		continue
	fi
	check "$p-divergences" judge div "$T/$p.replay.json"
	if [ "${SAN:-}" = 1 ]; then
		skip "$p-faults" "a sanitized replayer's faults include its shadow memory"
	else
		"$VMTRACE" stat --json "$T/$p.zst" > "$T/$p.stat.json" 2> /dev/null
		if judge faults "$T/$p.native.json" "$T/$p.replay.json" "$T/$p.stat.json" > "$T/$p.faults" 2>&1; then
			ok "$p-faults"
		else
			not_ok "$p-faults" "the replay misses its recorded run by more than 2%"
			grep '^warning: ' "$T/$p.replay.out" | head -5 | sed 's/^/    /'
		fi
		sed 's/^/    /' "$T/$p.faults"
	fi
	# (e)
	"$VMTRACE" stat --json "$T/$p.zst" > "$T/$p.stat.json" 2> /dev/null
	if "$VMREPLAY" "$T/$p.zst" --speed=1 -q --no-progress --json="$T/$p.speed.json" > "$T/$p.speed.out" 2>&1; then
		check "$p-speed1" judge speed "$T/$p.native.json" "$T/$p.speed.json" "$T/$p.stat.json" &&
			sed 's/^/    /' "$T/check.out"
	else
		not_ok "$p-speed1" "$(tail -1 "$T/$p.speed.out")"
	fi
	# (f) the same recording loaded as it runs (vmreplay --window):
	# the same replay
	if "$VMREPLAY" "$T/$p.zst" --repeat="$REPEAT" --window=4K -q --no-progress \
		--json="$T/$p.stream.json" > "$T/$p.stream.out" 2>&1; then
		check "$p-stream" python3 "$E2E/samerun.py" "$T/$p.replay.json" "$T/$p.stream.json" "$p" &&
			sed 's/^/    /' "$T/check.out"
	else
		not_ok "$p-stream" "$(tail -1 "$T/$p.stream.out")"
	fi
done
