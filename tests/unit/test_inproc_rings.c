/*
 * test_inproc_rings.c - the inproc backend's rings and queues
 * (record/inprocev.c): a thread's ring is freed only once nothing more
 * can be in it, and the queues' records become events in time order,
 * an mmap after the munmap of its process that released its range.  A
 * ring is written here as the runtime writes it, and drained and emitted
 * by the backend's own passes; the order tests queue records directly.
 * The records are NOTEs, which reach the notice callback in the order
 * they are emitted (with no START record, the queue knows no pid:
 * "process 0"), and calls, which emit nothing without a task.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "inproc_int.h"

#define PID 4242

struct fix {
	struct inproc *ip;
	struct vmr_rec r;
	char seen[16][64]; /* the notices, in order */
	int nseen;
	uint64_t pos;	   /* the ring's head, as the runtime keeps it */
};

static void on_notice(void *ctx, const char *text)
{
	struct fix *f = ctx;
	if (f->nseen < 16)
		snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", text);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->ip = calloc(1, sizeof(*f->ip));
	assert_non_null(f->ip);
	void *m = mmap(NULL, IP_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	f->ip->shm = m;
	f->ip->hdr = m;
	f->r.inproc = f->ip;
	f->r.notice = on_notice;
	f->r.notice_ctx = f;
	struct ip_slot *s = ip_slot_at(m, 0);
	s->tid = s->pid = PID;
	s->state = IP_SLOT_LIVE;
	f->ip->hdr->used[0] = 1; /* (claimed: as claim_slot marks it) */
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	ip_ev_free(f->ip);
	munmap(f->ip->shm, IP_SHM_SIZE);
	free(f->ip);
	free(f);
	return 0;
}

/* The thread writes a NOTE saying text, at time t (as rt_put does: the
 * body, then the header's word). */
static void put_note(struct fix *f, const char *text, uint64_t t)
{
	struct ip_slot *s = ip_slot_at(f->ip->shm, 0);
	unsigned char *ring = ip_ring_of(s);
	uint32_t len = (uint32_t)((sizeof(struct ip_rec) + strlen(text) + 1 + 7) & ~7u);
	struct ip_rec h = { 0, 0, t };
	memcpy(ring + f->pos + 4, (const char *)&h + 4, sizeof(h) - 4);
	memcpy(ring + f->pos + sizeof(h), text, strlen(text) + 1);
	__atomic_store_n((uint32_t *)(void *)(ring + f->pos), IP_REC_WORD(IPR_NOTE, len), __ATOMIC_RELEASE);
	f->pos += len;
	s->resv = f->pos;
}

static void pass_and_emit(struct fix *f)
{
	ip_emit(&f->r, f->ip, ip_pass(&f->r, f->ip));
}

static uint32_t slot_state(struct fix *f)
{
	uint32_t st = ip_slot_at(f->ip->shm, 0)->state;
	/* (a slot is in the used bitmap exactly while it is not free) */
	assert_int_equal(f->ip->hdr->used[0] & 1, st != IP_SLOT_FREE);
	return st;
}

/* The process is seen gone after a drain, while its thread's last record
 * was still in the ring: the record is emitted, and the ring freed only
 * after that.  (Before, the ring was freed as its queue emptied, with the
 * record in it: a thread's last call was lost now and then.) */
static void test_gone_after_a_drain_keeps_the_last_record(void **state)
{
	struct fix *f = *state;
	put_note(f, "first", 1);
	(void)ip_pass(&f->r, f->ip); /* copied, not emitted yet */
	put_note(f, "last", 2);	     /* written after that drain */
	ip_rings_dead(f->ip, PID);   /* then the process ends */
	ip_emit(&f->r, f->ip, UINT64_MAX);
	assert_int_equal(f->nseen, 1);
	assert_string_equal(f->seen[0], "process 0: first");
	assert_int_equal(slot_state(f), IP_SLOT_LIVE);
	pass_and_emit(f);
	assert_int_equal(f->nseen, 2);
	assert_string_equal(f->seen[1], "process 0: last");
	assert_int_equal(slot_state(f), IP_SLOT_FREE);
}

/* A ring is not freed while its thread may still write: emptying its
 * queue is not enough. */
static void test_live_ring_stays(void **state)
{
	struct fix *f = *state;
	put_note(f, "one", 1);
	pass_and_emit(f);
	pass_and_emit(f);
	assert_int_equal(f->nseen, 1);
	assert_int_equal(slot_state(f), IP_SLOT_LIVE);
	put_note(f, "two", 2);
	pass_and_emit(f);
	assert_int_equal(f->nseen, 2);
	assert_string_equal(f->seen[1], "process 0: two");
}

/* A ring its thread made DONE is freed by the drain that copies its last
 * records, once they are emitted. */
static void test_done_ring_freed_once_emitted(void **state)
{
	struct fix *f = *state;
	put_note(f, "one", 1);
	put_note(f, "exit", 2);
	__atomic_store_n(&ip_slot_at(f->ip->shm, 0)->state, IP_SLOT_DONE, __ATOMIC_RELEASE);
	(void)ip_pass(&f->r, f->ip);
	assert_int_equal(slot_state(f), IP_SLOT_DONE);
	ip_emit(&f->r, f->ip, UINT64_MAX);
	assert_int_equal(f->nseen, 2);
	assert_int_equal(slot_state(f), IP_SLOT_FREE);
}

/* A ring seen dead before its first record was copied (its queue knows
 * no pid yet) is still drained, then freed. */
static void test_dead_before_first_copy(void **state)
{
	struct fix *f = *state;
	put_note(f, "only", 1);
	ip_rings_dead(f->ip, PID);
	pass_and_emit(f);
	assert_int_equal(f->nseen, 1);
	assert_int_equal(slot_state(f), IP_SLOT_FREE);
}

/* ---- the order across queues ----------------------------------------------- */

#define NR_MMAP 9
#define NR_MUNMAP 11
#define RANGE 0x7f0000000000ull

static void q_note(struct fix *f, int qi, const char *text, uint64_t t)
{
	struct {
		struct ip_rec h;
		char text[24];
	} n = { { IP_REC_WORD(IPR_NOTE, sizeof(n)), 0, t }, "" };
	snprintf(n.text, sizeof(n.text), "%s", text);
	assert_int_equal(ip_queue(f->ip, qi, &n, sizeof(n), t, t), 0);
}

static void q_call(struct fix *f, int qi, uint32_t nr, uint64_t a0, uint64_t a1, int64_t ret,
		   uint64_t t, uint64_t t_exit)
{
	struct ip_call c = { .h = { IP_REC_WORD(IPR_CALL, sizeof(c)), nr, t }, .ret = ret,
			     .t_exit = t_exit };
	c.args[0] = a0;
	c.args[1] = a1;
	c.args[3] = 0x22; /* MAP_PRIVATE | MAP_ANONYMOUS */
	assert_int_equal(ip_queue(f->ip, qi, &c, sizeof(c), t, t_exit), 0);
}

/* Queue 1's mmap (times 10 to 50) got the page that queue 2's munmap at
 * 30 released; queue 3 wrote at 15.  pid2: queue 2's process.  Queue 1's
 * NOTE marks where its mmap went: its key, 12, puts it right after the
 * mmap (a record's key never goes below its queue's last). */
static void order_case(struct fix *f, pid_t pid2)
{
	f->r.page_size = 4096;
	f->r.sys.op_of_nr[NR_MMAP] = VMT_OP_MMAP;
	f->r.sys.op_of_nr[NR_MUNMAP] = VMT_OP_MUNMAP;
	f->ip->q[1].pid = f->ip->q[3].pid = 7;
	f->ip->q[2].pid = pid2;
	q_call(f, 1, NR_MMAP, 0, 4096, (int64_t)RANGE, 10, 50);
	q_note(f, 1, "a after the mmap", 12);
	q_note(f, 2, "b before the munmap", 25);
	q_call(f, 2, NR_MUNMAP, RANGE, 4096, 0, 30, 31);
	q_note(f, 3, "c", 15);
	ip_emit(&f->r, f->ip, UINT64_MAX);
	assert_int_equal(f->nseen, 3);
}

/* The mmap waits for the munmap; the others keep their order meanwhile:
 * queue 3's record at 15 is not passed by queue 2's at 25.  (It was,
 * when queue 2's records were pulled forward instead: b, a, c.) */
static void test_mmap_after_its_release(void **state)
{
	struct fix *f = *state;
	order_case(f, 7);
	assert_string_equal(f->seen[0], "process 7: c");
	assert_string_equal(f->seen[1], "process 7: b before the munmap");
	assert_string_equal(f->seen[2], "process 7: a after the mmap");
}

/* Another process's munmap released nothing of this one's. */
static void test_release_of_another_process(void **state)
{
	struct fix *f = *state;
	order_case(f, 8);
	assert_string_equal(f->seen[0], "process 7: a after the mmap");
	assert_string_equal(f->seen[1], "process 7: c");
	assert_string_equal(f->seen[2], "process 8: b before the munmap");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gone_after_a_drain_keeps_the_last_record, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_live_ring_stays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_done_ring_freed_once_emitted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_before_first_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmap_after_its_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_of_another_process, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
