/*
 * vmtrace.c - the vmtrace command: dispatch to the subcommands of the table,
 * then the check of standard output.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "vmtutil.h"

#define VMTRACE_VERSION "0.1"

static const struct vtc_cmd *const commands[] = {
	&vtc_cmd_dump,
	&vtc_cmd_stat,
	&vtc_cmd_diff,
	&vtc_cmd_lint,
	&vtc_cmd_export,
	&vtc_cmd_plot,
	&vtc_cmd_rewrite,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct vtc_cmd *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: vmtrace COMMAND [OPTIONS] TRACE...\n\n"
		   "Read traces written by vmrec.  Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\n  vmtrace help COMMAND   the options of one command\n"
		   "  vmtrace --version\n\n"
		   "Exit status: 0 success, 1 a finding (diff, lint), 2 usage error or bad input.\n"
		   "See vmtrace(1) and the format specification vmtrace(5).\n");
	return rc;
}

/* The command's exit status (before the check of stdout). */
static int run(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr, 2);
	const char *name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help"))
		return usage(stdout, 0);
	if (!strcmp(name, "--version")) {
		printf("vmtrace %s (trace format %d.%d)\n", VMTRACE_VERSION,
		       VMT_FORMAT_MAJOR, VMT_FORMAT_MINOR);
		return 0;
	}
	if (!strcmp(name, "help")) {
		if (argc < 3)
			return usage(stdout, 0);
		const struct vtc_cmd *c = find(argv[2]);
		if (!c) {
			fprintf(stderr, "vmtrace: no help for '%s': not a vmtrace command\n", argv[2]);
			return 2;
		}
		fputs(c->usage, stdout);
		return 0;
	}
	const struct vtc_cmd *c = find(name);
	if (!c) {
		fprintf(stderr, "vmtrace: '%s' is not a vmtrace command; see 'vmtrace --help'\n", name);
		return 2;
	}
	return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	/* A closed pipe (vmtrace dump t.zst | head) ends quietly. */
	signal(SIGPIPE, SIG_DFL);
	/* Output is checked once, here, whatever the command (as git's
	 * run_builtin does). */
	/* stdout flushed and checked once, here: the commands do not */
	return vmt_stdout_finish("vmtrace", run(argc, argv), 2);
}
