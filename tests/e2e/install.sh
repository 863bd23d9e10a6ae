#!/bin/sh
# make install puts the programs and man pages under DESTDIR/PREFIX.
B=${B:-build}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if make -s B="$B" install DESTDIR="$tmp" PREFIX=/opt/vmrec > "$tmp/log" 2>&1; then
	echo "ok make-install"
else
	echo "not ok make-install"; cat "$tmp/log"
fi
for p in vmtrace vmrec vmreplay; do
	[ -x "$B/$p" ] || continue
	if [ -x "$tmp/opt/vmrec/bin/$p" ]; then echo "ok installed-$p"; else echo "not ok installed-$p: missing"; fi
done
for m in man/*.1 man/*.5; do
	[ -f "$m" ] || continue
	s=${m##*.}; n=$(basename "$m")
	if [ -f "$tmp/opt/vmrec/share/man/man$s/$n" ]; then echo "ok installed-$n"; else echo "not ok installed-$n: missing"; fi
	if command -v groff >/dev/null 2>&1; then
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		if [ -z "$w" ]; then echo "ok man-clean-$n"; else echo "not ok man-clean-$n: $w"; fi
	fi
done
"$tmp/opt/vmrec/bin/vmtrace" --version > /dev/null && echo "ok installed-vmtrace-runs" || echo "not ok installed-vmtrace-runs"
exit 0
