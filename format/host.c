/*
 * host.c - facts about this machine for trace headers, and error texts.
 */
#include <errno.h>
#include <string.h>
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
