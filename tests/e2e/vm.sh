#!/bin/sh
# The static vmreplay that guests of another kernel boot as their init
# (make static): it has no ELF interpreter, it replays like vmreplay, and
# the host's vmreplay stays dynamically linked.
. "$(dirname "$0")/common.inc"
need vm "$VMREPLAY" "$B/vmreplay-static" || exit 0
STATIC=$B/vmreplay-static

if command -v readelf > /dev/null 2>&1; then
	if readelf -l "$STATIC" | grep -q 'program interpreter'; then
		not_ok static-has-no-interpreter "$STATIC asks for an ELF interpreter"
	else ok static-has-no-interpreter; fi
	if readelf -l "$VMREPLAY" | grep -q 'program interpreter'; then ok host-vmreplay-dynamic
	else not_ok host-vmreplay-dynamic "$VMREPLAY is static"; fi
else
	skip static-has-no-interpreter "readelf is not installed"
fi
check_exit static-runs 0 "$STATIC" -q $D/seed000-old.zst
exit 0
