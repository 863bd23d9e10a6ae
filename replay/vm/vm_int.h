/*
 * vm_int.h - the pieces of vmreplay --kernel (internal to libvmreplay):
 *   vmframe.c  the frames of the results port
 *   vmimage.c  the checks of the kernel image and the static vmreplay,
 *              the initramfs (newc cpio)
 *   vm.c       the host side: qemu, its two serial ports, the deadlines
 *   guest.c    the guest's /init
 */
#ifndef VMREPLAY_VM_INT_H
#define VMREPLAY_VM_INT_H

#include <stddef.h>
#include <stdint.h>
#include "vm.h"
#include "vmtutil.h"

/* ---- frames (vmframe.c) -------------------------------------------------- */

/* The largest frame body accepted (a --json file of many runs). */
#define RP_FRAME_MAX (256u << 20)
/* The header of a frame: "@@T LEN\n" (at most 24 bytes). */
size_t rp_frame_header(char *buf, size_t n, char type, size_t len);

typedef int (*rp_frame_fn)(void *arg, char type, const char *body, size_t len);
struct rp_frame_reader {
	char hdr[32];
	size_t hlen;
	int in_body;
	char type;
	size_t need, got; /* body bytes, and the "\n" after them */
	char *body;
};
/* Feed n bytes of the port to the reader; calls fn for each complete
 * frame.  Returns 0, -EPROTO for bytes that are not frames, -ENOMEM, or
 * what fn returned if negative (which stops the feed). */
int rp_frame_feed(struct rp_frame_reader *fr, const char *p, size_t n, rp_frame_fn fn, void *arg);
void rp_frame_reader_free(struct rp_frame_reader *fr);

/* ---- the image, the guest binary, the initramfs (vmimage.c) ---------------- */

struct rp_image_info {
	char version[160];    /* the kernel's version string, "" if none */
	unsigned protocol;    /* boot protocol, e.g. 0x20f */
	uint64_t init_size;   /* memory the kernel needs to decompress and run */
	uint64_t pref_address;
};
/* Check that path is a bzImage qemu can boot with -kernel, 64-bit.
 * Returns 0, or -errno (cannot read) / -ENOEXEC (not such an image) with
 * msg ("not a bootable x86 kernel image (no bzImage header)"). */
int rp_image_check(const char *path, struct rp_image_info *info, char *msg, size_t msglen);

/* 1 when the ELF file at path is an x86-64 executable without a program
 * interpreter (statically linked); 0 when it has one; -ENOEXEC when it is
 * not an x86-64 ELF executable; -errno when it cannot be read. */
int rp_elf_is_static(const char *path);

/* A newc cpio archive, written to a file descriptor as entries come. */
struct rp_cpio {
	int fd;
	uint64_t off;
	uint32_t ino;
	int err;	  /* the first error (negative errno), sticky */
	char **dirs;	  /* directories written, so each is written once */
	size_t ndirs;
};
void rp_cpio_init(struct rp_cpio *c, int fd);
/* Each directory of path's parents (not path), once. */
void rp_cpio_parents(struct rp_cpio *c, const char *path);
void rp_cpio_dir(struct rp_cpio *c, const char *path);
void rp_cpio_chardev(struct rp_cpio *c, const char *path, unsigned major, unsigned minor,
		     unsigned mode);
void rp_cpio_data(struct rp_cpio *c, const char *path, unsigned mode, const void *data,
		  size_t len);
/* A file with the contents of the host file src (copied as it is read). */
void rp_cpio_file(struct rp_cpio *c, const char *path, unsigned mode, const char *src);
/* The trailer.  Returns 0 or the first error of the archive. */
int rp_cpio_finish(struct rp_cpio *c);

/* Where the guest keeps its control files (args, cwd, env, results). */
#define RP_VM_DIR "/.vmreplay"

/* The path a file named `path` (relative to the directory cwd) has in
 * the guest, whose tree is built with the host's absolute paths: cwd/path
 * with "." and ".." resolved by name.  Returns 0, or -ENAMETOOLONG. */
int rp_vm_guest_path(const char *cwd, const char *path, char *out, size_t outlen);

#endif
