#!/bin/sh
# Checks the build dependencies of vmrec; as root on Debian, installs the
# missing ones.  Otherwise prints the exact command to run and fails.
# Usage: mk/deps.sh   (called by the Makefile)
set -u
missing=""
need() { # $1 = Debian package, $2 = test command
	if ! sh -c "$2" >/dev/null 2>&1; then missing="$missing $1"; fi
}
need pkg-config      'command -v pkg-config'
need libzstd-dev     'pkg-config --exists libzstd'
need libseccomp-dev  'pkg-config --exists libseccomp'
need libunwind-dev   'pkg-config --exists libunwind-ptrace'
need libbpf-dev      'pkg-config --exists libbpf'
need bpftool         'command -v bpftool'
need libcmocka-dev   'pkg-config --exists cmocka'
need libiberty-dev   'test -f /usr/include/libiberty/demangle.h'
need zstd            'command -v zstd'
need strace          'command -v strace'
need python3         'command -v python3'
need binutils        'command -v nm'
need time            'test -x /usr/bin/time'
need clang           'command -v clang'
need libclang-rt-14-dev 'test -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a 2>/dev/null)"'
# The corpus of real programs (tests/e2e/corpus.sh, bench/corpus.sh).
need nodejs          'command -v node'
need default-jdk-headless 'command -v javac'
need sqlite3         'command -v sqlite3'
need xz-utils        'command -v xz'
need gcc             'command -v gcc'
need gzip            'command -v gzip'
need postgresql      'test -x "$(ls -d /usr/lib/postgresql/*/bin | tail -1)/postgres"'
need binutils-source 'ls /usr/src/binutils/binutils-*.tar.xz'
need golang-go       'command -v go'
# vmreplay --kernel's tests and demo: qemu (as root; elsewhere those tests
# skip) and Debian's 6.1 and 6.12 kernel images (mk/kernel.sh; one that
# cannot be had is said, and the tests that need it skip).
[ "$(id -u)" = 0 ] && need qemu-system-x86 'command -v qemu-system-x86_64'
sh "$(dirname "$0")/kernel.sh"
[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2 || { echo "deps: apt-get update failed" >&2; exit 1; }
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2 || {
		echo "deps: '$cmd' failed" >&2; exit 1; }
	exit 0
fi
echo "deps: missing build dependencies:$missing" >&2
echo "deps: run as root:  apt-get update && $cmd" >&2
exit 1
