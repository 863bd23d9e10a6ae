# tests/corpus/programs.sh - the corpus of real programs (sourced by
# tests/e2e/corpus.sh and bench/corpus.sh; not a test itself).
#
# corpus_setup DIR     makes the programs' inputs in DIR (compiles the Java
#                      class, creates the sqlite database, the xz input)
# corpus_names         the names, in order
# corpus_need NAME     the commands NAME needs (mk/deps.sh installs them)
# corpus_missing NAME  those of them that are not installed here ("" if none)
# corpus_cmd NAME DIR  NAME's command line (words separated by spaces)
#
# Each program runs for a fraction of a second natively, so that the whole
# corpus stays small in make check.  All come from Debian packages.
# The JVM gets a fixed heap: left to size it, G1 grows it in one run and
# not in the next, and the native fault count is bimodal (17,100 or
# 18,900), so that the recorded run can be 10% from the native median
# whatever the replay does.  It also gets one GC worker of each kind and
# only the first compiler tier: on a loaded machine its faults otherwise
# spread by 2-7% as the compiler and GC threads race, and by 0.2% so.  node, for the same reason, runs V8 without its
# background threads (--single-threaded: its own two worker threads and
# libuv's stay): with them, its faults spread by 6% from run to run (the
# heap grows as its helpers race), and by 1% without.  The sqlite database (19 MB) is large enough
# that its own faults outweigh the few a replay cannot have (the kernel's
# while it execs the program, before the first recorded event).
# sqlgrow builds its database under mmap I/O: sqlite extends the file with
# pwrite and grows its shared mapping with mremap as it goes (each run
# starts from an emptied file: DROP TABLE, then VACUUM).
# Run from the top of the tree (as mk/check.sh and bench/ scripts are).
CORPUS=${CORPUS:-$PWD/tests/corpus}

corpus_names() {
	echo node java python xz gcc sqlite sqlgrow pool pipeline
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
	esac
}

corpus_missing() {
	_m=""
	for _c in $(corpus_need "$1"); do
		command -v "$_c" > /dev/null 2>&1 || _m="$_m $_c"
	done
	echo "$_m"
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
}

# python3 is Debian's (/usr/bin/python3 where it exists), not a wrapper
# script in front of it on PATH (pyenv's shim forks a dozen shells).
corpus_python() {
	if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi
}

corpus_cmd() {
	_d=$2
	case $1 in
	node) echo "node --single-threaded $CORPUS/workers.js" ;;
	java) echo "java -Xms64m -Xmx64m -XX:TieredStopAtLevel=1 -XX:ParallelGCThreads=1 -XX:ConcGCThreads=1 -cp $_d Alloc" ;;
	python) echo "$(corpus_python) $CORPUS/alloc.py" ;;
	xz) echo "xz -T2 -6 --block-size=1MiB -c -k $_d/xzin" ;;
	gcc) echo "gcc -O2 -c $CORPUS/../../format/render.c -I$CORPUS/../../format -o $_d/render.o" ;;
	sqlite) echo "sqlite3 $_d/t.db -init $CORPUS/query.sql .quit" ;;
	sqlgrow) echo "sqlite3 $_d/g.db -init $CORPUS/grow.sql .quit" ;;
	pool) echo "$(corpus_python) $CORPUS/pool.py" ;;
	pipeline) echo "sh $CORPUS/pipeline.sh $_d/xzin" ;;
	esac
}
