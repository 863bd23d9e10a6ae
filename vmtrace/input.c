/*
 * input.c - opening traces and reporting errors for vmtrace subcommands.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "vmtutil.h"

int vtc_input_open_msg(struct vtc_input *in, const char *path, char *why, size_t len)
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
		snprintf(why, len, "vmtrace: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	in->r = vmt_reader_open_fd(in->fd, &err, msg, sizeof(msg));
	if (!in->r) {
		snprintf(why, len, "vmtrace: '%s': %s\n", path, msg);
		close(in->fd);
		in->fd = -1;
		return -1;
	}
	/* The model of a subcommand is sequential; the decoding need not
	 * wait for it (a pipe stays sequential). */
	vmt_reader_prefetch(in->r);
	return 0;
}

int vtc_input_open(struct vtc_input *in, const char *path)
{
	char why[PATH_MAX + 400];
	if (vtc_input_open_msg(in, path, why, sizeof(why)) == 0)
		return 0;
	fputs(why, stderr);
	return -1;
}

int vtc_input_rewind(struct vtc_input *in)
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
	vmt_reader_prefetch(in->r);
	return 0;
}

void vtc_input_close(struct vtc_input *in)
{
	vmt_reader_free(in->r);
	in->r = NULL;
	if (in->fd >= 0)
		close(in->fd);
	in->fd = -1;
}

void vtc_input_report(const struct vtc_input *in)
{
	fprintf(stderr, "vmtrace: '%s': %s\n", in->path, vmt_reader_errmsg(in->r));
}

int vtc_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "vmtrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee 'vmtrace help %s'\n", cmd);
	return 2;
}

int vtc_put_output(const char *cmd, const struct vmt_buf *b, FILE *f)
{
	int e = vmt_buf_write(b, f);
	if (e == -ENOMEM)
		fprintf(stderr, "vmtrace %s: out of memory\n", cmd);
	return e;
}

const char *vtc_args_json_trace(const char *cmd, const char *usage, int argc, char **argv,
				int *json, int *status)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	*json = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': *json = 1; break;
		case 'h':
			fputs(usage, stdout);
			*status = 0;
			return NULL;
		default:
			*status = vtc_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
			return NULL;
		}
	}
	if (argc - optind != 1) {
		*status = vtc_usage_error(cmd, argc - optind ? "too many arguments" : "no trace given");
		return NULL;
	}
	return argv[optind];
}
