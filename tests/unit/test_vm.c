/*
 * test_vm.c - the pieces of vmreplay --kernel that need no qemu: the
 * frames of the results port, the initramfs archive, the kernel image and
 * ELF checks, the guest's paths, the results' "vm" keys, finding qemu.
 * (tests/e2e/vm.sh boots guests.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm_int.h"

/* ---- frames ----------------------------------------------------------------- */

struct got {
	char types[16];
	char bodies[16][64];
	size_t lens[16];
	int n;
};

static int collect(void *arg, char type, const char *body, size_t len)
{
	struct got *g = arg;
	if (g->n >= 16 || len >= 64)
		return -E2BIG;
	g->types[g->n] = type;
	memcpy(g->bodies[g->n], body, len);
	g->lens[g->n++] = len;
	return 0;
}

static size_t stream(char *buf)
{
	static const struct { char t; const char *b; size_t n; } f[] = {
		{ 'H', "1", 1 }, { 'U', "6.1.0-57-cloud-amd64", 20 },
		{ 'O', "line\n@@X 1\nnot a frame\n", 24 }, { 'E', "\0\r\n", 3 }, { 'T', "", 0 },
		{ 'X', "0", 1 },
	};
	size_t k = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		k += rp_frame_header(buf + k, 32, f[i].t, f[i].n);
		memcpy(buf + k, f[i].b, f[i].n);
		k += f[i].n;
		buf[k++] = '\n';
	}
	return k;
}

static void test_frames(void **state)
{
	char buf[512], h[32];
	assert_int_equal(rp_frame_header(h, sizeof(h), 'J', 12345), 10);
	assert_string_equal(h, "@@J 12345\n");
	size_t n = stream(buf);
	/* Whole, and split at every byte: the same frames. */
	for (size_t split = 0; split <= n; split++) {
		struct rp_frame_reader fr = { 0 };
		struct got g = { 0 };
		assert_int_equal(rp_frame_feed(&fr, buf, split, collect, &g), 0);
		assert_int_equal(rp_frame_feed(&fr, buf + split, n - split, collect, &g), 0);
		assert_int_equal(g.n, 6);
		assert_memory_equal(g.types, "HUOETX", 6);
		assert_int_equal(g.lens[2], 24);
		assert_memory_equal(g.bodies[2], "line\n@@X 1\nnot a frame\n", 24);
		assert_int_equal(g.lens[3], 3);
		assert_memory_equal(g.bodies[3], "\0\r\n", 3);
		assert_int_equal(g.lens[4], 0);
		rp_frame_reader_free(&fr);
	}
	static const char *const bad[] = {
		"garbage\n", "@@h 1\nx\n", "@@H1\nx\n", "@@H \n\n", "@@H 1x\nx\n", "@@H 1\nxy",
		"@@H 999999999999\n", "@@H 2\r\nab\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rp_frame_reader fr = { 0 };
		struct got g = { 0 };
		int rc = rp_frame_feed(&fr, bad[i], strlen(bad[i]), collect, &g);
		if (rc != -EPROTO)
			fail_msg("'%s': %d, want -EPROTO", bad[i], rc);
		rp_frame_reader_free(&fr);
	}
	/* The callback's error stops the feed. */
	struct rp_frame_reader fr = { 0 };
	struct got g = { .n = 16 };
	assert_int_equal(rp_frame_feed(&fr, buf, n, collect, &g), -E2BIG);
	rp_frame_reader_free(&fr);
}

/* ---- the initramfs ------------------------------------------------------------ */

struct entry {
	char name[128];
	unsigned mode, rmaj, rmin, nlink;
	char data[64];
	size_t size;
};

static unsigned hex8(const char *p)
{
	char b[9];
	memcpy(b, p, 8);
	b[8] = 0;
	return (unsigned)strtoul(b, NULL, 16);
}

/* Parse a newc archive as the kernel does; returns the entries before the
 * trailer, checking magic and 4-byte alignment. */
static int unpack(const char *a, size_t len, struct entry *e, int max)
{
	size_t o = 0;
	int n = 0;
	for (;;) {
		assert_true(o + 110 <= len);
		assert_int_equal(o % 4, 0);
		assert_memory_equal(a + o, "070701", 6);
		unsigned mode = hex8(a + o + 14), size = hex8(a + o + 54), nsize = hex8(a + o + 94);
		const char *name = a + o + 110;
		assert_int_equal(name[nsize - 1], 0);
		size_t data = (o + 110 + nsize + 3) & ~(size_t)3;
		if (strcmp(name, "TRAILER!!!") == 0) {
			assert_true(data <= len);
			return n;
		}
		assert_true(n < max);
		snprintf(e[n].name, sizeof(e[n].name), "%s", name);
		e[n].mode = mode;
		e[n].nlink = hex8(a + o + 38);
		e[n].rmaj = hex8(a + o + 78);
		e[n].rmin = hex8(a + o + 86);
		e[n].size = size;
		memcpy(e[n].data, a + data, size < 64 ? size : 64);
		n++;
		o = (data + size + 3) & ~(size_t)3;
	}
}

static void test_cpio(void **state)
{
	char src[] = "/tmp/test_vm.XXXXXX";
	int sfd = mkstemp(src);
	assert_true(sfd >= 0);
	assert_int_equal(write(sfd, "trace bytes", 11), 11);
	close(sfd);

	int fd = memfd_create("cpio", 0);
	assert_true(fd >= 0);
	struct rp_cpio c;
	rp_cpio_init(&c, fd);
	rp_cpio_dir(&c, "dev");
	rp_cpio_chardev(&c, "dev/ttyS1", 4, 65, 0600);
	rp_cpio_parents(&c, "/work/main/old.zst");
	rp_cpio_parents(&c, "/work/other/x"); /* "work" once */
	rp_cpio_dir(&c, "/work/main");	       /* already there */
	rp_cpio_data(&c, "/.vmreplay/args", 0644, "a\0b\0", 4);
	rp_cpio_file(&c, "/work/main/old.zst", 0644, src);
	assert_int_equal(rp_cpio_finish(&c), 0);
	rp_cpio_file(&c, "x", 0644, "/nonexistent/file");
	assert_int_equal(rp_cpio_finish(&c), -ENOENT);
	unlink(src);

	off_t len = lseek(fd, 0, SEEK_END);
	char *a = malloc((size_t)len);
	assert_int_equal(pread(fd, a, (size_t)len, 0), len);
	close(fd);
	struct entry e[16];
	int n = unpack(a, (size_t)len, e, 16);
	free(a);
	static const char *const names[] = { "dev", "dev/ttyS1", "work", "work/main",
					      "work/other", ".vmreplay/args", "work/main/old.zst" };
	assert_int_equal(n, 7);
	for (int i = 0; i < n; i++)
		assert_string_equal(e[i].name, names[i]);
	assert_int_equal(e[0].mode, S_IFDIR | 0755);
	assert_int_equal(e[0].nlink, 2);
	assert_int_equal(e[1].mode, S_IFCHR | 0600);
	assert_int_equal(e[1].rmaj, 4);
	assert_int_equal(e[1].rmin, 65);
	assert_int_equal(e[5].size, 4);
	assert_memory_equal(e[5].data, "a\0b\0", 4);
	assert_int_equal(e[6].mode, S_IFREG | 0644);
	assert_int_equal(e[6].size, 11);
	assert_memory_equal(e[6].data, "trace bytes", 11);
}

/* ---- the image and the ELF checks ---------------------------------------------- */

static char *tmpfile_with(const void *p, size_t n)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/test_vm.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
	return path;
}

/* The bzImage CRC, bit by bit (vmimage.c has a table). */
static uint32_t crc_bits(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return c;
}

/* A boot header in 0x400 bytes: the boot sector, one setup sector, no
 * kernel (syssize 0), and the CRC-32 in the last 4 bytes. */
static void bzimage(unsigned char *h, size_t n, unsigned protocol, unsigned xload)
{
	memset(h, 0, n);
	h[0x1f1] = 1; /* setup_sects */
	h[0x1fe] = 0x55, h[0x1ff] = 0xaa;
	memcpy(h + 0x202, "HdrS", 4);
	h[0x206] = protocol & 0xff, h[0x207] = protocol >> 8;
	h[0x236] = (unsigned char)xload;
	h[0x258 + 3] = 0x01; /* pref_address 16 MiB */
	h[0x260 + 2] = 0x40; /* init_size 4 MiB */
	h[0x20e] = 0x00, h[0x20f] = 0x01; /* version string at 0x100 + 0x200 */
	strcpy((char *)h + 0x300, "6.1.0-test (me@here) #1 SMP");
	uint32_t c = crc_bits(h, n - 4);
	memcpy(h + n - 4, &c, 4); /* little-endian */
}

static void test_image_check(void **state)
{
	unsigned char h[0x400];
	struct rp_image_info info;
	char msg[256], *p;

	bzimage(h, sizeof(h), 0x20f, 1);
	p = tmpfile_with(h, sizeof(h));
	assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), 0);
	assert_string_equal(info.version, "6.1.0-test (me@here) #1 SMP");
	assert_int_equal(info.protocol, 0x20f);
	assert_int_equal(info.pref_address, 16u << 20);
	assert_int_equal(info.init_size, 4u << 20);
	unlink(p);

	static const struct { unsigned proto, xload; size_t len; const char *want; } bad[] = {
		{ 0x20f, 0, sizeof(h), "not a 64-bit x86 kernel" },
		{ 0x20a, 1, sizeof(h), "boot protocol 2.10 is older" },
		{ 0x20f, 1, 0x200, "not a bootable x86 kernel image" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bzimage(h, sizeof(h), bad[i].proto, bad[i].xload);
		p = tmpfile_with(h, bad[i].len);
		assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), -ENOEXEC);
		assert_non_null(strstr(msg, bad[i].want));
		unlink(p);
	}
	/* Damaged, truncated; with more after it (a signature), not checked. */
	bzimage(h, sizeof(h), 0x20f, 1);
	h[0x350] ^= 1;
	p = tmpfile_with(h, sizeof(h));
	assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), -ENOEXEC);
	assert_string_equal(msg, "a damaged kernel image (its CRC-32 does not match)");
	unlink(p);
	bzimage(h, sizeof(h), 0x20f, 1);
	h[0x1f4] = 1; /* syssize 1: 16 bytes more than the file has */
	p = tmpfile_with(h, sizeof(h));
	assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), -ENOEXEC);
	assert_string_equal(msg, "a truncated kernel image (1024 bytes of the 1040 its header gives)");
	unlink(p);
	unsigned char signed_[0x500] = { 0 };
	bzimage(signed_, 0x400, 0x20f, 1);
	signed_[0x350] ^= 1;
	p = tmpfile_with(signed_, sizeof(signed_));
	assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), 0);
	unlink(p);

	p = tmpfile_with("#!/bin/sh\n", 10);
	assert_int_equal(rp_image_check(p, &info, msg, sizeof(msg)), -ENOEXEC);
	assert_string_equal(msg, "not a bootable x86 kernel image (no bzImage boot header)");
	unlink(p);
	assert_int_equal(rp_image_check("/nonexistent", &info, msg, sizeof(msg)), -ENOENT);
	assert_string_equal(msg, "No such file or directory");
	assert_int_equal(rp_image_check("/tmp", &info, msg, sizeof(msg)), -EISDIR);
}

/* An x86-64 executable's headers, with or without PT_INTERP. */
static char *elf(int interp, int machine)
{
	struct {
		Elf64_Ehdr e;
		Elf64_Phdr ph[2];
	} f;
	memset(&f, 0, sizeof(f));
	memcpy(f.e.e_ident, ELFMAG, SELFMAG);
	f.e.e_ident[EI_CLASS] = ELFCLASS64;
	f.e.e_type = ET_EXEC;
	f.e.e_machine = (Elf64_Half)machine;
	f.e.e_phoff = sizeof(Elf64_Ehdr);
	f.e.e_phentsize = sizeof(Elf64_Phdr);
	f.e.e_phnum = 2;
	f.ph[0].p_type = PT_LOAD;
	f.ph[1].p_type = interp ? PT_INTERP : PT_NOTE;
	return tmpfile_with(&f, sizeof(f));
}

static void test_elf_static(void **state)
{
	char *p = elf(0, EM_X86_64), msg[512], out[4096];
	assert_int_equal(rp_elf_is_static(p), 1);
	assert_int_equal(rp_vm_find_guest(p, out, sizeof(out), msg, sizeof(msg)), 0);
	assert_string_equal(out, p);
	unlink(p);
	p = elf(1, EM_X86_64);
	assert_int_equal(rp_elf_is_static(p), 0);
	assert_int_equal(rp_vm_find_guest(p, out, sizeof(out), msg, sizeof(msg)), -ENOEXEC);
	assert_non_null(strstr(msg, "is linked dynamically: the guest has no libraries"));
	unlink(p);
	p = elf(0, EM_AARCH64);
	assert_int_equal(rp_elf_is_static(p), -ENOEXEC);
	unlink(p);
	/* This test program is linked dynamically. */
	assert_int_equal(rp_elf_is_static("/proc/self/exe"), 0);
	assert_int_equal(rp_elf_is_static("/nonexistent"), -ENOENT);
	p = tmpfile_with("hello", 5);
	assert_int_equal(rp_elf_is_static(p), -ENOEXEC);
	assert_int_equal(rp_vm_find_guest(p, out, sizeof(out), msg, sizeof(msg)), -ENOEXEC);
	assert_non_null(strstr(msg, "is not an x86-64 program"));
	unlink(p);
}

/* ---- paths, qemu, the results' keys --------------------------------------------- */

static void test_guest_path(void **state)
{
	static const struct { const char *cwd, *path, *want; } c[] = {
		{ "/work/main", "old.zst", "/work/main/old.zst" },
		{ "/work/main", "t/x.zst", "/work/main/t/x.zst" },
		{ "/work/main", "/tmp/x.zst", "/tmp/x.zst" },
		{ "/work/main", "../other/./x.zst", "/work/other/x.zst" },
		{ "/", "x.zst", "/x.zst" },
		{ "/a", "../../..//x", "/x" },
		{ "/a/b", "..", "/a" },
		{ "/a", "..", "/" },
	};
	char out[256];
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_int_equal(rp_vm_guest_path(c[i].cwd, c[i].path, out, sizeof(out)), 0);
		assert_string_equal(out, c[i].want);
	}
	assert_int_equal(rp_vm_guest_path("/work", "a-long-name", out, 8), -ENAMETOOLONG);
}

static void test_find_qemu(void **state)
{
	char dir[] = "/tmp/test_vm.XXXXXX", path[256], out[4096], msg[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/qemu-fake", dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0755);
	assert_true(fd >= 0);
	close(fd);
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL, np[512];
	snprintf(np, sizeof(np), "/nonexistent:%s", dir);
	setenv("PATH", np, 1);
	assert_int_equal(rp_vm_find_qemu("qemu-fake", out, sizeof(out), msg, sizeof(msg)), 0);
	assert_string_equal(out, path);
	assert_int_equal(rp_vm_find_qemu(path, out, sizeof(out), msg, sizeof(msg)), 0);
	assert_int_equal(rp_vm_find_qemu("qemu-none", out, sizeof(out), msg, sizeof(msg)), -ENOENT);
	assert_string_equal(msg, "qemu-none is not installed (not in PATH); on Debian: apt-get"
				 " install qemu-system-x86");
	assert_int_equal(rp_vm_find_qemu("/nonexistent/qemu", out, sizeof(out), msg, sizeof(msg)),
			 -ENOENT);
	assert_string_equal(msg, "cannot run '/nonexistent/qemu': No such file or directory");
	if (old)
		setenv("PATH", old, 1);
	free(old);
	unlink(path);
	rmdir(dir);
}

static void test_vm_json(void **state)
{
	struct rp_vm_config c = { .image = "/boot/vmlinuz", .cpus = 2, .memory = 1ull << 30 };
	struct rp_vm_result r = { .accel = RP_VM_TCG, .boot_ns = 1500 };
	struct vmt_buf b = { 0 };
	snprintf(r.version, sizeof(r.version), "6.1.0 \"x\"");
	snprintf(r.qemu, sizeof(r.qemu), "/usr/bin/qemu-system-x86_64");
	r.json = strdup("{\"runs\":[],\"median\":{}}\n");
	r.json_len = strlen(r.json);
	assert_int_equal(rp_vm_json(&c, &r, &b), 0);
	assert_string_equal(b.data, "{\"runs\":[],\"median\":{},\"vm\":{\"image\":\"/boot/vmlinuz\","
				    "\"image_version\":\"6.1.0 \\\"x\\\"\",\"accel\":\"tcg\",\"cpus\":2,"
				    "\"memory_bytes\":1073741824,\"qemu\":\"/usr/bin/qemu-system-x86_64\","
				    "\"boot_ns\":1500,\"cmdline\":\"\",\"sysctl\":[],\"mm_unset\":null,"
				    "\"noise\":null}}\n");
	/* What the guest was asked to set, what it could not, and what else
	 * ran there: 0.5 s of 2 CPUs for 10 s is 2.5%. */
	char *sys[] = { "/sys/kernel/mm/transparent_hugepage/enabled=madvise", NULL };
	c.sysctl = sys;
	c.cmdline = "quiet";
	snprintf(r.unset, sizeof(r.unset), "/sys/x=1: Permission denied");
	r.have_noise = 1;
	r.others_ns = 500000000;
	r.elapsed_ns = 10000000000ull;
	r.noise_cpus = 2;
	r.replay_cpu_ns = 7;
	assert_int_equal(rp_vm_json(&c, &r, &b), 0);
	assert_non_null(strstr(b.data, "\"cmdline\":\"quiet\",\"sysctl\":[\"/sys/kernel/mm/"
				       "transparent_hugepage/enabled=madvise\"],\"mm_unset\":\"/sys/x=1:"
				       " Permission denied\",\"noise\":{\"others_pct\":2.500,"
				       "\"others_ns\":500000000,\"elapsed_ns\":10000000000,\"cpus\":2,"
				       "\"replay_cpu_ns\":7}}}\n"));
	c.sysctl = NULL;
	c.cmdline = NULL;
	r.unset[0] = 0;
	r.have_noise = 0;
	free(r.json);
	r.json = strdup(" { } ");
	r.json_len = strlen(r.json);
	assert_int_equal(rp_vm_json(&c, &r, &b), 0);
	assert_true(strncmp(b.data, "{\"vm\":{\"image\"", 14) == 0);
	free(r.json);
	r.json = strdup("[1]");
	r.json_len = 3;
	assert_int_equal(rp_vm_json(&c, &r, &b), -EINVAL);
	free(r.json);
	vmt_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_cpio),
		cmocka_unit_test(test_image_check),
		cmocka_unit_test(test_elf_static),
		cmocka_unit_test(test_guest_path),
		cmocka_unit_test(test_find_qemu),
		cmocka_unit_test(test_vm_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
