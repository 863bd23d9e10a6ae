/*
 * host.c - facts about this machine for trace headers, and error texts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "vmtrace.h"

void vmt_header_from_host(struct vmt_header *h)
{
	static struct utsname u;
	struct timespec rt, mono;

	memset(h, 0, sizeof(*h));
	if (uname(&u) == 0) {
		h->arch = u.machine;
		h->kernel = u.release;
		h->hostname = u.nodename;
	} else {
		h->arch = h->kernel = h->hostname = "";
	}
	long ps = sysconf(_SC_PAGESIZE);
	h->page_size = ps > 0 ? (uint32_t)ps : 4096;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	h->start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	h->start_mono_ns = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
	h->options = "";
	h->recorder = "";
}

/* Read and write a few fresh private pages and count this thread's minor
 * faults: a write that faults again after a read means the read mapped
 * the zero page.  Not instrumented, so that a sanitizer's shadow reads
 * add no faults of their own. */
__attribute__((no_sanitize_address)) static int probe_zero_page(void)
{
	enum { N = 8 };
	long ps = sysconf(_SC_PAGESIZE);
	struct rusage a, b;
	int r = -1;

	if (ps <= 0)
		return -1;
	volatile char *p = mmap(NULL, N * (size_t)ps, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* One small folio per fault: (m)THP would write-fault once per folio */
	madvise((void *)p, N * (size_t)ps, MADV_NOHUGEPAGE);
	for (int i = 0; i < N; i++)
		(void)p[(size_t)i * (size_t)ps];
	if (getrusage(RUSAGE_THREAD, &a) == 0) {
		for (int i = 0; i < N; i++)
			p[(size_t)i * (size_t)ps] = 1;
		if (getrusage(RUSAGE_THREAD, &b) == 0) {
			long writes = b.ru_minflt - a.ru_minflt;
			r = writes >= N ? 1 : writes == 0 ? 0 : -1;
		}
	}
	munmap((void *)p, N * (size_t)ps);
	return r;
}

int vmt_host_zero_page(void)
{
	static int cached = -2;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v == -2) {
		v = probe_zero_page();
		if (v == -1) /* a stray fault: once more */
			v = probe_zero_page();
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* The first line of a small sysfs or procfs file, without its newline;
 * "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* The [selected] word of a sysfs choice such as "always [madvise] never",
 * copied over buf itself; "" when there is none. */
static void selected_word(char *buf)
{
	char *o = strchr(buf, '['), *c = o ? strchr(o, ']') : NULL;
	if (!c) {
		buf[0] = '\0';
		return;
	}
	*c = '\0';
	memmove(buf, o + 1, (size_t)(c - o));
}

static void add_word(char *buf, size_t len, const char *key, const char *val)
{
	size_t used = strlen(buf);
	if (!*val || strpbrk(val, " =") ||
	    used + (used > 0) + strlen(key) + 1 + strlen(val) >= len)
		return;
	snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", key, val);
}

/* The settings of vmt_host_mm_words, in its order: the file that holds
 * each (NULL: none does), and whether it is a "[selected]" choice. */
static const struct {
	const char *key, *path;
	int choice;
} mm_files[] = {
	{ "overcommit", "/proc/sys/vm/overcommit_memory", 0 },
	{ "zeropage", NULL, 0 }, /* probed: a boot parameter of some guests */
	{ "thp", "/sys/kernel/mm/transparent_hugepage/enabled", 1 },
	{ "thp_defrag", "/sys/kernel/mm/transparent_hugepage/defrag", 1 },
	{ "thp_shmem", "/sys/kernel/mm/transparent_hugepage/shmem_enabled", 1 },
	{ "faultaround", "/sys/kernel/debug/fault_around_bytes", 0 },
};
#define MM_FILES (sizeof(mm_files) / sizeof(mm_files[0]))

const char *vmt_mm_key(size_t i)
{
	return i < MM_FILES ? mm_files[i].key : NULL;
}

const char *vmt_mm_path(const char *key)
{
	for (size_t i = 0; i < MM_FILES; i++)
		if (!strcmp(mm_files[i].key, key))
			return mm_files[i].path;
	return NULL;
}

void vmt_host_mm_words(char *buf, size_t len)
{
	char v[256];

	if (!len)
		return;
	for (size_t i = 0; i < MM_FILES; i++) {
		if (!mm_files[i].path) {
			int z = vmt_host_zero_page();
			add_word(buf, len, mm_files[i].key, z < 0 ? "" : z ? "1" : "0");
			continue;
		}
		read_line(mm_files[i].path, v, sizeof(v));
		if (mm_files[i].choice)
			selected_word(v);
		add_word(buf, len, mm_files[i].key, v);
	}
}

int vmt_options_get(const char *options, const char *key, char *val, size_t vlen)
{
	size_t kl = strlen(key);
	if (vlen)
		val[0] = '\0';
	for (const char *p = options ? options : ""; *p;) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (n > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
			if (vlen) {
				size_t m = n - kl - 1 < vlen - 1 ? n - kl - 1 : vlen - 1;
				memcpy(val, p + kl + 1, m);
				val[m] = '\0';
			}
			return 1;
		}
		p += n;
	}
	return 0;
}

int vmt_header_zero_page(const struct vmt_header *h)
{
	char v[4];
	return !(h && vmt_options_get(h->options, "zeropage", v, sizeof(v)) && !strcmp(v, "0"));
}

const char *vmt_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case VMT_E_TRUNC: return "trace is truncated";
	case VMT_E_CORRUPT: return "trace is corrupt";
	case VMT_E_MAGIC: return "not a vmtrace file";
	case VMT_E_VERSION: return "trace format version is newer than this program";
	case VMT_E_LIMIT: return "a length or count exceeds the format limits";
	case VMT_E_STATE: return "invalid call sequence";
	}
	if (err < 0 && err > -4096)
		return strerror(-err);
	return "unknown error";
}
