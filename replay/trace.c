/*
 * trace.c - load a whole trace for replay (rp_trace_load): read its events
 * into the loader (load.c), then check the peaks against --max-memory, mark
 * what the replay loop finds inline in its elements, decide which files
 * are mapped from their original path; free it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "loadint.h"

void rp_options_default(struct rp_options *o)
{
	memset(o, 0, sizeof(*o));
	o->order = RP_ORDER_RESOURCE;
	o->placement = RP_PLACE_KERNEL;
	o->files = RP_FILES_SCRATCH;
	o->speed = 0;
	o->scale = 1;
	o->max_memory = 0;
}

static uint64_t half_ram(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || ps <= 0)
		return 1ull << 30;
	return (uint64_t)pages * (uint64_t)ps / 2;
}

static uint64_t void_length(uint64_t page)
{
	/* Addresses below vm.mmap_min_addr can never be mapped (the replay
	 * never maps there itself), so ops on them fail harmlessly. */
	uint64_t v = 0;
	FILE *f = fopen("/proc/sys/vm/mmap_min_addr", "r");
	if (f) {
		unsigned long long x;
		if (fscanf(f, "%llu", &x) == 1)
			v = x;
		fclose(f);
	}
	if (v > 65536)
		v = 65536;
	return v & ~(page - 1);
}

/* What the replay loop needs of a one-piece range op, copied into the
 * element (its piece, a single touch run), and the elements it runs on
 * its short path (worker.c): after the load, when every wait, post and
 * VMA sample is known. */
static void mark_inline(struct loader *L)
{
	rp_trace *t = L->t;
	for (uint32_t tid = 0; tid < t->nthreads; tid++)
		for (uint32_t i = 0; i < t->threads[tid].nelem; i++) {
			struct rp_elem *e = &t->threads[tid].elem[i];
			if (!(e->kind == RK_SYSCALL && e->how == RX_RANGE && e->npieces == 1 &&
			      e->op != VMT_OP_MINCORE && !(e->flags & RF_RAW_LEN) &&
			      t->pieces[e->piece0].region != RP_VOID))
				continue;
			const struct rp_piece *p = &t->pieces[e->piece0];
			e->flags |= RF_PIECE1;
			e->region = p->region;
			e->off2 = p->off;
			e->aux = p->len;
			if (!e->ndeps && !(e->flags & (RF_SAMPLE_VMAS | RF_POST)))
				e->flags |= RF_FAST;
			if (e->ntouch != 1)
				continue;
			const struct rp_touch *tc = &t->touches[e->touch0];
			if (tc->off / L->page > UINT32_MAX || tc->off % L->page)
				continue;
			e->flags |= RF_TOUCH1;
			e->region2 = tc->region;
			e->tpage = (uint32_t)(tc->off / L->page);
			e->arg = tc->npages;
		}
}

static int finish(struct loader *L)
{
	rp_trace *t = L->t;
	int rc;
	/* Threads still running when the recording stopped end there. */
	for (uint32_t tid = 0; tid < t->nthreads; tid++)
		if (!t->threads[tid].ended && (rc = ld_end_thread(L, tid, 0)))
			return rc;
	for (uint32_t p = 0; p < t->nprocs; p++) {
		struct lproc *P = &L->lp[p];
		/* Every process runs as its first thread: one without any
		 * (a root too) has no place in the run. */
		/* Cut short, a fork's child may not have started yet: it
		 * has no element and is never forked. */
		if (t->cut && P->pending_fork && t->procs[p].parent != RP_VOID)
			continue;
		if (P->pending_fork || t->procs[p].first_thread == RP_VOID)
			return ld_fail(L, VMT_E_CORRUPT, "process %u never had a thread", t->procs[p].rec);
		if (P->max_segs)
			t->threads[P->max_thread].elem[P->max_elem].flags |= RF_SAMPLE_VMAS;
	}
	if ((rc = ld_check_memory(L)))
		return rc;
	mark_inline(L);
	for (uint32_t i = 0; i < t->nfiles; i++) {
		struct rp_file *f = &t->files[i];
		struct stat st;
		f->size = (f->size + L->page - 1) & ~(L->page - 1);
		if (t->opt.files == RP_FILES_ORIGINAL && !f->shared_rw && !f->zero && !f->shm &&
		    f->rec_size &&
		    f->path[0] == '/' && stat(f->path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == f->rec_size)
			f->original = 1;
	}
	return 0;
}

static void free_loader(struct loader *L)
{
	if (L->lt)
		for (uint32_t i = 0; i < L->t->nthreads; i++) {
			free(L->lt[i].tr);
			free(L->lt[i].pt);
			free(L->lt[i].known);
			free(L->lt[i].pathbuf);
		}
	if (L->lp)
		for (uint32_t i = 0; i < L->t->nprocs; i++) {
			rpam_free(&L->lp[i].map);
			rpam_free(&L->lp[i].last);
			rpam_free(&L->lp[i].touched);
			free(L->lp[i].threads);
		}
	free(L->lt);
	free(L->lp);
	free(L->thread_of_rec);
	free(L->proc_of_rec);
}

int rp_trace_load(const char *path, const struct rp_options *o, rp_trace **out, char *msg,
		  size_t msglen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		if (msg && msglen)
			snprintf(msg, msglen, "%s", strerror(errno));
		return err;
	}
	int rc = rp_trace_load_fd(fd, path, o, out, msg, msglen);
	close(fd);
	return rc;
}

int rp_trace_load_fd(int fd, const char *name, const struct rp_options *o, rp_trace **out,
		     char *msg, size_t msglen)
{
	struct loader L;
	struct vmt_event ev;
	int err = 0, rc;
	char dummy[8];

	*out = NULL;
	if (!msg || !msglen) {
		msg = dummy;
		msglen = sizeof(dummy);
	}
	msg[0] = 0;
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, msglen);
	if (!r) {
		if (!msg[0])
			snprintf(msg, msglen, "%s", vmt_strerror(err));
		return err ? err : -EINVAL;
	}
	memset(&L, 0, sizeof(L));
	rp_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		vmt_reader_free(r);
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	t->load_start_ns = vmt_now_ns();
	t->opt = *o;
	if (!t->opt.max_memory)
		t->opt.max_memory = half_ram();
	if (!t->opt.scale)
		t->opt.scale = 1;
	L.t = t;
	L.msg = msg;
	L.msglen = msglen;
	L.prev_thread = RP_VOID;
	const struct vmt_header *h = vmt_reader_header(r);
	long ps = sysconf(_SC_PAGESIZE);
	if (!h->page_size || (h->page_size & (h->page_size - 1)) || (long)h->page_size != ps) {
		snprintf(msg, msglen, "recorded with %u-byte pages; this machine has %ld",
			 h->page_size, ps);
		rc = -EINVAL;
		goto out;
	}
	L.page = h->page_size;
	t->page_size = h->page_size;
	t->void_len = void_length(L.page);
	t->path = strdup(name ? name : "");
	struct stat st;
	uint64_t fsize = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	/* Decoding beside the loader's simulation; the thread ends with the
	 * reader, before any run forks. */
	vmt_reader_prefetch(r);
	int first = 1;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		L.event = vmt_reader_event_index(r) - 1;
		if (first) {
			t->first_ts = ev.ts_ns;
			first = 0;
		}
		if (ev.ts_ns > t->last_ts)
			t->last_ts = ev.ts_ns;
		if (o->progress && !(L.event & 8191))
			o->progress(o->progress_arg, RP_PROGRESS_LOAD, vmt_reader_offset(r), fsize);
		if ((rc = ld_event(&L, &ev)) < 0)
			goto out;
	}
	if (rc == VMT_E_TRUNC && o->truncated == RP_TRUNC_REPLAY) {
		/* vmrec keeps every chunk it completed: the events before the
		 * cut are whole, and threads alive there end there (finish). */
		if (!(t->cut = strdup(vmt_reader_errmsg(r)))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = 0;
	} else if (rc < 0) {
		snprintf(msg, msglen, "%s%s", vmt_reader_errmsg(r), rc != VMT_E_TRUNC ? ""
			 : "; --truncated=replay replays the events before the cut");
		goto out;
	}
	t->events = vmt_reader_event_index(r);
	if (t->nthreads == 0) {
		snprintf(msg, msglen, "the trace has no threads to replay");
		rc = -EINVAL;
		goto out;
	}
	rc = finish(&L);
	t->load_ns = vmt_now_ns() - t->load_start_ns;
out:
	if (rc < 0 && !msg[0])
		snprintf(msg, msglen, "%s", vmt_strerror(rc));
	free_loader(&L);
	vmt_reader_free(r);
	if (rc < 0) {
		rp_trace_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void rp_trace_free(rp_trace *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].elem);
	for (uint32_t i = 0; i < t->nfiles; i++)
		free(t->files[i].path);
	free(t->threads);
	free(t->procs);
	free(t->regions);
	free(t->pieces);
	free(t->touches);
	free(t->deps);
	free(t->standins);
	free(t->plans);
	free(t->files);
	free(t->path);
	free(t->cut);
	free(t);
}

void rp_trace_get_info(const rp_trace *t, struct rp_trace_info *i)
{
	memset(i, 0, sizeof(*i));
	i->events = t->events;
	i->ops = t->nops;
	i->skipped = t->skipped_ops;
	i->threads = t->nthreads;
	i->procs = t->nprocs;
	i->peak_mapped = t->peak_mapped;
	i->peak_touched = t->peak_touched;
	i->touch_unmapped_pages = t->touch_unmapped_pages;
	i->lost_events = t->lost_events;
	i->cut = t->cut;
}
