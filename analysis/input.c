/*
 * input.c - opening traces and reporting errors for vmtrace subcommands.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"

int vmt_input_open(struct vmt_input *in, const char *path)
{
	char msg[320];
	int err;

	memset(in, 0, sizeof(*in));
	in->path = path;
	if (strcmp(path, "-") == 0) {
		in->fd = dup(0);
	} else {
		in->fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (in->fd < 0) {
		fprintf(stderr, "vmtrace: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	in->r = vmt_reader_open_fd(in->fd, &err, msg, sizeof(msg));
	if (!in->r) {
		fprintf(stderr, "vmtrace: '%s': %s\n", path, msg);
		close(in->fd);
		in->fd = -1;
		return -1;
	}
	return 0;
}

int vmt_input_rewind(struct vmt_input *in)
{
	char msg[320];
	int err;

	if (lseek(in->fd, 0, SEEK_SET) != 0) {
		fprintf(stderr, "vmtrace: '%s': cannot read the trace twice: %s\n",
			in->path, strerror(errno));
		return -1;
	}
	vmt_reader_free(in->r);
	in->r = vmt_reader_open_fd(in->fd, &err, msg, sizeof(msg));
	if (!in->r) {
		fprintf(stderr, "vmtrace: '%s': %s\n", in->path, msg);
		return -1;
	}
	return 0;
}

void vmt_input_close(struct vmt_input *in)
{
	vmt_reader_free(in->r);
	in->r = NULL;
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
}

void vmt_input_report(const struct vmt_input *in)
{
	fprintf(stderr, "vmtrace: '%s': %s\n", in->path, vmt_reader_errmsg(in->r));
}

int vmt_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "vmtrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee 'vmtrace help %s'\n", cmd);
	return 2;
}

int vmt_finish_stdout(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (errno != EPIPE)
			fprintf(stderr, "vmtrace: cannot write output: %s\n", strerror(errno));
		return 2;
	}
	return rc;
}
