#!/bin/sh
# vmreplay's command line: help and man page cover every option, usage
# errors and bad traces exit 2 with one "vmreplay: ..." line, the JSON has
# the keys of DESIGN.md section 7, and every option replays the golden
# seed-000 trace without divergence.
B=${B:-build}
RP=$B/vmreplay
D=tests/data
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ -x "$RP" ] || { echo "skip replay_cli: $RP not built"; exit 0; }

status() { # NAME WANT-STATUS command...
	name=$1 want=$2; shift 2
	"$@" > "$tmp/out" 2> "$tmp/err"; got=$?
	if [ "$got" = "$want" ]; then echo "ok $name"
	else echo "not ok $name: exit $got, want $want"; head -5 "$tmp/err" "$tmp/out"; fi
}
t() { # NAME command (success = ok)
	name=$1; shift
	if "$@" > "$tmp/t" 2>&1; then echo "ok $name"; else echo "not ok $name"; head -10 "$tmp/t"; fi
}
one_line() { # NAME PATTERN: stderr of the last status is one matching line
	if [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "$2" "$tmp/err"; then echo "ok $1"
	else echo "not ok $1: stderr is not one line matching '$2'"; head -5 "$tmp/err"; fi
}
usage_line() { # NAME PATTERN: a matching line, then the --help hint
	if [ "$(wc -l < "$tmp/err")" -eq 2 ] && head -1 "$tmp/err" | grep -q "$2" &&
	   tail -1 "$tmp/err" | grep -q "^Try 'vmreplay --help'"; then echo "ok $1"
	else echo "not ok $1: stderr is not '$2' and the --help hint"; head -5 "$tmp/err"; fi
}

status help 0 "$RP" --help
missing=
for opt in --order= --placement= --speed= --scale= --repeat= --json= --files= --max-memory= \
	   --progress --no-progress --quiet --help --version; do
	grep -q -- "$opt" "$tmp/out" || missing="$missing help:$opt"
	# roff writes "--x" as "\-\-x"
	grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" man/vmreplay.1 2>/dev/null ||
		missing="$missing man:$opt"
done
if [ -z "$missing" ]; then echo "ok help-and-man-list-every-option"
else echo "not ok help-and-man-list-every-option: missing$missing"; fi
status version 0 "$RP" --version
status no-trace 2 "$RP"
usage_line no-trace-message "^vmreplay: no trace given"
status bad-order 2 "$RP" --order=sideways $D/seed000-old.zst
usage_line bad-order-message "^vmreplay: --order: 'sideways'"
status bad-clock 2 env VMREPLAY_CLOCK=sundial "$RP" -q $D/seed000-old.zst
usage_line bad-clock-message "^vmreplay: VMREPLAY_CLOCK: 'sundial' is not monotonic"
status monotonic-clock 0 env VMREPLAY_CLOCK=monotonic "$RP" -q $D/seed000-old.zst
status bad-scale 2 "$RP" --scale=0 $D/seed000-old.zst
status bad-speed 2 "$RP" --speed=-1 $D/seed000-old.zst
status bad-memory 2 "$RP" --max-memory=12Q $D/seed000-old.zst
status missing-file 2 "$RP" /nonexistent/t.zst
one_line missing-file-message "^vmreplay: '/nonexistent/t.zst': No such file or directory$"
status truncated 2 "$RP" $D/truncated.zst
one_line truncated-message "^vmreplay: '$D/truncated.zst': truncated at byte [0-9]"
head -c 100 $D/seed000-old.zst > "$tmp/cut.zst"
status cut 2 "$RP" "$tmp/cut.zst"
one_line cut-message "^vmreplay: '$tmp/cut.zst': "
status max-memory 2 "$RP" --max-memory=4K $D/seed000-old.zst
one_line max-memory-message "^vmreplay: '$D/seed000-old.zst': .*--max-memory"

status quiet 0 "$RP" -q $D/seed000-old.zst
t quiet-one-line sh -c "[ \$(wc -l < $tmp/out) -eq 1 ] && grep -q '^wall .* divergences 0$' $tmp/out"
status table 0 "$RP" $D/seed000-old.zst
t table-has-ops grep -q '^mprotect ' "$tmp/out"
t table-has-threads grep -q '^thread ' "$tmp/out"

status json 0 "$RP" -q --repeat=3 --json="$tmp/r.json" $D/seed000-old.zst
t json-keys python3 -c "
import json
d = json.load(open('$tmp/r.json'))
assert len(d['runs']) == 3, 'three runs'
for r in d['runs'] + [d['median']]:
    for k in ('wall_ns', 'minor_faults', 'major_faults', 'voluntary_cs', 'involuntary_cs',
              'divergences', 'events', 'peak_vmas'):
        assert isinstance(r[k], int), k
    assert r['divergences'] == 0
    for op in ('mmap', 'mprotect'):
        for k in ('count', 'errors', 'p50_ns', 'p99_ns', 'max_ns'):
            assert isinstance(r['ops'][op][k], int), op + '.' + k
    assert r['ops']['mprotect']['count'] == 10
    assert r['ops']['mprotect']['p50_ns'] <= r['ops']['mprotect']['p99_ns'] <= r['ops']['mprotect']['max_ns']
walls = sorted(r['wall_ns'] for r in d['runs'])
assert d['median']['wall_ns'] == walls[1], 'median of three'
"

for o in --order=strict --order=free --placement=exact --scale=3 --speed=1000 --files=original; do
	status "option$o" 0 "$RP" -q "$o" $D/seed000-old.zst
	t "option$o-no-divergence" grep -q 'divergences 0$' "$tmp/out"
done

# Progress: a line on standard error rewritten in place and erased before
# the results; shown on a terminal, or anywhere with --progress.  The
# golden trace's 54 us, kept at --speed=0.00004, last 1.35 s.
status progress 0 "$RP" --progress --speed=0.00004 $D/seed000-old.zst
t progress-line python3 -c "
import sys
err = open('$tmp/err', 'rb').read()
out = open('$tmp/out').read()
assert b'\rvmreplay: replaying: ' in err and b'(recorded: 0.0 s)' in err, err
assert err.endswith(b'\r\x1b[K'), 'the line is erased at the end'
assert out.startswith('replayed ') and 'divergences 0' in out, out
"
status progress-not-a-terminal 0 "$RP" --speed=0.00004 $D/seed000-old.zst
t progress-not-a-terminal-silent test ! -s "$tmp/err"
status no-progress 0 "$RP" --progress --no-progress --speed=0.00004 $D/seed000-old.zst
t no-progress-silent test ! -s "$tmp/err"
exit 0
