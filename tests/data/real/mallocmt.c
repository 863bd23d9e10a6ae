/*
 * mallocmt: glibc malloc from many threads.  Each thread repeatedly builds
 * a working set of blocks of mixed sizes (16 B .. 96 KiB, below the default
 * mmap threshold, so they come from the thread's arena; 1 in 64 is 256 KiB
 * and so mmap'ed) and then frees it, newest first, so that the arena's top
 * chunk grows (heap grown with mprotect) and is trimmed (shrink_heap:
 * madvise(MADV_DONTNEED), or mmap(PROT_NONE, MAP_FIXED) when glibc thinks
 * overcommit is strict).  Pages are written so that they are really used.
 *
 * usage: mallocmt [THREADS=8] [ROUNDS=6] [WORKING_SET_KIB=8192] [TRIM=0]
 *   TRIM=1: thread 0 calls malloc_trim(0) after each round.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rounds = 6, do_trim;
static size_t wset = 8192 << 10;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (id + 1);
	size_t cap = 65536, n;
	void **v = malloc(cap * sizeof(*v));
	for (int r = 0; r < rounds; r++) {
		size_t total = 0;
		/* the working set grows a bit more each round, then shrinks */
		size_t target = wset / 2 + (wset / 2) * (size_t)(r % 3) / 2;
		for (n = 0; total < target && n < cap; n++) {
			uint64_t x = rnd(&seed);
			size_t sz;
			if (x % 64 == 0)
				sz = 256 << 10;			/* mmap'ed chunk */
			else if (x % 8 == 0)
				sz = 4096 + x % (96 << 10);	/* large arena chunk */
			else
				sz = 16 + x % 2048;		/* small */
			char *p = malloc(sz);
			if (!p)
				abort();
			memset(p, (int)n, sz);
			v[n] = p;
			total += sz;
		}
		/* free a random third first (holes), then the rest newest first */
		for (size_t i = 0; i < n; i++)
			if (rnd(&seed) % 3 == 0) {
				free(v[i]);
				v[i] = NULL;
			}
		while (n--)
			free(v[n]);
		if (do_trim && id == 0)
			malloc_trim(0);
	}
	free(v);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		wset = (size_t)atol(argv[3]) << 10;
	if (argc > 4)
		do_trim = atoi(argv[4]);
	pthread_t t[64];
	if (threads > 64)
		threads = 64;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("mallocmt: %d threads x %d rounds, working set %zu KiB, trim %d\n", threads, rounds,
	       wset >> 10, do_trim);
	return 0;
}
