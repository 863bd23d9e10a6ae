/*
 * fuzz_reader.c - libFuzzer target: any byte string given to the reader
 * yields events and/or one clean error, never a crash, hang or unbounded
 * allocation.  Events that come out are rendered and fed to a symbol table
 * too, so those consumers of untrusted events are fuzzed as well.  Inputs
 * of odd length are read through vmt_reader_prefetch()'s second thread.
 *
 *   make fuzz FUZZ_SECONDS=600      (corpus in build/fuzz/corpus-fuzz_reader)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "vmtrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", 0);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	lseek(fd, 0, SEEK_SET);

	int err = 0;
	char msg[320];
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r) {
		if (err >= 0 || !strstr(msg, " at byte "))
			abort(); /* every failure is negative and names an offset */
		close(fd);
		return 0;
	}
	if ((size & 1) && vmt_reader_prefetch(r))
		abort(); /* a memfd is a regular file: the thread must start */
	vmt_symtab *t = vmt_symtab_new();
	struct vmt_buf b = { 0 };
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		const char *why;
		if (vmt_event_check(&ev, &why) && ev.kind != VMT_EV_MAPS && ev.kind != VMT_EV_TOUCH)
			abort(); /* the reader only returns valid events */
		vmt_buf_reset(&b);
		vmt_render_text(&b, &ev);
		vmt_render_json(&b, &ev);
		vmt_symtab_add(t, &ev);
		if (ev.kind == VMT_EV_SYSCALL && ev.u.sc.stack_id != VMT_NONE) {
			uint32_t depth;
			const uint64_t *ips = vmt_symtab_stack(t, ev.u.sc.stack_id, &depth);
			for (uint32_t i = 0; ips && i < depth; i++)
				vmt_symtab_render_ip(t, &b, ips[i]);
		}
	}
	if (rc < 0 && !strstr(vmt_reader_errmsg(r), " at byte "))
		abort();
	vmt_buf_free(&b);
	vmt_symtab_free(t);
	vmt_reader_free(r);
	close(fd);
	return 0;
}
