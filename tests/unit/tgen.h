/*
 * tgen.h - test helpers: seeded random events of every kind, event
 * comparison, and traces in memory files.
 */
#ifndef VMT_TGEN_H
#define VMT_TGEN_H

#include <stdint.h>
#include "vmtrace.h"

/* xorshift64* generator: deterministic for a seed. */
uint64_t tg_rand(uint64_t *state);

/* Storage that keeps a generated event's strings and arrays alive. */
struct tg_store {
	char str[4][64];
	struct vmt_map_entry maps[8];
	struct vmt_touch_run runs[16];
	uint64_t ips[32];
};

/* Fill *ev with a random valid event of `kind` (0: random kind). */
void tg_event(uint64_t *rng, uint32_t kind, struct vmt_event *ev, struct tg_store *st);

/* 1 if a and b are equal in every field the format keeps. */
int tg_event_equal(const struct vmt_event *a, const struct vmt_event *b);

/* A fixed header for reproducible traces. */
void tg_header(struct vmt_header *h);

/* An anonymous memory file (memfd); aborts on failure. */
int tg_memfd(const char *name);

/* Read fd's whole contents from offset 0; *len set; malloc'd. */
uint8_t *tg_slurp(int fd, size_t *len);

/* A memfd holding buf[0..len). */
int tg_memfd_with(const uint8_t *buf, size_t len);

/* Read every event of the trace in fd (from offset 0): returns the reader's
 * final code (0 clean end, <0 error) and the number of events in *n. */
int tg_count_events(int fd, uint64_t *n, char *msg, size_t msglen);

#endif
