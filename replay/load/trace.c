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
#include "load_int.h"

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

uint64_t rp_window_default(void)
{
	uint64_t w = half_ram() / 8;
	return w < RP_WINDOW_LOW ? RP_WINDOW_LOW : w > RP_WINDOW_HIGH ? RP_WINDOW_HIGH : w;
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

/* The end of the load: threads still running end, every process must
 * have run, the memory peaks are checked, and everything is published. */
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
	}
	if ((rc = ld_check_memory(L)))
		return rc;
	t->complete = 1;
	return ld_publish(L, 0);
}

static void free_loader(struct loader *L)
{
	if (L->lt)
		for (uint32_t i = 0; i < L->t->nthreads; i++) {
			free(L->lt[i].tr);
			free(L->lt[i].pt);
			free(L->lt[i].xf);
			free(L->lt[i].known);
			free(L->lt[i].pathbuf);
			free(L->lt[i].bix);
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
	free(L->ov);
	free(L->shared);
	free(L->thread_of_rec);
	free(L->proc_of_rec);
	free(L->fifo);
	free(L->dirty);
}

/* A load in progress: the loader, its reader, and its message. */
struct rp_load {
	struct loader L;
	vmt_reader *r;
	uint64_t fsize;
	int first;
	char msg[320];
};

static void load_free(rp_trace *t)
{
	struct rp_load *ld = t->load;
	if (!ld)
		return;
	free_loader(&ld->L);
	vmt_reader_free(ld->r);
	free(ld);
	t->load = NULL;
}

/* Forget what a load made (for loading again). */
static void trace_clear(rp_trace *t)
{
	for (uint32_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].path);
		free(t->files[i].warm);
		free(t->files[i].cold);
	}
	free(t->threads);
	free(t->procs);
	free(t->regions);
	free(t->pieces);
	free(t->touches);
	free(t->deps);
	free(t->standins);
	free(t->plans);
	free(t->files);
	free(t->rec_threads);
	free(t->rec_procs);
	free(t->cut);
	free(t->rec_mm);
	rp_arena_free(t->arena);
	size_t keep = offsetof(rp_trace, threads);
	memset((char *)t + keep, 0, offsetof(rp_trace, fd) - keep);
	t->first_ts = t->last_ts = t->events = t->nops = 0;
}

/* The words of options (the header's OPTIONS) that name mm settings. */
static char *rec_mm_words(const char *options)
{
	char out[512] = "", v[128];
	for (size_t i = 0; vmt_mm_key(i); i++) {
		size_t n = strlen(out);
		if (vmt_options_get(options, vmt_mm_key(i), v, sizeof(v)) && *v)
			snprintf(out + n, sizeof(out) - n, "%s%s=%s", n ? " " : "", vmt_mm_key(i), v);
	}
	return strdup(out);
}

/* Start loading t from the start of its file: the header, the arena, the
 * loader.  msg: the caller's (the load's own once it runs beside a run). */
static int load_begin(rp_trace *t, char *msg, size_t msglen)
{
	int err = 0;
	uint64_t start = t->load_start_ns, ns = t->load_ns;
	trace_clear(t);
	t->load_start_ns = t->loads ? start : vmt_now_ns();
	t->load_ns = ns;
	t->loads++;
	if (lseek(t->fd, (off_t)t->fd_off, SEEK_SET) < 0 && t->fd_off) {
		snprintf(msg, msglen, "cannot read the trace again: %s", strerror(errno));
		return -errno;
	}
	struct rp_load *ld = calloc(1, sizeof(*ld));
	if (!ld) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	t->load = ld;
	ld->r = vmt_reader_open_fd(t->fd, &err, msg, msglen);
	if (!ld->r) {
		if (!msg[0])
			snprintf(msg, msglen, "%s", vmt_strerror(err));
		return err ? err : -EINVAL;
	}
	if (!(t->arena = rp_arena_new())) {
		snprintf(msg, msglen, "cannot map the replay's shared memory: %s", strerror(errno));
		return -ENOMEM;
	}
	struct loader *L = &ld->L;
	L->t = t;
	L->msg = msg;
	L->msglen = msglen;
	L->prev_thread = RP_VOID;
	const struct vmt_header *h = vmt_reader_header(ld->r);
	long ps = sysconf(_SC_PAGESIZE);
	if (!h->page_size || (h->page_size & (h->page_size - 1)) || (long)h->page_size != ps) {
		snprintf(msg, msglen, "recorded with %u-byte pages; this machine has %ld",
			 h->page_size, ps);
		return -EINVAL;
	}
	L->page = h->page_size;
	t->page_size = h->page_size;
	t->rec_minor = h->minor;
	char rw[8];
	t->rec_rewritten = vmt_options_get(h->options, "rewrite", rw, sizeof(rw));
	snprintf(t->rec_backend, sizeof(t->rec_backend), "%s", h->backend ? h->backend : "");
	free(t->rec_mm);
	if (!(t->rec_mm = rec_mm_words(h->options))) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	t->void_len = void_length(L->page);
	struct stat st;
	ld->fsize = fstat(t->fd, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	ld->first = 1;
	/* Decoding beside the loader's simulation; the thread ends with the
	 * reader, before any run forks (a loaded trace), or with the load. */
	vmt_reader_prefetch(ld->r);
	return 0;
}

/* Can the run start here: has every root process (they start with the
 * run) its first thread and, frozen at the start, its snapshot? */
static int roots_ready(struct loader *L)
{
	rp_trace *t = L->t;
	if (!t->nthreads)
		return 0;
	for (uint32_t p = 0; p < t->nprocs; p++)
		if (t->procs[p].parent == RP_VOID &&
		    (t->procs[p].first_thread == RP_VOID || !L->lp[p].have_snapshot))
			return 0;
	return 1;
}

/* Load events until the end of the trace, or (window set) until its
 * elements fill the window.  Returns 1 at the end, 0 when it stopped
 * short, <0 with the message. */
static int load_events(rp_trace *t, int window)
{
	struct rp_load *ld = t->load;
	struct loader *L = &ld->L;
	const struct rp_options *o = &t->opt;
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(ld->r, &ev)) == 1) {
		L->event = vmt_reader_event_index(ld->r) - 1;
		if (ld->first) {
			t->first_ts = ev.ts_ns;
			ld->first = 0;
		}
		if (ev.ts_ns > t->last_ts)
			t->last_ts = ev.ts_ns;
		if (!(L->event & 8191)) {
			if (o->progress && !L->done)
				o->progress(o->progress_arg, RP_PROGRESS_LOAD, vmt_reader_offset(ld->r),
					    ld->fsize);
			/* beside a run that has ended: stop */
			if (L->wait && L->wait(L->hook_arg, 0) < 0)
				return ld_fail(L, -ECANCELED, "the replay ended");
		}
		if ((rc = ld_event(L, &ev)) < 0)
			return rc;
		if (window && L->stored > t->window && roots_ready(L)) {
			/* the run will go on from here: what it may execute */
			rc = ld_publish(L, LD_LOOKAHEAD);
			return rc < 0 ? rc : 0;
		}
	}
	if (rc == VMT_E_TRUNC && o->truncated == RP_TRUNC_REPLAY) {
		/* vmrec keeps every chunk it completed: the events before the
		 * cut are whole, and threads alive there end there (finish). */
		if (!(t->cut = strdup(vmt_reader_errmsg(ld->r))))
			return ld_fail(L, -ENOMEM, "out of memory");
	} else if (rc < 0) {
		snprintf(L->msg, L->msglen, "%s%s", vmt_reader_errmsg(ld->r), rc != VMT_E_TRUNC ? ""
			 : "; --truncated=replay replays the events before the cut");
		return L->err = rc;
	}
	t->events = vmt_reader_event_index(ld->r);
	if (t->nthreads == 0) {
		snprintf(L->msg, L->msglen, "the trace has no threads to replay");
		return L->err = -EINVAL;
	}
	if ((rc = finish(L)) < 0)
		return rc;
	if (t->loads == 1)
		t->load_ns = vmt_now_ns() - t->load_start_ns;
	return 1;
}

void rp_load_hold(const rp_trace *t, int on)
{
	if (t->load && t->load->r)
		vmt_reader_hold(t->load->r, on);
}

int rp_load_rest(rp_trace *t, const struct rp_load_hooks *h)
{
	struct loader *L = &t->load->L;
	L->sync = h->sync;
	L->done = h->done;
	L->wait = h->wait;
	L->hook_arg = h->arg;
	int rc = load_events(t, 0);
	if (rc == 1) {
		load_free(t);
		return 0;
	}
	return rc < 0 ? rc : -EIO;
}

const char *rp_load_msg(const rp_trace *t)
{
	return t->load ? t->load->msg : "";
}

/* Load t from its start up to its window: all of it (the arena then
 * private, see rp_arena_privatize: nothing writes it any more), or the
 * first window, the rest to be loaded as a run goes on (the load's
 * message from then on its own).  0, or <0 with msg. */
static int load_first(rp_trace *t, char *msg, size_t msglen)
{
	int rc = load_begin(t, msg, msglen);
	if (rc == 0)
		rc = load_events(t, 1);
	if (rc < 0) {
		if (!msg[0])
			snprintf(msg, msglen, "%s", vmt_strerror(rc));
		return rc;
	}
	if (rc == 1) {
		load_free(t);
		rp_arena_privatize(t->arena, t->nthreads, t->nprocs, t->nfiles);
	} else {
		t->load->L.msg = t->load->msg;
		t->load->L.msglen = sizeof(t->load->msg);
	}
	return 0;
}

int rp_load_again(rp_trace *t, char *msg, size_t msglen)
{
	load_free(t);
	int rc = load_first(t, msg, msglen);
	if (rc < 0) {
		load_free(t);
		t->streamed = 1; /* (a later run loads it again) */
	}
	return rc;
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
	char dummy[8];
	int rc;

	*out = NULL;
	if (!msg || !msglen) {
		msg = dummy;
		msglen = sizeof(dummy);
	}
	msg[0] = 0;
	rp_trace *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(msg, msglen, "out of memory");
		return -ENOMEM;
	}
	t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	off_t at = lseek(fd, 0, SEEK_CUR);
	t->fd_off = at > 0 ? (uint64_t)at : 0;
	t->opt = *o;
	if (!t->opt.max_memory)
		t->opt.max_memory = half_ram();
	if (!t->opt.scale)
		t->opt.scale = 1;
	/* A trace that cannot be read again (a pipe) is loaded whole. */
	t->window = o->window ? o->window : rp_window_default();
	if (at < 0)
		t->window = UINT64_MAX;
	if (t->fd < 0 || !(t->path = strdup(name ? name : ""))) {
		snprintf(msg, msglen, t->fd < 0 ? "cannot duplicate the trace's descriptor" : "out of memory");
		rp_trace_free(t);
		return -ENOMEM;
	}
	if ((rc = load_first(t, msg, msglen)) < 0) {
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
	load_free(t);
	trace_clear(t);
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
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
	i->own_bytes = t->own_bytes + t->loaded_bytes;
	i->streamed = !t->complete || t->streamed;
	i->touch_unmapped_pages = t->touch_unmapped_pages;
	i->lost_events = t->lost_events;
	i->cut = t->cut;
	i->rec_mm = t->rec_mm ? t->rec_mm : "";
}
