#!/bin/sh
# Fetches Debian's cloud kernel images for the vmreplay --kernel tests and
# the README's demo into $VMREC_KERNEL_DIR (default /var/cache/vmrec):
# 6.1 (linux-image-6.1.0-N-cloud-amd64-unsigned, bookworm: no per-VMA
# locks) and 6.12 (linux-image-6.12.N+deb12-cloud-amd64-unsigned, from
# bookworm's backports or security updates: per-VMA locks, mTHP).  For
# each, the newest package is downloaded and unpacked with dpkg-deb,
# never installed (no boot hooks run), and only its vmlinuz kept, with a
# link vmlinuz-6.1 or vmlinuz-6.12 to it; a version whose link exists is
# left alone.  As root on Debian (amd64) only.  A version that cannot be
# had is skipped with a message and the others still fetched: it always
# succeeds, and the tests that need a missing image skip.
# Usage: mk/kernel.sh [VERSION...]   (default: 6.1 6.12; called by mk/deps.sh)
set -u
dir=${VMREC_KERNEL_DIR:-/var/cache/vmrec}
[ $# -gt 0 ] || set -- 6.1 6.12

skip() { # VERSION WHY
	echo "deps: no $1 kernel image in $dir ($2): the vmreplay --kernel tests that need it will skip" >&2
}

# The apt package names of a version, as a pattern for apt-cache.
pattern() {
	case $1 in
	6.1) echo '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' ;;
	*) return 1 ;;
	esac
}

newest() { # PATTERN
	apt-cache search --names-only "$1" | awk '{print $1}' | sort -V | tail -1
}

updated=
fetch() { # VERSION
	v=$1
	[ -e "$dir/vmlinuz-$v" ] && return 0
	pat=$(pattern "$v") || { skip "$v" "mk/kernel.sh knows 6.1 and 6.12"; return 0; }
	pkg=$(newest "$pat")
	if [ -z "$pkg" ] && [ -z "$updated" ]; then
		updated=1
		apt-get update -qq >&2 || { skip "$v" "apt-get update failed"; return 0; }
		pkg=$(newest "$pat")
	fi
	[ -n "$pkg" ] || { skip "$v" "no package matching $pat in the apt sources"; return 0; }
	echo "deps: fetching $pkg into $dir" >&2
	tmp=$(mktemp -d) || { skip "$v" "mktemp failed"; return 0; }
	chown _apt "$tmp" 2>/dev/null # apt downloads as _apt where it can
	if ! (cd "$tmp" && apt-get download -qq "$pkg" >&2); then
		rm -rf "$tmp"; skip "$v" "apt-get download $pkg failed"; return 0
	fi
	if ! dpkg-deb -x "$tmp"/*.deb "$tmp/x"; then
		rm -rf "$tmp"; skip "$v" "dpkg-deb -x failed"; return 0
	fi
	img=$(ls "$tmp"/x/boot/vmlinuz-* 2>/dev/null | head -1)
	if [ -z "$img" ]; then
		rm -rf "$tmp"; skip "$v" "$pkg has no boot/vmlinuz"; return 0
	fi
	if mkdir -p "$dir" && cp "$img" "$dir/" && ln -sfn "$(basename "$img")" "$dir/vmlinuz-$v"; then
		echo "deps: $dir/vmlinuz-$v -> $(basename "$img")" >&2
	else
		skip "$v" "cannot write $dir"
	fi
	rm -rf "$tmp"
}

all_there=1
for v; do [ -e "$dir/vmlinuz-$v" ] || all_there=; done
[ -n "$all_there" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	for v; do [ -e "$dir/vmlinuz-$v" ] || skip "$v" "as root: sh mk/kernel.sh"; done
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
	for v; do [ -e "$dir/vmlinuz-$v" ] || skip "$v" "not Debian"; done
	exit 0
fi
if [ "$(dpkg --print-architecture)" != amd64 ]; then
	for v; do [ -e "$dir/vmlinuz-$v" ] || skip "$v" "not amd64"; done
	exit 0
fi
for v; do fetch "$v"; done
exit 0
