#!/bin/sh
# The README's tour still runs as shown: every "$ " command of its code
# blocks before "## Comparing kernels" is run, in order, in a directory of
# its own with build/ in PATH; each must succeed and print, as its first
# line, the README's first line for it with the numbers set aside (times,
# counts, addresses and the kernel's build differ from run to run).  The
# lines the README quotes after that first one are checked too, in their
# order, wherever they have no number.  The kernels section is run by
# tests/e2e/kernels.sh and make demo (it boots two kernels).
. "$(dirname "$0")/common.inc"

ln -s "$B" "$T/build"
python3 - "$T" README.md > "$T/cmds" <<'PY'
import sys
t, path = sys.argv[1], sys.argv[2]
text = open(path).read().split("## Comparing kernels")[0]
n = 0
inblock = False
cur = None
for line in text.splitlines():
    if line.startswith("```"):
        inblock = not inblock
        if cur:
            cur = None
        continue
    if not inblock:
        continue
    if line.startswith("$ "):
        n += 1
        cur = n
        with open("%s/cmd%d" % (t, n), "w") as f:
            f.write(line[2:] + "\n")
        open("%s/want%d" % (t, n), "w").close()
        print(n)
    elif cur:
        with open("%s/want%d" % (t, cur), "a") as f:
            f.write(line + "\n")
PY

if ! [ -s "$T/cmds" ]; then
	not_ok readme-commands "no \$ command found in README.md"
	exit 0
fi
for n in $(cat "$T/cmds"); do
	cmd=$(cat "$T/cmd$n")
	name="readme-$n-$(echo "$cmd" | awk '{print $1 "-" $2}' | tr -c 'a-z0-9.\n-' '_')"
	(cd "$T" && PATH="$B:$PATH" timeout 300 sh -c "$cmd" > "$T/out$n" 2>&1)
	rc=$?
	# (lint and diff exit 1 when they find something: vmtrace(1))
	case "$cmd" in "vmtrace lint "* | "vmtrace diff "*) [ $rc = 1 ] && rc=0 ;; esac
	if [ $rc != 0 ]; then
		not_ok "$name" "'$cmd' exited $rc"
		show "$T/out$n"
		continue
	fi
	if python3 - "$T/want$n" "$T/out$n" <<'PY'
import re, sys
want = [l.rstrip() for l in open(sys.argv[1])]
got = [l.rstrip() for l in open(sys.argv[2])]
def shape(s):
    return re.sub(r"0x[0-9a-f]+|[0-9]+(\.[0-9]+)?", "0", s)
if want and shape(want[0]) != shape(got[0] if got else ""):
    print("first line: want %r, got %r" % (want[0], got[0] if got else ""))
    sys.exit(1)
k = 1
for w in want[1:]:
    if w == "..." or re.search(r"[0-9]", w):
        continue
    while k < len(got) and got[k] != w:
        k += 1
    if k == len(got):
        print("line %r not printed (in order)" % w)
        sys.exit(1)
    k += 1
PY
	then
		ok "$name"
	else
		not_ok "$name" "'$cmd' printed otherwise than README.md shows"
		show "$T/out$n"
	fi
done
exit 0
