#!/bin/sh
# run-redis.sh TRACE [PORT]: record redis-server (Debian 7.0.15, jemalloc 5.3.0)
# under vmrec while redis-benchmark fills it with 8 KiB values, then
# FLUSHALL (SYNC, or ASYNC with FLUSH=async), wait for jemalloc's decay (background thread), MEMORY PURGE,
# fill again, and shut it down.  Keeps each recording to ~15 s.
set -e
TRACE=${1:?trace}; PORT=${2:-6411}
V=${V:-build}
DIR=$(mktemp -d)
$V/vmrec --stacks --force -o "$TRACE" -- redis-server --port "$PORT" --bind 127.0.0.1 \
    --save '' --appendonly no --dir "$DIR" --daemonize no --loglevel warning &
RECPID=$!
for i in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$PORT" info memory | grep -E 'mem_allocator|used_memory_human|allocator_resident'
for round in 1 2; do
  redis-benchmark -p "$PORT" -q -t set -d 8192 -n 30000 -r 30000 -c 8 -P 4 | tail -1
  redis-benchmark -p "$PORT" -q -t lpush,lpop -d 512 -n 40000 -c 8 -P 4 | tail -2
  redis-cli -p "$PORT" info memory | grep -E 'used_memory_human|allocator_resident|allocator_frag_bytes'
  redis-cli -p "$PORT" flushall ${FLUSH:-sync}
  sleep 4
  redis-cli -p "$PORT" memory purge
done
redis-cli -p "$PORT" info memory | grep -E 'used_memory_human|allocator_resident'
redis-cli -p "$PORT" shutdown nosave || true
wait $RECPID || true
rm -rf "$DIR"
