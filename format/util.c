/*
 * util.c - the small helpers every part of vmrec uses: error messages,
 * array growth, byte counts and symbol names for people.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libiberty/demangle.h>

#include "vmtrace.h"
#include "vmtutil.h"

int vmt_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int vmt_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
	void *arr;
	size_t n;

	if (need <= *cap)
		return 0;
	for (n = *cap ? *cap : 16; n < need; n *= 2)
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
	if (!elem || n > SIZE_MAX / elem)
		return -ENOMEM;
	/* The pointer is read and written through memcpy: arrp points to a
	 * T *, not to a void *. */
	memcpy(&arr, arrp, sizeof(arr));
	if ((n - *cap) * elem >= (1u << 20)) {
		/* A large zeroed tail: from calloc, whose fresh pages are
		 * zero untouched.  An array indexed by an id an untrusted
		 * trace gives (a thread index of millions) then costs only
		 * the pages its entries use. */
		void *big = calloc(n, elem);
		if (!big)
			return -ENOMEM;
		if (*cap)
			memcpy(big, arr, *cap * elem);
		free(arr);
		arr = big;
	} else {
		arr = realloc(arr, n * elem);
		if (!arr)
			return -ENOMEM;
		memset((char *)arr + *cap * elem, 0, (n - *cap) * elem);
	}
	memcpy(arrp, &arr, sizeof(arr));
	*cap = n;
	return 0;
}

int vmt_stdout_finish(const char *prog, int rc, int fail_rc)
{
	/* errno says why only if the flush itself failed; an error flag
	 * left by an earlier write comes without a reason. */
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	int e = errno;
	if (e == EPIPE) /* the reader went away: not worth a word */
		return fail_rc;
	if (e)
		fprintf(stderr, "%s: cannot write output: %s\n", prog, strerror(e));
	else
		fprintf(stderr, "%s: cannot write output\n", prog);
	return fail_rc;
}

int vmt_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		done += (size_t)r;
	}
	return 0;
}

const char *vmt_format_bytes(char *out, size_t n, uint64_t v)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double x = (double)v;
	int i = 0;

	while (x >= 1024 && i < 5) {
		x /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, n, "%" PRIu64 " bytes", v);
	else
		snprintf(out, n, "%.1f %s", x, unit[i]);
	return out;
}

char *vmt_demangle(const char *name)
{
	/* libiberty's demangler (that of c++filt and gdb): not written here. */
	/* (Names of real programs are far shorter; a longer one in a trace
	 * is shown as it is.) */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') ||
	    strnlen(name, 4097) > 4096)
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
