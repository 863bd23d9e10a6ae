#!/bin/sh
# vmtrace dump of the golden traces equals the expected files; the command
# line behaves (help, unknown command, missing and bad files).
. "$(dirname "$0")/common.inc"
same() { # NAME expected-file command...
	name=$1 exp=$2; shift 2
	"$@" > "$tmp/got" 2>&1
	if diff -u "$exp" "$tmp/got" > "$tmp/diff"; then echo "ok $name"
	else echo "not ok $name: output differs from $exp"; head -30 "$tmp/diff"; fi
}
# unlike common.inc's status, shows all of stderr when not ok
status() { # NAME want-status command...
	name=$1 want=$2; shift 2
	"$@" > "$tmp/out" 2> "$tmp/err"; got=$?
	if [ "$got" = "$want" ]; then echo "ok $name"
	else echo "not ok $name: exit $got, want $want"; cat "$tmp/err"; fi
}

same dump-text $D/every-kind.dump $VT dump $D/every-kind.zst
same dump-json $D/every-kind.jsonl $VT dump --json $D/every-kind.zst
same dump-stacks $D/every-kind.stacks.dump $VT dump --stacks $D/every-kind.zst
same dump-seed000 $D/seed000-old.dump $VT dump $D/seed000-old.zst
same dump-seed000-json $D/seed000-old.jsonl $VT dump --json $D/seed000-old.zst
same dump-truncated $D/truncated.dump $VT dump $D/truncated.zst
status truncated-exit-2 2 $VT dump $D/truncated.zst
t truncated-names-offset grep -q "truncated at byte [0-9]" "$tmp/err"
status dump-stdin 0 sh -c "$VT dump - < $D/every-kind.zst"
t json-lines-parse python3 -c "
import json,sys
n=0
for line in open('$D/every-kind.jsonl'):
    o=json.loads(line); n+=1
    assert {'kind','ts_ns','thread','proc'} <= o.keys()
assert n == 48, n
"
status help 0 $VT --help
t help-lists-dump grep -q '^  dump' "$tmp/out"
status help-dump 0 $VT help dump
t help-dump-text grep -q -- '--json' "$tmp/out"
status dump--help 0 $VT dump --help
status unknown-command 2 $VT frobnicate
t unknown-command-message grep -q "'frobnicate' is not a vmtrace command" "$tmp/err"
status no-command 2 $VT
status dump-no-file 2 $VT dump
status dump-bad-option 2 $VT dump --bogus $D/every-kind.zst
status dump-missing 2 $VT dump /nonexistent/x.zst
t dump-missing-message grep -q "cannot open '/nonexistent/x.zst': No such file or directory" "$tmp/err"
printf 'not a trace at all\n' > "$tmp/junk"
status dump-junk 2 $VT dump "$tmp/junk"
t dump-junk-message grep -q "not a vmtrace file at byte 0" "$tmp/err"
status dump-plain-zstd 2 sh -c "zstd -q -c $tmp/junk > $tmp/junk.zst && $VT dump $tmp/junk.zst"
# zstd -d ignores the skippable header/footer frames and decodes the chunks
t zstd-decodes-chunks sh -c "zstd -q -d -c $D/every-kind.zst > $tmp/raw && test -s $tmp/raw"
status closed-pipe 0 sh -c "$VT dump $D/seed000-old.zst | head -1 >/dev/null"
status version 0 $VT --version
exit 0
