/*
 * rewrite_cmd.c - `vmtrace rewrite`: write a trace rewritten by rules, so
 * it can be dumped, diffed and replayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "rewrite.h"

static const char rewrite_usage[] =
	"usage: vmtrace rewrite [--rules=LIST] [-q] IN OUT\n"
	"       vmtrace rewrite --list-rules\n"
	"\n"
	"Write the trace IN, rewritten by the rules of LIST (comma-separated,\n"
	"applied in that order; default " VAN_REWRITE_DEFAULT "), to OUT.  Events keep\n"
	"their order; calls a rule made or changed are flagged as rewritten\n"
	"(JSON \"flags\": 2) and carry the result the rule expects, which vmreplay\n"
	"checks like a recorded one (a wrong rewrite shows up as divergences).\n"
	"The header's options get \"rewrite=LIST\".  Then prints the\n"
	"counts (on standard error when OUT is '-'): how often each rule applied,\n"
	"at which call sites (from the trace's stacks), the calls it left out and\n"
	"what else it did, a note where the rewritten trace may not behave like\n"
	"the recording; then the calls of both sides, those that take mmap_lock\n"
	"for writing and those that change VMAs.\n"
	"\n"
	"  --rules=LIST    the rules (see below)\n"
	"  --list-rules    print the rules, one per line, and exit\n"
	"  -q, --quiet     do not print the counts\n"
	"  -h, --help      this help\n"
	"\n"
	"Rules:\n"
	"  prot-none-free    uncommit by mmap(PROT_NONE, MAP_FIXED) of committed\n"
	"                    memory -> madvise(MADV_DONTNEED); the range keeps its\n"
	"                    protection and the parts of later commits over it\n"
	"                    (mprotect, mmap(MAP_FIXED)) are dropped (seed 000)\n"
	"  dontneed-to-free  madvise(MADV_DONTNEED) -> MADV_FREE on private anonymous\n"
	"                    ranges (seed 001)\n"
	"  free-to-dontneed  madvise(MADV_FREE) -> MADV_DONTNEED (seed 001)\n"
	"  mlock-onfault     mlock -> mlock2(MLOCK_ONFAULT), mlockall -> with\n"
	"                    MCL_ONFAULT, mmap(MAP_LOCKED) -> mmap, then\n"
	"                    mlock2(MLOCK_ONFAULT) (seed 003)\n"
	"  populate          anonymous private mmap whose pages are all touched before\n"
	"                    the next call on it -> with MAP_POPULATE (seed 004)\n"
	"  discard-before-unmap\n"
	"                    madvise(MADV_DONTNEED/MADV_FREE) or mprotect(PROT_NONE)\n"
	"                    of a range the same thread unmaps next -> dropped\n"
	"                    (formerly unmap-only)\n"
	"  free-before-dontneed\n"
	"                    madvise(MADV_FREE) of pages a later MADV_DONTNEED gives\n"
	"                    back while all are still present -> dropped (seed 001;\n"
	"                    formerly dontneed-only)\n"
	"The last two take the names of the lint findings they rewrite.\n"
	"See vmtrace(1) for when each rule must not apply.\n"
	"\n"
	"IN may be '-' for standard input and OUT '-' for standard output.\n"
	"Exit status: 0, or 2 for a usage error, an unknown rule or an unreadable\n"
	"input (a damaged IN still gives a valid OUT with the events before the\n"
	"damage).\n";

static int list_rules(void)
{
	size_t n;
	const struct van_rewrite_rule_info *r = van_rewrite_rules(&n);
	for (size_t i = 0; i < n; i++)
		printf("%-20s %s\n", r[i].name, r[i].summary);
	return 0;
}

/* How often each rule applied, where, and what it changed; then the
 * calls of both sides. */
static void print_counts(FILE *f, const struct van_rewrite_counts *cn)
{
	fprintf(f, "%" PRIu64 " events in, %" PRIu64 " out\n", cn->events_in, cn->events_out);
	for (uint32_t i = 0; i < cn->nrules; i++) {
		const struct van_rewrite_count *r = &cn->rules[i];
		fprintf(f, "%-17s %" PRIu64 "\n", r->name, r->applied);
		for (uint32_t k = 0; k < r->nsites; k++)
			fprintf(f, "  %10" PRIu64 " at %s\n", r->sites[k].calls, r->sites[k].site);
		if (r->nsites && r->sites_rest)
			fprintf(f, "  %10" PRIu64 " elsewhere or without a stack\n", r->sites_rest);
		if (r->removed)
			fprintf(f, "  %10" PRIu64 " calls left out\n", r->removed);
		for (uint32_t k = 0; k < r->ndetails; k++)
			fprintf(f, "  %10" PRIu64 " %s\n", r->details[k].n, r->details[k].what);
		if (r->note)
			fprintf(f, "  note: %s\n", r->note);
	}
	if (cn->overflows)
		fprintf(f, "(%" PRIu64 " decisions forced early: too many events held back)\n",
			cn->overflows);
	fprintf(f, "%-26s %10s %10s\n", "calls", "in", "out");
	fprintf(f, "%-26s %10" PRIu64 " %10" PRIu64 "\n", "all", cn->in.calls, cn->out.calls);
	fprintf(f, "%-26s %10" PRIu64 " %10" PRIu64 "\n", "mmap_lock held for writing",
		cn->in.write_locked, cn->out.write_locked);
	fprintf(f, "%-26s %10" PRIu64 " %10" PRIu64 "\n", "changing VMAs", cn->in.vma_changes,
		cn->out.vma_changes);
}

static int run_rewrite(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "list-rules", no_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rules = VAN_REWRITE_DEFAULT;
	int quiet = 0, c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': rules = optarg; break;
		case 'l': return list_rules();
		case 'q': quiet = 1; break;
		case 'h': fputs(rewrite_usage, stdout); return 0;
		case '?':
			if (optopt == 'r')
				return vtc_usage_error("rewrite", "--rules needs a value");
			/* fall through */
		default:
			return vtc_usage_error("rewrite", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return vtc_usage_error("rewrite", argc - optind < 2 ? "needs IN and OUT"
								: "too many arguments");
	const char *in = argv[optind], *out = argv[optind + 1];

	char err[512];
	van_rewrite *rw = van_rewrite_new(rules, err, sizeof(err));
	if (!rw) {
		fprintf(stderr, "vmtrace rewrite: %s\n", err);
		return 2;
	}
	int ifd = strcmp(in, "-") ? open(in, O_RDONLY | O_CLOEXEC) : dup(0);
	if (ifd < 0) {
		fprintf(stderr, "vmtrace: cannot open '%s': %s\n", in, strerror(errno));
		van_rewrite_free(rw);
		return 2;
	}
	int to_stdout = !strcmp(out, "-");
	struct stat si, so;
	if (!to_stdout && fstat(ifd, &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev &&
	    si.st_ino == so.st_ino) {
		fprintf(stderr, "vmtrace rewrite: '%s' is the input; give another OUT\n", out);
		close(ifd);
		van_rewrite_free(rw);
		return 2;
	}
	int ofd = to_stdout ? dup(1) : open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (ofd < 0) {
		fprintf(stderr, "vmtrace: cannot create '%s': %s\n", out, strerror(errno));
		close(ifd);
		van_rewrite_free(rw);
		return 2;
	}
	int rc = van_rewrite_trace(rw, ifd, ofd, err, sizeof(err));
	struct stat st;
	int wrote = fstat(ofd, &st) == 0 && st.st_size > 0;
	if (close(ofd) && !rc) {
		snprintf(err, sizeof(err), "writing: %s", strerror(errno));
		rc = -errno;
	}
	close(ifd);
	const struct van_rewrite_counts *cn = van_rewrite_counts(rw);
	int reading = rc < 0 && !strncmp(err, "reading:", 8);
	if (rc < 0) {
		if (reading)
			fprintf(stderr, "vmtrace rewrite: '%s': %s\n", in, err + 9);
		else if (!strncmp(err, "writing:", 8))
			fprintf(stderr, "vmtrace rewrite: '%s': %s\n", out, err + 9);
		else
			fprintf(stderr, "vmtrace rewrite: %s\n", err);
		/* A damaged input leaves a valid, shorter OUT; anything
		 * else (an input that is no trace at all, a write error)
		 * leaves nothing worth keeping. */
		if ((!reading || !wrote) && !to_stdout)
			unlink(out);
	}
	if (!quiet && (rc == 0 || (reading && cn->events_in)))
		print_counts(to_stdout ? stderr : stdout, cn);
	van_rewrite_free(rw);
	if (rc < 0)
		return 2;
	return 0;
}

const struct vtc_cmd vtc_cmd_rewrite = {
	"rewrite", run_rewrite, "write a trace rewritten by rules (prot-none-free, ...)",
	rewrite_usage,
};
