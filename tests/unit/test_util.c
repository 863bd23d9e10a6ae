/*
 * test_util.c - libvmtrace's small helpers (array growth, byte counts for
 * people, option words, the machine's memory settings) and the recorder's
 * code ranges (record/code.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_int.h"
#include "vmtrace.h"
#include "vmtutil.h"

static void test_grow(void **state)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	assert_int_equal(vmt_grow(&a, &cap, 0, sizeof(*a)), 0);
	assert_null(a);
	assert_int_equal(vmt_grow(&a, &cap, 1, sizeof(*a)), 0);
	assert_int_equal(cap, 16);
	for (size_t i = 0; i < cap; i++)
		assert_int_equal(a[i], 0);
	a[3] = 7;
	assert_int_equal(vmt_grow(&a, &cap, 100, sizeof(*a)), 0);
	assert_int_equal(cap, 128);
	assert_int_equal(a[3], 7);
	for (size_t i = 16; i < cap; i++)
		assert_int_equal(a[i], 0); /* new elements are zeroed */
	/* A size past SIZE_MAX fails without touching the array. */
	uint32_t *keep = a;
	assert_int_equal(vmt_grow(&a, &cap, SIZE_MAX / 2, sizeof(*a)), -ENOMEM);
	assert_ptr_equal(a, keep);
	assert_int_equal(cap, 128);
	/* A sparse index (a large zeroed tail, from calloc): kept and zeroed. */
	a[100] = 9;
	assert_int_equal(vmt_grow(&a, &cap, 3000000, sizeof(*a)), 0);
	assert_int_equal(cap, 128u << 15);
	assert_int_equal(a[3], 7);
	assert_int_equal(a[100], 9);
	assert_int_equal(a[128], 0);
	assert_int_equal(a[2999999], 0);
	free(a);
}

/* A buffer that could not be built whole is not written. */
static void test_buf_write(void **state)
{
	(void)state;
	char out[64] = "";
	FILE *f = fmemopen(out, sizeof(out), "w");
	assert_non_null(f);
	struct vmt_buf b = { 0 };
	vmt_buf_puts(&b, "whole\n");
	assert_int_equal(vmt_buf_write(&b, f), 0);
	b.oom = 1;
	assert_int_equal(vmt_buf_write(&b, f), -ENOMEM);
	fclose(f);
	assert_string_equal(out, "whole\n");
	vmt_buf_free(&b);
}

static void test_format_bytes(void **state)
{
	char b[32];
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 0), "0 bytes");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 1023), "1023 bytes");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 1024), "1.0 KiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 64ull << 20), "64.0 MiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), 3ull << 39), "1.5 TiB");
	assert_string_equal(vmt_format_bytes(b, sizeof(b), UINT64_MAX), "16384.0 PiB");
	char small[4];
	vmt_format_bytes(small, sizeof(small), 12345); /* cut, terminated */
	assert_string_equal(small, "12.");
}

static void test_code_ranges(void **state)
{
	struct vmr_code c = {0};
	assert_int_equal(vmr_code_add(&c, 0x1000, 0x3000), 0);
	assert_int_equal(vmr_code_remove(&c, 0x4000, 0x5000), 0);
	assert_int_equal(vmr_code_remove(&c, 0x2000, 0x2001), 1);
	assert_int_equal(vmr_code_remove(&c, 0x1000, 0x3000), 0); /* gone */
	/* Code mapped over code: a removal of either part still hits. */
	assert_int_equal(vmr_code_add(&c, 0x1000, 0x3000), 0);
	assert_int_equal(vmr_code_add(&c, 0x2000, 0x4000), 0);
	assert_int_equal(vmr_code_remove(&c, 0x1000, 0x1800), 1);
	assert_int_equal(vmr_code_remove(&c, 0x3800, 0x3900), 1);
	assert_int_equal(vmr_code_remove(&c, 0x1000, 0x4000), 0);

	/* A range that could not be kept: any later removal may hit code,
	 * until a reset (the stack cache is then invalidated, not stale). */
	c.r.n = c.r.cap = SIZE_MAX / 2 + 1; /* the next growth overflows */
	struct vmt_rset_ent *keep = c.r.e;
	c.r.e = NULL;
	assert_int_equal(vmr_code_add(&c, 0x8000, 0x9000), -ENOMEM);
	c.r.n = c.r.cap = 0;
	c.r.e = keep;
	assert_int_equal(vmr_code_remove(&c, 0x100000, 0x200000), 1);
	struct vmr_code child = {0};
	assert_int_equal(vmr_code_copy(&child, &c), 0);
	assert_int_equal(vmr_code_remove(&child, 0x100000, 0x200000), 1);
	vmr_code_reset(&c);
	assert_int_equal(vmr_code_remove(&c, 0x100000, 0x200000), 0);
	vmr_code_free(&c);
	vmr_code_free(&child);
}

/* vmt_pread_full: every byte asked for, the end of the file said. */
static void test_pread_full(void **state)
{
	(void)state;
	int fd = memfd_create("pread", 0);
	assert_true(fd >= 0);
	char data[10000], buf[10000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7);
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	assert_int_equal(vmt_pread_full(fd, buf, 6000, 4000), 0);
	assert_memory_equal(buf, data + 4000, 6000);
	assert_int_equal(vmt_pread_full(fd, buf, 10, 9995), -ENODATA);
	assert_int_equal(vmt_pread_full(fd, buf, 0, 20000), 0);
	close(fd);
	assert_int_equal(vmt_pread_full(fd, buf, 1, 0), -EBADF);
}

/* The zero-page probe against pagemap's own view of a page that was only
 * read: the shared zero page is never "exclusively mapped" (bit 56), a
 * page of the process's own is. */
static void test_zero_page(void **state)
{
	long ps = sysconf(_SC_PAGESIZE);
	int zp = vmt_host_zero_page();
	assert_true(zp == 0 || zp == 1);
	assert_int_equal(vmt_host_zero_page(), zp); /* cached */
	volatile char *p = mmap(NULL, (size_t)ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	(void)p[0];
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &ent, 8, (off_t)((uintptr_t)p / (uintptr_t)ps * 8)), 8);
	close(fd);
	munmap((void *)p, (size_t)ps);
	assert_true(ent >> 63); /* present */
	assert_int_equal((int)((ent >> 56) & 1), !zp);
	print_message("this kernel %s the zero page\n", zp ? "maps" : "does not map");
}

/* Words quoted as a shell reads them back: checked by sh itself. */
static void test_shell_words(void **state)
{
	static const char *const argv[] = { "su", "postgres", "-c", "postgres -D /var/lib/pg",
					     "it's", "", "a\tb\n", "x=1,y:2/@%+-." };
	struct vmt_buf b = { 0 };
	vmt_buf_shell_words(&b, argv, 8);
	assert_false(b.oom);
	assert_string_equal(b.data, "su postgres -c 'postgres -D /var/lib/pg' 'it'\\''s' '' "
				    "$'a\\tb\\n' x=1,y:2/@%+-.");
	/* bash reads each word back as it was */
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "for w in %s; do printf '%%s\\0' \"$w\"; done", b.data);
	const char *sh[] = { "bash", "-c", cmd, NULL };
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		execvp(sh[0], (char *const *)sh);
		_exit(127);
	}
	close(fd[1]);
	char out[4096];
	size_t n = 0;
	ssize_t r;
	while ((r = read(fd[0], out + n, sizeof(out) - n)) > 0)
		n += (size_t)r;
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	size_t at = 0;
	for (int i = 0; i < 8; i++) {
		assert_true(at < n);
		assert_string_equal(out + at, argv[i]);
		at += strlen(argv[i]) + 1;
	}
	assert_int_equal(at, n);
	vmt_buf_free(&b);
	(void)state;
}

static void test_options_words(void **state)
{
	char v[8];
	const char *o = "backend=stream touch=faults overcommit=2 zeropage=0 thp=madvise";
	assert_int_equal(vmt_options_get(o, "overcommit", v, sizeof(v)), 1);
	assert_string_equal(v, "2");
	assert_int_equal(vmt_options_get(o, "thp", v, sizeof(v)), 1);
	assert_string_equal(v, "madvise");
	assert_int_equal(vmt_options_get(o, "touch", v, 4), 1);
	assert_string_equal(v, "fau"); /* cut to the buffer */
	assert_int_equal(vmt_options_get(o, "thp_defrag", v, sizeof(v)), 0);
	assert_string_equal(v, "");
	assert_int_equal(vmt_options_get(o, "over", v, sizeof(v)), 0); /* whole keys only */
	assert_int_equal(vmt_options_get(NULL, "thp", v, sizeof(v)), 0);
	struct vmt_header h = { .options = o };
	assert_int_equal(vmt_header_zero_page(&h), 0);
	h.options = "touch=faults";
	assert_int_equal(vmt_header_zero_page(&h), 1); /* absent: the zero page */
	assert_int_equal(vmt_header_zero_page(NULL), 1);

	/* This machine's words: what its files and probe say, each once. */
	char buf[512] = "";
	vmt_host_mm_words(buf, sizeof(buf));
	char want[8];
	snprintf(want, sizeof(want), "%d", vmt_host_zero_page());
	assert_int_equal(vmt_options_get(buf, "zeropage", v, sizeof(v)), 1);
	assert_string_equal(v, want);
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	if (f) {
		int oc = -1;
		assert_int_equal(fscanf(f, "%d", &oc), 1);
		fclose(f);
		assert_int_equal(vmt_options_get(buf, "overcommit", v, sizeof(v)), 1);
		assert_int_equal(atoi(v), oc);
	}
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		char line[128] = "";
		assert_non_null(fgets(line, sizeof(line), f));
		fclose(f);
		assert_int_equal(vmt_options_get(buf, "thp", v, sizeof(v)), 1);
		char sel[16];
		snprintf(sel, sizeof(sel), "[%s]", v);
		assert_non_null(strstr(line, sel));
	}
	/* Too small a buffer: whole words, or none. */
	char small[12] = "";
	vmt_host_mm_words(small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
	assert_true(!small[0] || (strchr(small, '=') && small[strlen(small) - 1] != '='));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_buf_write),
		cmocka_unit_test(test_shell_words),
		cmocka_unit_test(test_format_bytes),
		cmocka_unit_test(test_pread_full),
		cmocka_unit_test(test_code_ranges),
		cmocka_unit_test(test_zero_page),
		cmocka_unit_test(test_options_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
