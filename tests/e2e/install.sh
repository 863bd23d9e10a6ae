#!/bin/sh
# make install puts the programs and man pages under DESTDIR/PREFIX.
. "$(dirname "$0")/common.inc"
if make -s B="$B" install DESTDIR="$T" PREFIX=/opt/vmrec > "$T/log" 2>&1; then
	ok make-install
else
	not_ok make-install "make install failed"; show "$T/log"
fi
for p in vmtrace vmrec vmreplay; do
	[ -x "$B/$p" ] || continue
	if [ -x "$T/opt/vmrec/bin/$p" ]; then ok "installed-$p"; else not_ok "installed-$p" missing; fi
done
for m in man/*.1 man/*.5; do
	[ -f "$m" ] || continue
	s=${m##*.}; n=$(basename "$m")
	if [ -f "$T/opt/vmrec/share/man/man$s/$n" ]; then ok "installed-$n"; else not_ok "installed-$n" missing; fi
	if command -v groff >/dev/null 2>&1; then
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		if [ -z "$w" ]; then ok "man-clean-$n"; else not_ok "man-clean-$n" "$w"; fi
	fi
done
check installed-vmtrace-runs "$T/opt/vmrec/bin/vmtrace" --version
exit 0
