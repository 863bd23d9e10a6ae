/*
 * vmimage.c - what vmreplay --kernel checks and builds before qemu runs:
 * the kernel image's boot header, the static vmreplay, the initramfs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "vm_int.h"

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- the kernel image ------------------------------------------------------ */

/* The CRC-32 of the bzImage tools (arch/x86/boot/tools/build.c): the
 * reflected 0xedb88320 polynomial from 0xffffffff, without the final
 * inversion; the image's last 4 bytes hold it for all bytes before. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	while (n--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* Is the image whole?  Its size from the header: the setup sectors and
 * the boot sector, then syssize 16-byte units.  Signed images carry more
 * (a signature after it): only an image of exactly that size is checked
 * against its CRC. */
static int image_whole(int fd, const unsigned char *h, uint64_t fsize, char *msg, size_t msglen)
{
	unsigned setup = h[0x1f1] ? h[0x1f1] : 4;
	uint64_t want = (uint64_t)(setup + 1) * 512 + (uint64_t)le32(h + 0x1f4) * 16;
	if (fsize < want)
		return vmt_errf(msg, msglen, -ENOEXEC,
				"a truncated kernel image (%" PRIu64 " bytes of the"
				" %" PRIu64 " its header gives)", fsize, want);
	if (fsize != want || want < 8)
		return 0;
	unsigned char buf[1 << 16];
	uint32_t crc = 0xffffffffu;
	uint64_t off = 0;
	while (off < want - 4) {
		size_t k = want - 4 - off < sizeof(buf) ? (size_t)(want - 4 - off) : sizeof(buf);
		ssize_t r = pread(fd, buf, k, (off_t)off);
		if (r <= 0)
			return vmt_errf(msg, msglen, r < 0 ? -errno : -EIO, "%s",
					r < 0 ? strerror(errno) : "short read");
		crc = crc32_update(crc, buf, (size_t)r);
		off += (uint64_t)r;
	}
	if (pread(fd, buf, 4, (off_t)(want - 4)) != 4)
		return vmt_errf(msg, msglen, -EIO, "short read");
	if (le32(buf) != crc)
		return vmt_errf(msg, msglen, -ENOEXEC,
				"a damaged kernel image (its CRC-32 does not match)");
	return 0;
}

int rp_image_check(const char *path, struct rp_image_info *info, char *msg, size_t msglen)
{
	/* The x86 boot protocol's setup header (Documentation/arch/x86/boot.rst). */
	unsigned char h[0x280];
	memset(info, 0, sizeof(*info));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vmt_errf(msg, msglen, -errno, "%s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return vmt_errf(msg, msglen, -EISDIR, "%s", strerror(EISDIR));
	}
	ssize_t n = pread(fd, h, sizeof(h), 0);
	if (n < 0) {
		int e = errno;
		close(fd);
		return vmt_errf(msg, msglen, -e, "%s", strerror(e));
	}
	if ((size_t)n < sizeof(h) || le16(h + 0x1fe) != 0xaa55 || memcmp(h + 0x202, "HdrS", 4)) {
		close(fd);
		return vmt_errf(msg, msglen, -ENOEXEC,
				"not a bootable x86 kernel image (no bzImage boot header)");
	}
	info->protocol = le16(h + 0x206);
	if (info->protocol < 0x20c) {
		close(fd);
		return vmt_errf(msg, msglen, -ENOEXEC, "boot protocol %u.%02u is older than qemu's"
				" direct boot needs (2.12, Linux 3.8)", info->protocol >> 8,
				info->protocol & 0xff);
	}
	if (!(le16(h + 0x236) & 1)) { /* XLF_KERNEL_64 */
		close(fd);
		return vmt_errf(msg, msglen, -ENOEXEC, "not a 64-bit x86 kernel (the guest runs an"
				" x86-64 vmreplay)");
	}
	struct stat fs;
	int rc = fstat(fd, &fs) < 0 ? vmt_errf(msg, msglen, -errno, "%s", strerror(errno))
				    : image_whole(fd, h, (uint64_t)fs.st_size, msg, msglen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	info->pref_address = (uint64_t)le32(h + 0x258) | (uint64_t)le32(h + 0x25c) << 32;
	info->init_size = le32(h + 0x260);
	uint16_t vo = le16(h + 0x20e);
	if (vo) {
		char v[sizeof(info->version)];
		ssize_t k = pread(fd, v, sizeof(v) - 1, (off_t)vo + 0x200);
		if (k > 0) {
			v[k] = 0;
			size_t l = strcspn(v, "\n");
			v[l] = 0;
			for (size_t i = 0; i < l; i++)
				if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
					v[i] = '?';
			snprintf(info->version, sizeof(info->version), "%s", v);
		}
	}
	close(fd);
	return 0;
}

/* ---- the static vmreplay ----------------------------------------------------- */

int rp_elf_is_static(const char *path)
{
	Elf64_Ehdr e;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = -ENOEXEC;
	if (pread(fd, &e, sizeof(e), 0) != (ssize_t)sizeof(e) || memcmp(e.e_ident, ELFMAG, SELFMAG) ||
	    e.e_ident[EI_CLASS] != ELFCLASS64 || e.e_machine != EM_X86_64 ||
	    (e.e_type != ET_EXEC && e.e_type != ET_DYN) || e.e_phentsize != sizeof(Elf64_Phdr))
		goto out;
	rc = 1;
	for (unsigned i = 0; i < e.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(e.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph)) {
			rc = -ENOEXEC;
			break;
		}
		if (ph.p_type == PT_INTERP) {
			rc = 0;
			break;
		}
	}
out:
	close(fd);
	return rc;
}

static int usable_guest(const char *path, char *msg, size_t msglen)
{
	int s = rp_elf_is_static(path);
	if (s == 1)
		return 0;
	if (s == 0)
		return vmt_errf(msg, msglen, -ENOEXEC,
				"'%s' is linked dynamically: the guest has no"
				" libraries (build the static one with 'make static')", path);
	if (s == -ENOEXEC)
		return vmt_errf(msg, msglen, s, "'%s' is not an x86-64 program", path);
	return vmt_errf(msg, msglen, s, "'%s': %s", path, strerror(-s));
}

int rp_vm_find_guest(const char *env, char *out, size_t outlen, char *msg, size_t msglen)
{
	if (env && *env) {
		snprintf(out, outlen, "%s", env);
		return usable_guest(out, msg, msglen);
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return vmt_errf(msg, msglen, -ENOENT,
				"cannot find this program (/proc/self/exe): %s",
				n < 0 ? strerror(errno) : "empty");
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	static const char *const where[] = { "%s/vmreplay-static", "%s/../lib/vmrec/vmreplay-static" };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(out, outlen, where[i], self);
		if (access(out, F_OK) == 0)
			return usable_guest(out, msg, msglen);
	}
	return vmt_errf(msg, msglen, -ENOENT, "no static vmreplay for the guest: neither"
			" '%s/vmreplay-static' nor '%s/../lib/vmrec/vmreplay-static' exists (build it"
			" with 'make static', or name one with VMREPLAY_STATIC)", self, self);
}

int rp_vm_find_qemu(const char *name, char *out, size_t outlen, char *msg, size_t msglen)
{
	if (strchr(name, '/')) {
		snprintf(out, outlen, "%s", name);
		if (access(out, X_OK) == 0)
			return 0;
		return vmt_errf(msg, msglen, -errno, "cannot run '%s': %s", name, strerror(errno));
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t l = strcspn(p, ":");
		if (l && (size_t)snprintf(out, outlen, "%.*s/%s", (int)l, p, name) < outlen) {
			struct stat st;
			if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
				return 0;
		}
		p += l;
		if (*p == ':')
			p++;
	}
	return vmt_errf(msg, msglen, -ENOENT, "%s is not installed (not in PATH); on Debian:"
			" apt-get install qemu-system-x86", name);
}

/* ---- the initramfs ------------------------------------------------------------ */

void rp_cpio_init(struct rp_cpio *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->ino = 1;
}

static void put(struct rp_cpio *c, const void *p, size_t n)
{
	const char *s = p;
	while (n && !c->err) {
		ssize_t w = write(c->fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			c->err = w < 0 ? -errno : -EIO;
			return;
		}
		s += w;
		n -= (size_t)w;
		c->off += (uint64_t)w;
	}
}

static void pad4(struct rp_cpio *c)
{
	static const char z[4];
	put(c, z, (size_t)(-c->off & 3));
}

static void header(struct rp_cpio *c, const char *path, unsigned mode, uint64_t size,
		   unsigned rmaj, unsigned rmin)
{
	while (*path == '/')
		path++;
	size_t nl = strlen(path) + 1;
	if (size > 0xffffffffu) {
		if (!c->err)
			c->err = -EFBIG;
		return;
	}
	char h[111];
	snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		 c->ino++, mode, 0u, 0u, (mode & S_IFMT) == S_IFDIR ? 2u : 1u, 0u, (unsigned)size,
		 0u, 0u, rmaj, rmin, (unsigned)nl, 0u);
	put(c, h, 110);
	put(c, path, nl);
	pad4(c);
}

void rp_cpio_dir(struct rp_cpio *c, const char *path)
{
	while (*path == '/')
		path++;
	if (!*path)
		return;
	for (size_t i = 0; i < c->ndirs; i++)
		if (strcmp(c->dirs[i], path) == 0)
			return;
	char **d = realloc(c->dirs, (c->ndirs + 1) * sizeof(*d));
	char *s = strdup(path);
	if (!d || !s) {
		free(s);
		if (d)
			c->dirs = d;
		if (!c->err)
			c->err = -ENOMEM;
		return;
	}
	c->dirs = d;
	c->dirs[c->ndirs++] = s;
	header(c, path, S_IFDIR | 0755, 0, 0, 0);
}

void rp_cpio_parents(struct rp_cpio *c, const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		rp_cpio_dir(c, buf);
		*p = '/';
	}
}

void rp_cpio_chardev(struct rp_cpio *c, const char *path, unsigned major, unsigned minor,
		     unsigned mode)
{
	header(c, path, S_IFCHR | mode, 0, major, minor);
}

void rp_cpio_data(struct rp_cpio *c, const char *path, unsigned mode, const void *data,
		  size_t len)
{
	header(c, path, S_IFREG | mode, len, 0, 0);
	put(c, data, len);
	pad4(c);
}

void rp_cpio_file(struct rp_cpio *c, const char *path, unsigned mode, const char *src)
{
	struct stat st;
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (!c->err)
			c->err = -errno;
		if (fd >= 0)
			close(fd);
		return;
	}
	header(c, path, S_IFREG | mode, (uint64_t)st.st_size, 0, 0);
	char buf[1 << 16];
	uint64_t left = (uint64_t)st.st_size;
	while (left && !c->err) {
		ssize_t r = read(fd, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->err = r < 0 ? -errno : -EIO; /* shrank while read */
			break;
		}
		put(c, buf, (size_t)r);
		left -= (uint64_t)r;
	}
	close(fd);
	pad4(c);
}

int rp_cpio_finish(struct rp_cpio *c)
{
	header(c, "TRAILER!!!", 0, 0, 0, 0);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	c->dirs = NULL;
	c->ndirs = 0;
	return c->err;
}

int rp_vm_guest_path(const char *cwd, const char *path, char *out, size_t outlen)
{
	char buf[8192];
	int n = path[0] == '/' ? snprintf(buf, sizeof(buf), "%s", path)
			       : snprintf(buf, sizeof(buf), "%s/%s", cwd, path);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	/* Components, with "." dropped and ".." taking the last one off. */
	size_t o = 0;
	for (char *s = buf, *e; *s; s = e) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = s + strcspn(s, "/");
		size_t l = (size_t)(e - s);
		if (l == 1 && s[0] == '.')
			continue;
		if (l == 2 && s[0] == '.' && s[1] == '.') {
			while (o && out[o - 1] != '/')
				o--;
			if (o)
				o--;
			continue;
		}
		if (o + 1 + l + 1 > outlen)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, s, l);
		o += l;
	}
	if (o + 2 > outlen)
		return -ENAMETOOLONG;
	if (!o)
		out[o++] = '/';
	out[o] = 0;
	return 0;
}
