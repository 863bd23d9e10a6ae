#!/bin/sh
# Fetches Debian's 6.1 cloud kernel image, for the vmreplay --kernel tests
# and the README's demo, into $VMREC_KERNEL_DIR (default /var/cache/vmrec):
# the newest linux-image-6.1.0-N-cloud-amd64-unsigned package is downloaded
# and unpacked with dpkg-deb, never installed (no boot hooks run), and only
# its vmlinuz kept, with a link vmlinuz-6.1 to it.  Does nothing when the
# link exists.  As root on Debian (amd64) only; elsewhere, or when the
# package cannot be had, it says so and succeeds: those tests then skip.
# Usage: mk/kernel.sh   (called by mk/deps.sh)
set -u
dir=${VMREC_KERNEL_DIR:-/var/cache/vmrec}
[ -e "$dir/vmlinuz-6.1" ] && exit 0
skip() {
	echo "deps: no 6.1 kernel image in $dir ($1): the vmreplay --kernel tests will skip" >&2
	exit 0
}
[ "$(id -u)" = 0 ] || skip "as root: sh mk/kernel.sh"
command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || skip "not Debian"
[ "$(dpkg --print-architecture)" = amd64 ] || skip "not amd64"
newest() {
	apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' |
		awk '{print $1}' | sort -V | tail -1
}
pkg=$(newest)
if [ -z "$pkg" ]; then
	apt-get update -qq >&2 || skip "apt-get update failed"
	pkg=$(newest)
fi
[ -n "$pkg" ] || skip "no linux-image-6.1.0-*-cloud-amd64-unsigned package in the apt sources"
echo "deps: fetching $pkg into $dir" >&2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
chown _apt "$tmp" 2>/dev/null # apt downloads as _apt where it can
(cd "$tmp" && apt-get download -qq "$pkg" >&2) || skip "apt-get download $pkg failed"
dpkg-deb -x "$tmp"/*.deb "$tmp/x" || skip "dpkg-deb -x failed"
img=$(ls "$tmp"/x/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$img" ] || skip "$pkg has no boot/vmlinuz"
mkdir -p "$dir" && cp "$img" "$dir/" && ln -sfn "$(basename "$img")" "$dir/vmlinuz-6.1" ||
	skip "cannot write $dir"
echo "deps: $dir/vmlinuz-6.1 -> $(basename "$img")" >&2
