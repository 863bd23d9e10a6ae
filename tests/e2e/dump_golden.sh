#!/bin/sh
# vmtrace dump of the golden traces equals the expected files; the command
# line behaves (help, unknown command, missing and bad files).
. "$(dirname "$0")/common.inc"
same() { # NAME EXPECTED-FILE CMD...: CMD's output (stdout and stderr) is the file's
	_same_name=$1 _same_exp=$2
	shift 2
	"$@" > "$T/got" 2>&1
	check "$_same_name" diff -u "$_same_exp" "$T/got"
}

same dump-text $D/every-kind.dump $VMTRACE dump $D/every-kind.zst
same dump-json $D/every-kind.jsonl $VMTRACE dump --json $D/every-kind.zst
same dump-stacks $D/every-kind.stacks.dump $VMTRACE dump --stacks $D/every-kind.zst
same dump-seed000 $D/seed000-old.dump $VMTRACE dump $D/seed000-old.zst
same dump-seed000-json $D/seed000-old.jsonl $VMTRACE dump --json $D/seed000-old.zst
same dump-truncated $D/truncated.dump $VMTRACE dump $D/truncated.zst
same dump-1.2-text $D/every-kind-1.2.dump $VMTRACE dump $D/every-kind-1.2.zst
same dump-1.2-json $D/every-kind-1.2.jsonl $VMTRACE dump --json $D/every-kind-1.2.zst
same dump-1.3-text $D/every-kind-1.3.dump $VMTRACE dump $D/every-kind-1.3.zst
same dump-1.3-json $D/every-kind-1.3.jsonl $VMTRACE dump --json $D/every-kind-1.3.zst
same dump-1.4-text $D/every-kind-1.4.dump $VMTRACE dump $D/every-kind-1.4.zst
same dump-1.4-json $D/every-kind-1.4.jsonl $VMTRACE dump --json $D/every-kind-1.4.zst
check_exit truncated-exit-2 2 $VMTRACE dump $D/truncated.zst
check truncated-names-offset grep -q "truncated at byte [0-9]" "$T/err"
check_exit dump-stdin 0 sh -c "$VMTRACE dump - < $D/every-kind.zst"
check json-lines-parse python3 -c "
import json,sys
n=0
for line in open('$D/every-kind.jsonl'):
    o=json.loads(line); n+=1
    assert {'kind','ts_ns','thread','proc'} <= o.keys()
assert n == 48, n
"
check_exit help 0 $VMTRACE --help
check help-lists-dump grep -q '^  dump' "$T/out"
check_exit help-dump 0 $VMTRACE help dump
check help-dump-text grep -q -- '--json' "$T/out"
check_exit dump--help 0 $VMTRACE dump --help
check_exit unknown-command 2 $VMTRACE frobnicate
check unknown-command-message grep -q "'frobnicate' is not a vmtrace command" "$T/err"
check_exit no-command 2 $VMTRACE
check_exit dump-no-file 2 $VMTRACE dump
check_exit dump-bad-option 2 $VMTRACE dump --bogus $D/every-kind.zst
check_exit dump-missing 2 $VMTRACE dump /nonexistent/x.zst
check dump-missing-message grep -q "cannot open '/nonexistent/x.zst': No such file or directory" "$T/err"
printf 'not a trace at all\n' > "$T/junk"
check_exit dump-junk 2 $VMTRACE dump "$T/junk"
check dump-junk-message grep -q "not a vmtrace file at byte 0" "$T/err"
check_exit dump-plain-zstd 2 sh -c "zstd -q -c $T/junk > $T/junk.zst && $VMTRACE dump $T/junk.zst"
# zstd -d ignores the skippable header/footer frames and decodes the chunks
check zstd-decodes-chunks sh -c "zstd -q -d -c $D/every-kind.zst > $T/raw && test -s $T/raw"
check_exit closed-pipe 0 sh -c "$VMTRACE dump $D/seed000-old.zst | head -1 >/dev/null"
check_exit version 0 $VMTRACE --version
exit 0
