# tests/corpus/programs.sh - the corpus of real programs (sourced by
# tests/e2e/corpus.sh, tests/e2e/inproc.sh and bench/corpus.sh; not a test
# itself).
#
# corpus_setup DIR     makes the programs' inputs in DIR (compiles the Java
#                      class and the Go program, creates the sqlite
#                      database, the xz input, a PostgreSQL cluster with
#                      pgbench's tables, a configured libsframe)
# corpus_names         the names, in order
# corpus_need NAME     the commands (or files: absolute paths) NAME needs
#                      (mk/deps.sh installs them)
# corpus_missing NAME  those of them that are not installed here ("" if none)
# corpus_cmd NAME DIR  NAME's command line (words separated by spaces)
# corpus_long NAME     0 if NAME runs for seconds rather than a fraction of
#                      one (its native runs, only printed, are made fewer)
#
# All come from Debian packages, and each runs with its own defaults: no
# flag, size or thread count is tuned to make its runs alike, since a
# replay is judged against its own recorded run (the JVM sizes its heap
# and runs its GC and compiler threads as it chooses, and its runs spread
# by 10-20%; node runs V8's background threads).  Most run for a fraction
# of a second natively; the server, the build and the Go program for a few
# seconds, being what they are:
# - postgres: a PostgreSQL server for its whole life while pgbench drives
#   it (pgbench.sh);
# - build: make -j2 of binutils' libsframe, from binutils-source, with
#   libtool, gcc, cc1, as and ld (build.sh; the source libxcrypt-source
#   ships cannot be built: its package leaves out the build-aux folder
#   that its configure.ac includes);
# - go: a Go program whose heap the runtime's background scavenger gives
#   back (scavenge.go).
# The sqlite database (19 MB) is large enough that its own faults
# outweigh the few a replay cannot have (the kernel's while it execs the
# program, before the first recorded event).
# sqlgrow builds its database under mmap I/O: sqlite extends the file with
# pwrite and grows its shared mapping with mremap as it goes (each run
# starts from an emptied file: DROP TABLE, then VACUUM).
# Run from the top of the tree (as mk/check.sh and bench/ scripts are).
CORPUS=${CORPUS:-$PWD/tests/corpus}
# What corpus_setup makes once and keeps for the next setup, each beside a
# key file that says what it was made from (a configure of libsframe takes
# half a minute; initdb and pgbench -i some seconds): under the build
# directory, so that the scripts of one make check share it.
CORPUS_CACHE=${CORPUS_CACHE:-${B:-build}/corpus-cache}
case $CORPUS_CACHE in /*) ;; *) CORPUS_CACHE=$PWD/$CORPUS_CACHE ;; esac

corpus_names() {
	echo node java python xz gcc sqlite sqlgrow pool pipeline postgres build go
}

# PostgreSQL's programs (the newest version installed), and binutils'
# source (binutils-source)
corpus_pgbin() {
	_b=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
	echo "${_b:-/usr/lib/postgresql/VERSION/bin}"
}
corpus_binutils() {
	_t=$(ls /usr/src/binutils/binutils-*.tar.xz 2> /dev/null | sort -V | tail -1)
	echo "${_t:-/usr/src/binutils/binutils-VERSION.tar.xz}"
}

corpus_need() {
	case $1 in
	node) echo node ;;
	java) echo java javac ;;
	python|pool) echo python3 ;;
	xz) echo xz ;;
	gcc) echo gcc ;;
	sqlite|sqlgrow) echo sqlite3 ;;
	pipeline) echo sort gzip ;;
	postgres) echo "$(corpus_pgbin)/postgres $(corpus_pgbin)/pgbench $(corpus_pgbin)/initdb setpriv" ;;
	build) echo "make gcc xz $(corpus_binutils)" ;;
	go) echo go ;;
	esac
}

corpus_missing() {
	_m=""
	for _c in $(corpus_need "$1"); do
		case $_c in
		/*) [ -e "$_c" ] || _m="$_m $_c" ;;
		*) command -v "$_c" > /dev/null 2>&1 || _m="$_m $_c" ;;
		esac
	done
	echo "$_m"
}

# corpus_cached NAME KEY: 0 if the cache holds NAME made from KEY
corpus_cached() {
	[ -e "$CORPUS_CACHE/$1" ] && [ "$(cat "$CORPUS_CACHE/$1.key" 2> /dev/null)" = "$2" ]
}
# corpus_keep NAME KEY SRC: SRC into the cache as NAME, made from KEY
corpus_keep() {
	mkdir -p "$CORPUS_CACHE" && rm -rf "$CORPUS_CACHE/$1" "$CORPUS_CACHE/$1.key" &&
		cp -a "$3" "$CORPUS_CACHE/$1" && echo "$2" > "$CORPUS_CACHE/$1.key"
}

# A PostgreSQL cluster in DIR/pg with pgbench's tables (scale 1).  As root
# it belongs to the user postgres (the package makes it; else nobody),
# and DIR is opened to it.  It is made in DIR (which the user can reach,
# unlike, maybe, the build directory), then kept.
corpus_setup_pg() {
	_d=$1
	_as=""
	if [ "$(id -u)" = 0 ]; then
		_u=postgres
		id -u $_u > /dev/null 2>&1 || _u=nobody
		_as="setpriv --reuid=$(id -u $_u) --regid=$(id -g $_u) --clear-groups"
		chmod a+x "$_d" || return 1
	fi
	_key="$("$(corpus_pgbin)/postgres" --version) uid=$(id -u) user=${_u:-}"
	if corpus_cached pg "$_key"; then
		cp -a "$CORPUS_CACHE/pg" "$_d/pg"
		return
	fi
	mkdir -m 700 "$_d/pg" || return 1
	[ -z "$_as" ] || chown "$_u:" "$_d/pg" || return 1
	$_as "$(corpus_pgbin)/initdb" -D "$_d/pg" -A trust -U postgres --no-sync || return 1
	sh "$CORPUS/pgbench.sh" "$_d" init || return 1
	corpus_keep pg "$_key" "$_d/pg"
}

# binutils' libsframe, configured as a shared library only (so that the
# build links with ld), in DIR/sframe/libsframe; the tar file's libsframe
# and what its configure and build read beside it
corpus_setup_build() {
	_tar=$(corpus_binutils)
	_v=$(basename "$_tar" .tar.xz)
	_key="$_v --enable-shared --disable-static"
	if ! corpus_cached sframe "$_key"; then
		rm -rf "$_d/sframe" && mkdir "$_d/sframe" || return 1
		# shellcheck disable=SC2046
		xz -dc "$_tar" | tar x -C "$_d/sframe" --strip-components=1 "$_v/libsframe" "$_v/include" \
			"$_v/libctf/swap.h" "$_v/config" $(for _f in ltmain.sh install-sh missing compile \
				depcomp config.guess config.sub ar-lib; do echo "$_v/$_f"; done) || return 1
		(cd "$_d/sframe/libsframe" && ./configure -q --enable-shared --disable-static) || return 1
		corpus_keep sframe "$_key" "$_d/sframe" || return 1
		rm -rf "$_d/sframe"
	fi
	cp -a "$CORPUS_CACHE/sframe" "$_d/sframe"
}

corpus_setup() {
	_d=$1
	if command -v javac > /dev/null 2>&1; then
		javac -d "$_d" "$CORPUS/Alloc.java" || return 1
	fi
	if command -v sqlite3 > /dev/null 2>&1; then
		rm -f "$_d/t.db"
		sqlite3 "$_d/t.db" < "$CORPUS/mkdb.sql" || return 1
	fi
	seq 1 400000 > "$_d/xzin"
	if [ -z "$(corpus_missing postgres)" ]; then
		corpus_setup_pg "$_d" || return 1
	fi
	if [ -z "$(corpus_missing build)" ]; then
		corpus_setup_build "$_d" || return 1
	fi
	# the Go program, built here: its own caches, no network, no module
	if command -v go > /dev/null 2>&1; then
		GOCACHE=$_d/go-cache GOPATH=$_d/go-path GO111MODULE=off GOPROXY=off GOFLAGS= \
			go build -o "$_d/scavenge" "$CORPUS/scavenge.go" || return 1
	fi
}

corpus_long() {
	case $1 in postgres|build|go) return 0 ;; esac
	return 1
}

# python3 is Debian's (/usr/bin/python3 where it exists), not a wrapper
# script in front of it on PATH (pyenv's shim forks a dozen shells).
corpus_python() {
	if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

corpus_cmd() {
	_d=$2
	case $1 in
	node) echo "node $CORPUS/workers.js" ;;
	java) echo "java -cp $_d Alloc" ;;
	python) echo "$(corpus_python) $CORPUS/alloc.py" ;;
	xz) echo "xz -T2 -6 --block-size=1MiB -c -k $_d/xzin" ;;
	gcc) echo "gcc -O2 -c $CORPUS/../../format/render.c -I$CORPUS/../../format -o $_d/render.o" ;;
	sqlite) echo "sqlite3 $_d/t.db -init $CORPUS/query.sql .quit" ;;
	sqlgrow) echo "sqlite3 $_d/g.db -init $CORPUS/grow.sql .quit" ;;
	pool) echo "$(corpus_python) $CORPUS/pool.py" ;;
	pipeline) echo "sh $CORPUS/pipeline.sh $_d/xzin" ;;
	postgres) echo "sh $CORPUS/pgbench.sh $_d" ;;
	build) echo "sh $CORPUS/build.sh $_d/sframe/libsframe" ;;
	go) echo "$_d/scavenge" ;;
	esac
}
