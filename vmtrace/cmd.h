/*
 * cmd.h - the vmtrace subcommands and what they share.
 *
 * Each subcommand lives in its own file (vmtrace/<name>.c) and is listed in
 * the table of vmtrace/vmtrace.c.  A subcommand returns the process exit
 * status: 0 success, 1 a finding, 2 usage error or bad input.
 */
#ifndef VTC_CMD_H
#define VTC_CMD_H

#include <stdio.h>
#include "vmtrace.h"
#include "vmtutil.h"

struct vtc_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary; /* one line for `vmtrace --help` */
	const char *usage;   /* full help for `vmtrace help NAME` */
};

extern const struct vtc_cmd vtc_cmd_dump;
extern const struct vtc_cmd vtc_cmd_stat;
extern const struct vtc_cmd vtc_cmd_diff;
extern const struct vtc_cmd vtc_cmd_lint;
extern const struct vtc_cmd vtc_cmd_export;
extern const struct vtc_cmd vtc_cmd_plot;
extern const struct vtc_cmd vtc_cmd_rewrite;

/* An open trace for a subcommand. */
struct vtc_input {
	const char *path;
	int fd;
	vmt_reader *r;
};

/* Open path ("-" is stdin) and read its header.  On failure prints
 * `vmtrace: cannot open 'path': why` (or the reader's message) and returns
 * -1. */
int vtc_input_open(struct vtc_input *in, const char *path);
/* The same, but on failure the message (a line) goes into why, not to
 * standard error: for a trace opened on a thread whose messages must come
 * after the main thread's. */
int vtc_input_open_msg(struct vtc_input *in, const char *path, char *why, size_t len);
/* Start reading again from the first event (regular files only).  Prints
 * and returns -1 on failure. */
int vtc_input_rewind(struct vtc_input *in);
void vtc_input_close(struct vtc_input *in);

/* Print `vmtrace: 'path': <reader message>` for the reader's error. */
void vtc_input_report(const struct vtc_input *in);

/* Print a usage error ("vmtrace dump: ...") and the hint; returns 2. */
int vtc_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A command's output buffer into f (vmt_buf_write), saying "vmtrace CMD:
 * out of memory" when it could not be built whole (stdout's write errors
 * are vmt_stdout_finish's to say). */
int vtc_put_output(const char *cmd, const struct vmt_buf *b, FILE *f);

/* Parse the arguments of a subcommand that takes `[--json] TRACE` (and
 * -h/--help, which prints usage).  Returns the trace path, with *json set;
 * or NULL with *status the exit status to return (0 after the help, 2 after
 * a usage error). */
const char *vtc_args_json_trace(const char *cmd, const char *usage, int argc, char **argv,
				int *json, int *status);

#endif
