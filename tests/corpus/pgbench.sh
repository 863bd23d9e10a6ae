# A PostgreSQL server for its whole life, while a client drives it:
#   sh pgbench.sh DIR          start the server on DIR/pg (made by
#                              corpus_setup), run pgbench's TPC-B-like load
#                              against it for 2 seconds (4 clients, 2
#                              threads), stop it with SIGINT (a fast
#                              shutdown: its checkpointer writes the dirty
#                              buffers out), wait for it; exit 0 if both
#                              the client and the server did
#   sh pgbench.sh DIR init     the same with pgbench -i: create its tables
# The server is a postmaster that forks its auxiliary processes and one
# backend per connection; they share its buffer pool, an anonymous
# MAP_SHARED mapping made before the forks, and talk through signals.
# The client runs inside the recording, beside the server: the recorded
# tree is this shell's, so the whole server is in it from its first call
# to its exit.  PostgreSQL refuses to run as root: as root, the server and
# the client run as the owner of DIR/pg.  The server listens on a Unix
# socket in DIR/pg only.  Only shell built-ins and sleep wait for it.
d=$1
bin=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
as=""
[ "$(id -u)" = 0 ] && as="setpriv --reuid=$(stat -c %u "$d/pg") --regid=$(stat -c %g "$d/pg") --clear-groups"

$as "$bin/postgres" -D "$d/pg" -k "$d/pg" -c listen_addresses= &
pid=$!

# ready: postmaster.pid is this server's (its first line is its pid) and
# says it accepts connections (a line "ready")
ready() {
	[ -f "$d/pg/postmaster.pid" ] || return 1
	_first=
	while IFS= read -r _l; do
		[ -n "$_first" ] || { _first=$_l; [ "$_first" = "$pid" ] || return 1; }
		case $_l in ready*) return 0 ;; esac
	done < "$d/pg/postmaster.pid"
	return 1
}
until ready; do
	kill -0 $pid 2> /dev/null || { wait $pid; exit 1; }
	sleep 0.05
done

if [ "${2:-}" = init ]; then
	$as "$bin/pgbench" -h "$d/pg" -U postgres -i -q postgres
else
	$as "$bin/pgbench" -h "$d/pg" -U postgres -n -c 4 -j 2 -T 2 postgres
fi
rc=$?
kill -INT $pid
wait $pid || rc=$?
exit $rc
