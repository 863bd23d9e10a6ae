/*
 * mkrandom.c - writes a trace of random but format-valid events (every
 * kind, absurd addresses and lengths, unknown threads and processes,
 * dangling stack ids: tg_event() of the unit tests' toolkit, tgen.h), for
 * the hostile-input tests of the programs that read traces
 * (tests/e2e/hostile.sh).
 *
 *   mkrandom SEED EVENTS OUT
 *
 * and a replayable trace of one process with N threads that each map and
 * unmap a page, for the bounds of vmreplay --max-memory:
 *
 *   mkrandom threads N OUT
 *   mkrandom procs N OUT      (N forked processes instead)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tgen.h"

/* N threads, each started by thread 0, mapping and unmapping one page;
 * or (procs) N processes forked by the first, each with one thread. */
static int many(uint32_t n, int procs, const char *out)
{
	static const struct tg_map m[] = {
		{ 0x555400000000ull, 0x555400002000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app" },
		{ 0x7ffd00000000ull, 0x7ffd00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]" },
	};
	struct vmt_header h;
	struct tg_trace t;
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(out);
		return 1;
	}
	vmt_header_from_host(&h);
	h.start_mono_ns = 1000;
	tg_trace_open(&t, fd, &h);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_maps(&t, 0, 0, m, 2);
	for (uint32_t i = 1; i <= n; i++) {
		uint64_t a = 0x7f0000000000ull + (uint64_t)i * 2 * PAGE;
		uint32_t p = procs ? i : 0;
		if (procs)
			tg_proc(&t, p, i, 0, 0);
		else
			tg_thread(&t, 0, i, 0);
		TG_PUT_SC(&t, p, i, VMT_OP_MMAP, (int64_t)a, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
		TG_PUT_SC(&t, p, i, VMT_OP_MUNMAP, 0, a, PAGE);
		tg_thread_exit(&t, p, i);
		if (procs)
			tg_proc_exit(&t, p, i);
	}
	tg_thread_exit(&t, 0, 0);
	tg_finish(&t);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && (!strcmp(argv[1], "threads") || !strcmp(argv[1], "procs")))
		return many((uint32_t)strtoul(argv[2], NULL, 0), argv[1][0] == 'p', argv[3]);
	if (argc != 4) {
		fprintf(stderr, "usage: mkrandom SEED EVENTS OUT | mkrandom threads|procs N OUT\n");
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
