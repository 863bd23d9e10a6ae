/*
 * prefetch_int.h - internal to libvmtrace: decoding events ahead of their
 * consumer on a second thread (the reader's vmt_reader_prefetch()).
 *
 * A producer thread calls a source function, which decodes the next events
 * (the reader's sequential path: read, decompress, decode, validate), and
 * fills batches of events; the consumer takes them whole, in order.
 * Strings and arrays of events are copied into their batch, so that the
 * pointers in an event stay valid until the consumer asks for the next
 * batch.  A batch ends at a chunk boundary, so that each batch has one
 * chunk offset.
 */
#ifndef VMT_PREFETCH_INT_H
#define VMT_PREFETCH_INT_H

#include <stddef.h>
#include <stdint.h>
#include "vmtrace.h"

/*
 * The batches go round between the two threads, so each line of an event
 * was last read on the other CPU: the producer's first store into it
 * waited for the line to come over (~50 ns an event on a VM, the most of
 * what the second CPU cost), and the consumer's first load the same.
 * Each asks for the lines of the event PF_AHEAD ahead of the one it is
 * on, so that those transfers overlap: 4 and 8 measured alike, 2 worse.
 * Hints: nothing happens where the CPU cannot.
 */
#define PF_AHEAD 8

/* The producer is about to write the n bytes at p.  On x86 the prefetch
 * that takes a line for writing (PREFETCHW) is asked for only where the
 * CPU says it has it; a prefetch for reading there did not help. */
static inline void pf_hint_write(const void *p, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
	if (!__builtin_cpu_supports("prfchw"))
		return;
	for (size_t off = 0; off < n; off += 64)
		__asm__ volatile("prefetchw %0" ::"m"(((const char *)p)[off]));
#else
	for (size_t off = 0; off < n; off += 64)
		__builtin_prefetch((const char *)p + off, 1);
#endif
}

/* The consumer is about to read the n bytes at p. */
static inline void pf_hint_read(const void *p, size_t n)
{
	for (size_t off = 0; off < n; off += 64)
		__builtin_prefetch((const char *)p + off, 0);
}

/* The source: fills evs[0 .. *n) with up to max events, all of one chunk
 * (*chunk_off its offset; *last set when they end it), of which only the
 * last may point to memory of the source's (valid until the next call),
 * and returns 1; 0 at the clean end, or a negative error, after the *n
 * events before it; then it is not called again. */
typedef int (*vmt_pf_source)(void *src, struct vmt_event *evs, uint32_t max, uint32_t *n,
			     uint64_t *chunk_off, int *last);

struct vmt_prefetch;

/* Start the producer thread on src.  NULL and *err (negative errno) on
 * failure; nothing is consumed from src then. */
struct vmt_prefetch *vmt_pf_start(vmt_pf_source fn, void *src, int *err);

/* The next batch: 1 with its events evs[0 .. *n) (n > 0; valid until the
 * next call) and *chunk_off (their chunk's offset), 0 at the end, or the
 * source's error (sticky).  The producer is done with src once this has
 * returned 0 or an error. */
int vmt_pf_batch(struct vmt_prefetch *p, const struct vmt_event **evs, uint32_t *n,
		 uint64_t *chunk_off);

/* Stop the producer (it finishes the event it is decoding), wait for it
 * and free everything.  Accepts NULL. */
void vmt_pf_stop(struct vmt_prefetch *p);
/* on: wait until the producer waits (or has ended, and its thread has
 * been joined), and keep it waiting until vmt_pf_hold(p, 0), so that the
 * process can fork with no thread inside an allocator that is not
 * fork-safe (ASan's). */
void vmt_pf_hold(struct vmt_prefetch *p, int on);

#endif
