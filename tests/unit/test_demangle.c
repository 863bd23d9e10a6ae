/*
 * test_demangle.c - symbol names for people: vmt_demangle and the symbol
 * table that keeps function names demangled (format/util.c, symtab.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "vmtrace.h"
#include "vmtutil.h"

static void expect(const char *mangled, const char *want)
{
	char *got = vmt_demangle(mangled);
	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_demangle(void **state)
{
	expect("_ZN2os18pd_uncommit_memoryEPcmb", "os::pd_uncommit_memory(char*, unsigned long, bool)");
	expect("_ZL20current_stack_regionPPhPm.part.0",
	       "current_stack_region(unsigned char**, unsigned long*) [clone .part.0]");
	expect("_ZN2v84base2OS4FreeEPvm", "v8::base::OS::Free(void*, unsigned long)");
	/* Not mangled, or not valid: left alone. */
	expect("malloc", NULL);
	expect("_start", NULL);
	expect("_Z", NULL);
	expect("_ZN2os", NULL);
	expect(NULL, NULL);
	char big[8192];
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '_';
	big[1] = 'Z';
	big[sizeof(big) - 1] = 0;
	expect(big, NULL);
}

/* The table keeps a function name demangled, a module path as it is. */
static void test_symtab_keeps_names_readable(void **state)
{
	vmt_symtab *t = vmt_symtab_new();
	assert_non_null(t);
	const char *strs[] = {"/usr/lib/jvm/libjvm.so", "_ZN2os18pd_uncommit_memoryEPcmb"};
	for (uint32_t i = 0; i < 2; i++) {
		struct vmt_event ev = {.kind = VMT_EV_STRING};
		ev.u.string.id = i;
		ev.u.string.str = strs[i];
		assert_int_equal(vmt_symtab_add(t, &ev), 0);
	}
	struct vmt_event ev = {.kind = VMT_EV_SYMBOL};
	ev.u.symbol.ip = 0x7f0000001234;
	ev.u.symbol.module = 0;
	ev.u.symbol.function = 1;
	ev.u.symbol.offset = 0x19;
	assert_int_equal(vmt_symtab_add(t, &ev), 0);
	assert_string_equal(vmt_symtab_function(t, 0x7f0000001234),
			    "os::pd_uncommit_memory(char*, unsigned long, bool)");
	struct vmt_buf b = {0};
	vmt_symtab_render_ip(t, &b, 0x7f0000001234);
	assert_string_equal(b.data, "os::pd_uncommit_memory(char*, unsigned long, bool)+0x19 (libjvm.so)");
	vmt_buf_free(&b);
	vmt_symtab_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_symtab_keeps_names_readable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
