#!/bin/sh
# vmtrace export (perfetto, csv, jsonl) and vmtrace plot on the golden
# traces: the outputs parse, hold one row/slice per event as the golden
# `dump --json` files say, and carry the counters the traces imply; the
# plot is well-formed, self-contained SVG with its four panels.
. "$(dirname "$0")/common.inc"

for g in every-kind seed000-old; do
	check_exit "export-csv-$g" 0 $VMTRACE export --format=csv $D/$g.zst -o "$T/$g.csv"
	check "csv-matches-golden-$g" python3 - "$T/$g.csv" "$D/$g.jsonl" <<'EOF'
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
gold = [json.loads(l) for l in open(sys.argv[2])]
head = rows[0]
assert head == ['index', 'ts_ns', 'kind', 'proc', 'thread', 'op', 'arg0', 'arg1', 'arg2',
                'arg3', 'arg4', 'arg5', 'result', 'duration_ns', 'text'], head
rows = rows[1:]
assert len(rows) == len(gold), (len(rows), len(gold))
for i, (r, g) in enumerate(zip(rows, gold)):
    assert len(r) == 15, r
    assert int(r[0]) == i and r[2] == g['kind'] and int(r[1]) == g['ts_ns'], (r, g)
    assert int(r[3]) == g['proc'] and int(r[4]) == g['thread'], (r, g)
    if g['kind'] == 'syscall':
        assert r[5] == g['op'], (r, g)
        args = [int(a) for a in r[6:12] if a != '']
        assert args == g['args'], (args, g['args'])
        assert int(r[12]) == g['result'] and r[14] == g['text'], (r, g)
        assert int(r[13]) == g['exit_ns'] - g['ts_ns'], (r, g)
    elif g['kind'] == 'fault':
        assert int(r[6]) == g['addr'], (r, g)
    else:
        assert r[5] == '' and r[12] == '', r
EOF
	check_exit "export-jsonl-$g" 0 $VMTRACE export --format=jsonl $D/$g.zst -o "$T/$g.jsonl"
	check "jsonl-matches-golden-$g" python3 - "$T/$g.jsonl" "$D/$g.jsonl" <<'EOF'
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
gold = [json.loads(l) for l in open(sys.argv[2])]
assert len(got) == len(gold), (len(got), len(gold))
for i, (a, b) in enumerate(zip(got, gold)):
    assert a.pop('index') == i
    assert a == b, (a, b)
EOF
	check_exit "export-perfetto-$g" 0 $VMTRACE export --format=perfetto $D/$g.zst -o "$T/$g.json"
	check "perfetto-structure-$g" python3 - "$T/$g.json" "$D/$g.jsonl" <<'EOF'
import json, sys, collections
d = json.load(open(sys.argv[1]))
gold = [json.loads(l) for l in open(sys.argv[2])]
ev = d['traceEvents']
sc = [g for g in gold if g['kind'] == 'syscall']
xs = [e for e in ev if e['ph'] == 'X']
# one complete slice per syscall, named by op, on track pid=proc+1, tid=thread+1
assert len(xs) == len(sc), (len(xs), len(sc))
for x, g in zip(sorted(xs, key=lambda e: e['args']['index']), sc):
    assert x['name'] == g['op'] and x['pid'] == g['proc'] + 1 and x['tid'] == g['thread'] + 1, (x, g)
    assert abs(x['dur'] * 1000 - (g['exit_ns'] - g['ts_ns'])) < 1, (x, g)
    assert isinstance(x['args']['args'], str) and isinstance(x['args']['result'], str)
# instants for faults, touches and life-cycle events
inst = {'fault', 'touch', 'thread_start', 'thread_exit', 'process_start', 'exec',
        'process_exit', 'maps', 'lost'}
want = collections.Counter(g['kind'] for g in gold if g['kind'] in inst)
got = collections.Counter(e['name'] for e in ev if e['ph'] == 'i')
assert got == want, (got, want)
assert all(e.get('s') == 't' for e in ev if e['ph'] == 'i')
# names of every process and thread
procs = {g['proc'] for g in gold}
threads = {g['thread'] for g in gold if g['kind'] not in ('string', 'symbol', 'stack')}
pn = {e['pid'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
tn = {e['tid'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
assert pn == {p + 1 for p in procs}, (pn, procs)
assert tn == {t + 1 for t in threads}, (tn, threads)
# slices of one thread do not overlap, times are relative and not negative
by = collections.defaultdict(list)
for x in xs:
    by[x['tid']].append(x)
for l in by.values():
    l.sort(key=lambda e: e['ts'])
    for a, b in zip(l, l[1:]):
        assert a['ts'] + a['dur'] <= b['ts'] + 1e-9, (a, b)
assert min(e['ts'] for e in ev if 'ts' in e) >= 0
# counter tracks per process
cs = [e for e in ev if e['ph'] == 'C']
names = {(e['name'], tuple(e['args'])) for e in cs}
assert ('vma', ('count',)) in names and ('mapped', ('bytes',)) in names, names
last = {}
peak = collections.defaultdict(int)
for e in sorted(cs, key=lambda e: e['ts']):
    k = (e['pid'], e['name'])
    last[k] = list(e['args'].values())[0]
    peak[k] = max(peak[k], last[k])
if 'seed000' in sys.argv[2]:
    # two one-page regions (one per worker), unmapped at the end; 10 pages
    # touched before the 10 PROT_NONE remaps
    assert peak[(1, 'vma')] == 2 and peak[(1, 'mapped')] == 8192, peak
    assert last[(1, 'vma')] == 0 and last[(1, 'mapped')] == 0, last
    assert last[(1, 'touched')] == 10, last
else:
    # the snapshot's 5 mappings, and the forked child that exits
    assert peak[(1, 'vma')] >= 5, peak
    assert (2, 'vma') in last, last
EOF
	check_exit "plot-$g" 0 $VMTRACE plot $D/$g.zst -o "$T/$g.svg"
	check "plot-svg-valid-$g" python3 - "$T/$g.svg" <<'EOF'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
svg = doc.documentElement
assert svg.tagName == 'svg' and svg.getAttribute('xmlns') == 'http://www.w3.org/2000/svg'
texts = [''.join(n.data for n in t.childNodes if n.nodeType == n.TEXT_NODE)
         for t in doc.getElementsByTagName('text')]
for title in ('VMA count', 'Mapped memory', 'Touched pages', 'Syscall rate'):
    assert any(s.startswith(title) for s in texts), (title, texts)
assert 'time since start (ms)' in texts  # the golden traces last 0.1 ms
assert any(s.startswith('p0 golden-app') for s in texts), texts  # legend
assert len(doc.getElementsByTagName('polyline')) >= 4
# self-contained: no scripts, images, links, external fonts or styles
for tag in ('script', 'image', 'a', 'style', 'foreignObject', 'use'):
    assert not doc.getElementsByTagName(tag), tag
raw = open(sys.argv[1]).read()
assert 'href' not in raw and 'url(' not in raw and '@font-face' not in raw
EOF
done

# units on the mapped-memory axis follow the size (the golden traces map KiB)
check plot-units grep -q 'Mapped memory (KiB)' "$T/seed000-old.svg"

# colours: a hue per family, a shade per member.  A shell and three
# subshells (forked, never exec'd): one family, the shell in the hue and
# named, its three children in other shades of it.
if need plot-forked "$VMREC" && "$VMREC" -q --force -o "$T/sib.zst" -- sh -c '(:)& (:)& (:)& wait' \
	> /dev/null 2>&1; then
	$VMTRACE plot -o "$T/sib.svg" "$T/sib.zst" 2> "$T/err"
	check plot-forked python3 - "$T/sib.svg" <<'EOF'
import re, sys
svg = open(sys.argv[1]).read()
legend = re.findall(r'<text [^>]*>(p\d+ [^<]*)</text>', svg)
assert len(legend) == 1 and re.fullmatch(r'p0 \S+ \(pid \d+\) \+3 forked', legend[0]), legend
vma = svg.split('VMA count')[1].split('Mapped memory')[0]
lines = re.findall(r'<polyline [^>]*stroke="(#[0-9a-f]{6})"', vma)
assert len(lines) == 4 and len(set(lines)) == 4, lines  # a shade each
assert 'other process' not in svg
EOF
fi
# A shell that starts a second shell (exec'd), which forks two subshells,
# and two /bin/true (exec'd siblings): three families, each in a hue of
# its own, the second shell named with its two forked children, the two
# true named once.
if need plot-families "$VMREC" && "$VMREC" -q --force -o "$T/fam.zst" -- \
	sh -c '/bin/sh -c "(:)& (:)& wait" & /bin/true & /bin/true & wait' > /dev/null 2>&1; then
	$VMTRACE plot -o "$T/fam.svg" "$T/fam.zst" 2> "$T/err"
	check plot-families python3 - "$T/fam.svg" <<'EOF'
import re, sys
svg = open(sys.argv[1]).read()
legend = {}
# each legend row: its swatch rects, then its text
rows = re.findall(r'((?:<rect [^>]*height="10.0"[^>]*/>\s*)+)<text [^>]*>(p\d+ [^<]*)</text>', svg)
for rects, name in rows:
    legend[name] = re.findall(r'fill="(#[0-9a-f]{6})"', rects)
names = sorted(legend)
assert len(names) == 3, names
assert re.fullmatch(r'p0 \S+ \(pid \d+\)', names[0]), names
assert any(re.fullmatch(r'p\d \S+ \(pid \d+\) \+2 forked', n) for n in names), names
assert any(re.fullmatch(r'p\d true \+1 sibling', n) for n in names), names
hues = [legend[n][0] for n in names]
assert len(set(hues)) == 3, legend  # a hue per family
for n in names:  # a swatch of one shade per member
    want = 3 if 'forked' in n else 2 if 'sibling' in n else 1
    assert len(set(legend[n])) == want, (n, legend[n])
assert 'other process' not in svg
EOF
fi
# A long command: the subtitle cut after a whole word, with "…", and the
# facts after it whole.
if need plot-subtitle "$VMREC" && "$VMREC" -q --force -o "$T/long.zst" -- sh -c ': "$1"' sh \
	"$(printf 'word%.0s ' $(seq 40))" > /dev/null 2>&1; then
	$VMTRACE plot -o "$T/long.svg" "$T/long.zst" 2> "$T/err"
	check plot-subtitle python3 - "$T/long.svg" <<'EOF'
import html, re, sys
svg = open(sys.argv[1]).read()
sub = html.unescape(re.findall(r'<text x="90.0" y="46.0"[^>]*>([^<]*)</text>', svg)[0])
cmd, facts = sub.split(' — ')
assert re.search(r' word…$', cmd), sub
assert re.fullmatch(r'[\d.]+ s, 1 process; kernel \S+, page size \d+', facts), sub
# (uncut, the command alone is over 200 characters; at 880 px, a line of
# 12 px text fits about 140)
assert len(sub) <= 140, (len(sub), sub)
EOF
fi

# A path with a quote and a comma (a recording's own): its csv text
# column is quoted with the quote doubled, and reads back whole; the
# other rows' text needs no quoting (vmtrace/export.c's csv_text).
q="$T/a\"b,c.bin"
head -c 8192 /dev/zero > "$q"
rec quoted -- python3 -c 'import mmap, sys; f = open(sys.argv[1], "rb"); mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)' "$q"
check_exit export-csv-quoted 0 $VMTRACE export --format=csv "$T/quoted.zst" -o "$T/quoted.csv"
check csv-quoted-path-reads-back python3 - "$T/quoted.csv" "$q" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
assert all(len(r) == 15 for r in rows), [r for r in rows if len(r) != 15][:3]
files = [r[14] for r in rows if r[2] == 'map_file' and sys.argv[2].replace('"', '\\"') in r[14]]
assert files, 'no map_file row names the file'
assert '"' + sys.argv[2].replace('"', '\\""') in open(sys.argv[1]).read(), 'not quoted'
EOF

# damage, stdin, usage
check_exit export-truncated-exit-2 2 $VMTRACE export --format=perfetto $D/truncated.zst -o "$T/tr.json"
check export-truncated-still-json python3 -c "import json; json.load(open('$T/tr.json'))"
check export-truncated-message grep -q "truncated at byte" "$T/err"
check_exit export-stdin 0 sh -c "$VMTRACE export --format=csv - < $D/every-kind.zst > $T/stdin.csv"
check export-stdin-rows sh -c "test \$(wc -l < $T/stdin.csv) -eq 49"
check_exit export-stdout 0 $VMTRACE export --format=jsonl $D/every-kind.zst
check_exit export-no-format 2 $VMTRACE export $D/every-kind.zst
check_exit export-bad-format 2 $VMTRACE export --format=xml $D/every-kind.zst
check export-bad-format-message grep -q "unknown format 'xml'" "$T/err"
check_exit export-unwritable 2 $VMTRACE export --format=csv $D/every-kind.zst -o /nonexistent/x.csv
check export-unwritable-message grep -q "cannot create '/nonexistent/x.csv'" "$T/err"
# The text is made on every CPU (vmtrace/fmtpipe.c), in batches of 2048
# events: on one CPU or on all, the same bytes, for a trace of several
# batches, whole and cut short (the events before the damage, exit 2).
if [ "$(nproc)" -ge 2 ]; then
	head -c 80000 $D/real/git-loose.zst > "$T/cut.zst"
	for f in csv jsonl perfetto; do
		for t in $D/real/git-loose.zst "$T/cut.zst"; do
			n=$(basename "$t" .zst)
			$VMTRACE export --format=$f "$t" > "$T/all.$f" 2> "$T/all.err"; a=$?
			taskset -c 0 $VMTRACE export --format=$f "$t" > "$T/one.$f" 2> "$T/one.err"; o=$?
			check "export-cpus-same-$f-$n" sh -c "test $a = $o && cmp '$T/all.$f' '$T/one.$f' &&
				cmp '$T/all.err' '$T/one.err' && test \$(wc -l < '$T/all.$f') -gt 2048"
		done
	done
	check "export-cut-exit-2" test "$a" = 2
fi
check_exit export-full-disk 2 $VMTRACE export --format=csv $D/real/git-loose.zst -o /dev/full
check_exit export-help 0 $VMTRACE help export
check export-help-formats grep -q -- '--format=perfetto' "$T/out"
check_exit plot-no-output 2 $VMTRACE plot $D/every-kind.zst
check_exit plot-no-trace 2 $VMTRACE plot -o "$T/x.svg"
check_exit plot-missing 2 $VMTRACE plot /nonexistent/t.zst -o "$T/x.svg"
check_exit plot-truncated 2 $VMTRACE plot $D/truncated.zst -o "$T/tr.svg"
check plot-truncated-still-drawn python3 -c "import xml.dom.minidom; xml.dom.minidom.parse('$T/tr.svg')"
check_exit plot-help 0 $VMTRACE plot --help
exit 0
