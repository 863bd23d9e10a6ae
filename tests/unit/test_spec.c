/*
 * test_spec.c - the numbers of the format specification, man/vmtrace.5,
 * against those of the code (format/codec_int.h, format/vmtrace.h): frame
 * magics and identifiers, versions, header and footer field ids, record
 * kinds, op numbers and limits.  The page is normative; a difference is
 * a bug in one of the two.  Run from the top of the tree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_int.h"
#include "vmtrace.h"

#define PAGE "man/vmtrace.5"

static char *page;

static int setup(void **state)
{
	FILE *f = fopen(PAGE, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s (run from the top of the tree)\n", PAGE);
		return -1;
	}
	static char buf[1 << 18];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* roff escapes: \- is a minus, \(dq a quote. */
	for (char *p = buf; (p = strstr(p, "\\-"));)
		memmove(p, p + 1, strlen(p));
	page = buf;
	return 0;
}

/* Whether the page has a line matching the extended regex built from fmt. */
static int has_line(const char *fmt, ...)
{
	char re[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(re, sizeof(re), fmt, ap);
	va_end(ap);
	regex_t r;
	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE | REG_NOSUB), 0);
	int ok = regexec(&r, page, 0, NULL, 0) == 0;
	regfree(&r);
	if (!ok)
		fprintf(stderr, "%s: no line matches /%s/\n", PAGE, re);
	return ok;
}

static void upper(char *out, const char *in, size_t n)
{
	size_t i = 0;
	for (; in[i] && i + 1 < n; i++)
		out[i] = (char)toupper((unsigned char)in[i]);
	out[i] = 0;
}

static void test_frames(void **state)
{
	static const struct {
		uint32_t magic;
		const char *id;
	} frames[] = {
		{VMT_MAGIC_HEADER, VMT_HEADER_ID},
		{VMT_MAGIC_CHUNK, VMT_CHUNK_ID},
		{VMT_MAGIC_FOOTER, VMT_FOOTER_ID},
	};
	for (size_t i = 0; i < 3; i++) {
		/* The magic, then a line later the frame's identifier. */
		assert_true(has_line("Magic_Number = 0x%08X\n.*\n.*Identifier = \"%s\"",
				     frames[i].magic, frames[i].id));
	}
	assert_true(has_line("Frame_Size = %u$", VMT_CHUNK_DESC_SIZE));
	assert_true(has_line("Major_Version = %d$", VMT_FORMAT_MAJOR));
	assert_true(has_line("Minor_Version = %d$", VMT_FORMAT_MINOR));
	assert_true(has_line("Frame_Size: content bytes, 12 \\.\\. %u$", VMT_MAX_HEADER_SIZE));
	assert_true(has_line("Frame_Size: content bytes, 8 \\.\\. %u$", VMT_MAX_FOOTER_SIZE));
	assert_true(has_line("One Zstandard frame \\(magic 0x%08X\\)", VMT_ZSTD_MAGIC));
}

static void test_fields(void **state)
{
	static const struct {
		int id;
		const char *name;
	} header[] = {
		{VMT_HK_ARCH, "ARCH"}, {VMT_HK_PAGE_SIZE, "PAGE_SIZE"}, {VMT_HK_KERNEL, "KERNEL"},
		{VMT_HK_HOSTNAME, "HOSTNAME"}, {VMT_HK_ARG, "ARG"}, {VMT_HK_OPTIONS, "OPTIONS"},
		{VMT_HK_RECORDER, "RECORDER"}, {VMT_HK_START_REALTIME, "START_REALTIME"},
		{VMT_HK_START_MONO, "START_MONO"},
	}, footer[] = {
		{VMT_FK_EVENTS, "EVENTS"}, {VMT_FK_BY_KIND, "BY_KIND"}, {VMT_FK_OP_COUNT, "OP_COUNT"},
		{VMT_FK_OP_ERRORS, "OP_ERRORS"}, {VMT_FK_THREADS, "THREADS"}, {VMT_FK_PROCS, "PROCS"},
		{VMT_FK_FIRST_TS, "FIRST_TS"}, {VMT_FK_LAST_TS, "LAST_TS"},
		{VMT_FK_RAW_BYTES, "RAW_BYTES"}, {VMT_FK_CHUNKS, "CHUNKS"},
	};
	for (size_t i = 0; i < sizeof(header) / sizeof(header[0]); i++)
		assert_true(has_line("^ *%d  %s +(string|number) ", header[i].id, header[i].name));
	for (size_t i = 0; i < sizeof(footer) / sizeof(footer[0]); i++)
		assert_true(has_line("^ *%d  %s +(number|list) ", footer[i].id, footer[i].name));
}

static void test_kinds_and_ops(void **state)
{
	char name[64];
	for (uint32_t k = 1; k < VMT_EV__COUNT; k++) {
		upper(name, vmt_kind_name(k), sizeof(name));
		assert_true(has_line("(^| ) *%u  %s( |$)", k, name));
		assert_true(has_line("^\\.SS %s \\(%u\\)$", name, k));
	}
	for (uint32_t op = 1; op < VMT_OP__COUNT; op++) {
		const struct vmt_op_info *oi = vmt_op_info(op);
		assert_true(has_line("^ *%u  %s +%s ", op, oi->name,
				     oi->ret == VMT_RET_ADDR ? "addr" : "int"));
	}
}

static void test_limits(void **state)
{
	assert_true(has_line("^VMT_MAX_HEADER_SIZE +1 MiB "));
	assert_int_equal(VMT_MAX_HEADER_SIZE, 1u << 20);
	assert_true(has_line("^VMT_MAX_ARGV +%u ", VMT_MAX_ARGV));
	assert_true(has_line("^VMT_MAX_CHUNK_BYTES +16 MiB "));
	assert_int_equal(VMT_MAX_CHUNK_BYTES, 16u << 20);
	assert_true(has_line("^VMT_MAX_RATIO +%u ", VMT_MAX_RATIO));
	assert_true(has_line("^VMT_MAX_FOOTER_SIZE +64 MiB "));
	assert_int_equal(VMT_MAX_FOOTER_SIZE, 64u << 20);
	assert_true(has_line("^VMT_MAX_THREADS +2\\^22 "));
	assert_int_equal(VMT_MAX_THREADS, 1u << 22);
	assert_true(has_line("^VMT_MAX_ARGS +%d ", VMT_MAX_ARGS));
	assert_true(has_line("^VMT_MAX_STRING +%u ", VMT_MAX_STRING));
	assert_true(has_line("^VMT_MAX_MAPS_ENTRIES +2\\^20 "));
	assert_int_equal(VMT_MAX_MAPS_ENTRIES, 1u << 20);
	assert_true(has_line("^VMT_MAX_TOUCH_RUNS +2\\^20 "));
	assert_int_equal(VMT_MAX_TOUCH_RUNS, 1u << 20);
	assert_true(has_line("^VMT_MAX_STACK_DEPTH +%u ", VMT_MAX_STACK_DEPTH));
	/* The address-mask bit of the result. */
	assert_true(has_line("bit 6 \\(0x%02X\\) set: the result", VMT_MASK_RESULT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_kinds_and_ops),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
