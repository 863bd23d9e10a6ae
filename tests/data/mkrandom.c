/*
 * mkrandom.c - writes a trace of random but format-valid events (every
 * kind, absurd addresses and lengths, unknown threads and processes,
 * dangling stack ids: tg_event() of the unit tests' toolkit, tgen.h), for
 * the hostile-input tests of the programs that read traces
 * (tests/e2e/hostile.sh).
 *
 *   mkrandom SEED EVENTS OUT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tgen.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mkrandom SEED EVENTS OUT\n");
		return 2;
	}
	uint64_t seed = strtoull(argv[1], NULL, 0);
	uint64_t n = strtoull(argv[2], NULL, 0);
	int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[3]);
		return 1;
	}
	struct vmt_header h;
	int err;
	tg_header(&h);
	vmt_writer *w = vmt_writer_create(fd, &h, NULL, &err);
	if (!w) {
		fprintf(stderr, "mkrandom: %s\n", vmt_strerror(err));
		return 1;
	}
	struct tg_store st;
	struct vmt_event ev;
	for (uint64_t i = 0; i < n; i++) {
		/* mostly syscalls, as in real traces, with everything else mixed in */
		tg_event(&seed, tg_rand(&seed) % 3 ? VMT_EV_SYSCALL : 0, &ev, &st);
		if (ev.thread > 64 && tg_rand(&seed) % 4)
			ev.thread %= 8;
		if ((err = vmt_writer_append(w, &ev))) {
			fprintf(stderr, "mkrandom: %s\n", vmt_strerror(err));
			return 1;
		}
	}
	if ((err = vmt_writer_finish(w))) {
		fprintf(stderr, "mkrandom: %s\n", vmt_strerror(err));
		return 1;
	}
	vmt_writer_free(w);
	close(fd);
	return 0;
}
