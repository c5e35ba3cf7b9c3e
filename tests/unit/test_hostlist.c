/* Unit tests for hostlist.c: pdsh-style expansion, compression, splitting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "util.h"

/* Expand `pattern` and compare with the space-separated `want`. */
static void expect_expand(const char *pattern, const char *want)
{
	struct strbuf got = STRBUF_INIT;
	struct error err = {0};
	char **list = NULL;
	size_t nr = 0, i;

	if (hostlist_expand(&list, &nr, pattern, &err) < 0)
		fail_msg("expanding '%s' failed: %s", pattern, err.msg);
	for (i = 0; i < nr; i++)
		strbuf_addf(&got, "%s%s", i ? " " : "", list[i]);
	assert_null(list[nr]);
	assert_string_equal(got.buf, want);
	hostlist_free(list);
	strbuf_release(&got);
}

static void expect_expand_error(const char *pattern, const char *msg, const char *hint)
{
	struct error err = {0};
	char **list = (char **)1;
	size_t nr = 7;

	assert_int_equal(hostlist_expand(&list, &nr, pattern, &err), -1);
	assert_null(list);
	assert_int_equal(nr, 0);
	assert_string_equal(err.msg, msg);
	if (hint)
		assert_string_equal(err.hint, hint);
}

static void expect_compress(const char *names, const char *want)
{
	char *copy = xstrdup(names), *save = NULL, *tok, *got;
	const char *list[64];
	size_t nr = 0;

	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		list[nr++] = tok;
	got = hostlist_compress(list, nr);
	assert_string_equal(got, want);
	free(got);
	free(copy);
}

static void test_expand_plain(void **state)
{
	expect_expand("b-0", "b-0");
	expect_expand("192.168.10.47", "192.168.10.47");
	expect_expand("", "");
}

static void test_expand_ranges(void **state)
{
	expect_expand("b-[2-4]", "b-2 b-3 b-4");
	expect_expand("b-[2-4,7]", "b-2 b-3 b-4 b-7");
	expect_expand("b-[7,2-3]", "b-7 b-2 b-3");
	expect_expand("192.168.10.[52-54]", "192.168.10.52 192.168.10.53 192.168.10.54");
	expect_expand("[1-3]", "1 2 3");
	expect_expand("n[5]", "n5");
	expect_expand("gpu[1-2].lab.local", "gpu1.lab.local gpu2.lab.local");
	expect_expand("n[9-11]", "n9 n10 n11");
}

static void test_expand_padding(void **state)
{
	expect_expand("n[01-03]", "n01 n02 n03");
	expect_expand("n[08-11]", "n08 n09 n10 n11");
	expect_expand("n[001-002,7]", "n001 n002 n7");
	expect_expand("n[0-2]", "n0 n1 n2");
	expect_expand("a-[01]", "a-01");
}

static void test_expand_errors(void **state)
{
	const char *hint =
	    "a range is [N-M] or a list like [2-4,7] of decimal numbers, e.g. b-[2-4]";

	expect_expand_error("b-[]", "empty range '[]' in 'b-[]'", hint);
	expect_expand_error("b-[2,,3]", "empty item in range 'b-[2,,3]'", hint);
	expect_expand_error("b-[2-4,]", "empty item in range 'b-[2-4,]'", hint);
	expect_expand_error("b-[a-c]", "malformed range item 'a-c' in 'b-[a-c]'", hint);
	expect_expand_error("b-[2-]", "malformed range item '2-' in 'b-[2-]'", hint);
	expect_expand_error("b-[-2]", "malformed range item '-2' in 'b-[-2]'", hint);
	expect_expand_error("b-[2 - 4]", "malformed range item '2 - 4' in 'b-[2 - 4]'", hint);
	expect_expand_error("b-[1-2-3]", "malformed range item '1-2-3' in 'b-[1-2-3]'", hint);
	expect_expand_error("b-[1234567890]",
			    "malformed range item '1234567890' in 'b-[1234567890]'", hint);
	expect_expand_error("b-[4-2]", "reversed range '4-2' in 'b-[4-2]'",
			    "write the lower bound first: [2-4]");
	expect_expand_error("b-[2-4", "missing ']' in 'b-[2-4'", hint);
	expect_expand_error("b-2-4]", "unmatched ']' in 'b-2-4]'", hint);
	expect_expand_error("b]-[2-4]", "unmatched ']' in 'b]-[2-4]'", hint);
	expect_expand_error("r[1-2]-n[1-3]", "more than one bracket group in 'r[1-2]-n[1-3]'",
			    "only one [..] range per name or address is supported");
	expect_expand_error("r[1-[2]]", "more than one bracket group in 'r[1-[2]]'", NULL);
	hint = "Kubernetes supports at most 5000 nodes in one cluster";
	expect_expand_error("n[1-5001]", "range 'n[1-5001]' expands to more than 5000 names", hint);
	expect_expand_error("n[1-3000,1-3000]",
			    "range 'n[1-3000,1-3000]' expands to more than 5000 names", hint);
	expect_expand_error("n[1-100000]", "range 'n[1-100000]' expands to more than 5000 names",
			    hint);
}

static void test_expand_max(void **state)
{
	struct error err = {0};
	char **list = NULL;
	size_t nr = 0;

	assert_int_equal(hostlist_expand(&list, &nr, "n[1-5000]", &err), 0);
	assert_int_equal(nr, HOSTLIST_MAX);
	assert_string_equal(list[0], "n1");
	assert_string_equal(list[nr - 1], "n5000");
	hostlist_free(list);
	hostlist_free(NULL);
}

static void test_compress(void **state)
{
	expect_compress("b-2 b-3 b-4 b-7", "b-[2-4,7]");
	expect_compress("b-7 b-3 b-2 b-4", "b-[2-4,7]");
	expect_compress("b-2", "b-2");
	expect_compress("b-2 b-2 b-3", "b-[2-3]");
	expect_compress("b-0 a-01 b-1", "b-[0-1],a-01");
	expect_compress("n01 n02 n03", "n[01-03]");
	expect_compress("n08 n09 n10 n11", "n[08-11]");
	expect_compress("n9 n10", "n[9-10]");
	expect_compress("n1 n01", "n1,n01");
	expect_compress("gw b-1 gw", "gw,b-1");
	expect_compress("192.168.10.52 192.168.10.53 192.168.10.54", "192.168.10.[52-54]");
	expect_compress("gpu1.lab gpu2.lab cpu1.lab", "gpu[1-2].lab,cpu1.lab");
	expect_compress("", "");
}

/* Whatever compress gives, expanding it (group by group) gives back the same set. */
static void test_round_trip(void **state)
{
	static const char *const patterns[] = {
	    "b-[2-4,7]", "n[01-10]", "n[08-11,20]", "x[0-0]", "node[1-3,5,7-9]", "h[98-102]",
	};
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(patterns); i++) {
		struct error err = {0};
		char **list = NULL, **back = NULL;
		size_t nr = 0, nr_back = 0;
		char *c;

		assert_int_equal(hostlist_expand(&list, &nr, patterns[i], &err), 0);
		c = hostlist_compress((const char *const *)list, nr);
		assert_string_equal(c, patterns[i][0] == 'x' ? "x0" : patterns[i]);
		assert_int_equal(hostlist_expand(&back, &nr_back, c, &err), 0);
		assert_int_equal(nr_back, nr);
		for (j = 0; j < nr; j++)
			assert_string_equal(back[j], list[j]);
		hostlist_free(back);
		hostlist_free(list);
		free(c);
	}
}

static void test_split(void **state)
{
	size_t nr = 0;
	char **v = hostlist_split("b-[2-4,7],a-1,@worker", &nr);

	assert_int_equal(nr, 3);
	assert_string_equal(v[0], "b-[2-4,7]");
	assert_string_equal(v[1], "a-1");
	assert_string_equal(v[2], "@worker");
	assert_null(v[3]);
	hostlist_free(v);

	v = hostlist_split("a,,b,", &nr);
	assert_int_equal(nr, 4);
	assert_string_equal(v[1], "");
	assert_string_equal(v[3], "");
	hostlist_free(v);

	v = hostlist_split("", &nr);
	assert_int_equal(nr, 1);
	assert_string_equal(v[0], "");
	hostlist_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_expand_plain),   cmocka_unit_test(test_expand_ranges),
	    cmocka_unit_test(test_expand_padding), cmocka_unit_test(test_expand_errors),
	    cmocka_unit_test(test_expand_max),	   cmocka_unit_test(test_compress),
	    cmocka_unit_test(test_round_trip),	   cmocka_unit_test(test_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
