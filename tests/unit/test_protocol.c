/* Unit tests for protocol.c: the lines steps print to talk to provision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "protocol.h"

static struct protocol_msg parse(const char *line)
{
	struct protocol_msg m;
	protocol_parse(&m, line, strlen(line));
	return m;
}

static void expect_piece(const char *p, size_t len, const char *want)
{
	assert_int_equal(len, strlen(want));
	assert_memory_equal(p, want, len);
}

static void test_set_and_secret(void **state)
{
	struct protocol_msg m = parse("::set containerd_major=2");

	assert_int_equal(m.kind, PROTOCOL_SET);
	expect_piece(m.name, m.name_len, "containerd_major");
	expect_piece(m.value, m.value_len, "2");
	m = parse("::secret join_command@b-2=kubeadm join x --token a.b");
	assert_int_equal(m.kind, PROTOCOL_SECRET);
	expect_piece(m.name, m.name_len, "join_command@b-2");
	expect_piece(m.value, m.value_len, "kubeadm join x --token a.b");
	m = parse("::set empty=");
	assert_int_equal(m.kind, PROTOCOL_SET);
	assert_int_equal(m.value_len, 0);
}

static void test_malformed(void **state)
{
	assert_int_equal(parse("::set no-equals").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::set 1abc=x").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::set a b=x").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::secret x@=y").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::secret x@b_2=y").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::fetch relative name").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::fetch /etc/x ../escape").kind, PROTOCOL_MALFORMED);
	assert_int_equal(parse("::fetch /etc/x a/b").kind, PROTOCOL_MALFORMED);
	assert_string_equal(parse("::set x").error, "malformed '::set NAME=VALUE' line");
}

static void test_other_lines(void **state)
{
	struct protocol_msg m = parse("::skip no nfsd in this kernel");

	assert_int_equal(m.kind, PROTOCOL_SKIP);
	expect_piece(m.value, m.value_len, "no nfsd in this kernel");
	m = parse("::hint run apt-get -f install");
	assert_int_equal(m.kind, PROTOCOL_HINT);
	m = parse("::note release jhub rolled back to revision 2, then upgraded");
	assert_int_equal(m.kind, PROTOCOL_NOTE);
	expect_piece(m.value, m.value_len, "release jhub rolled back to revision 2, then upgraded");
	assert_int_equal(parse("::notes x").kind, PROTOCOL_NONE);
	m = parse("::fetch /etc/kubernetes/admin.conf admin.conf");
	assert_int_equal(m.kind, PROTOCOL_FETCH);
	expect_piece(m.name, m.name_len, "/etc/kubernetes/admin.conf");
	expect_piece(m.value, m.value_len, "admin.conf");
	/* Ordinary output, including things that merely look similar. */
	assert_int_equal(parse("configured ::set in a sentence").kind, PROTOCOL_NONE);
	assert_int_equal(parse("::").kind, PROTOCOL_NONE);
	assert_int_equal(parse("::setx=1").kind, PROTOCOL_NONE);
	assert_int_equal(parse(":: set x=1").kind, PROTOCOL_NONE);
	assert_int_equal(parse("").kind, PROTOCOL_NONE);
}

/* ::progress image=REF done=BYTES total=BYTES (issue 32): bounded, exact, or refused. */
static void test_progress(void **state)
{
	struct protocol_msg m =
	    parse("::progress image=registry.k8s.io/pause:3.10.2 done=1024 total=4096");

	assert_int_equal(m.kind, PROTOCOL_PROGRESS);
	expect_piece(m.name, m.name_len, "registry.k8s.io/pause:3.10.2");
	assert_int_equal(m.done, 1024);
	assert_int_equal(m.total, 4096);
	/* any order; total 0 while not known; a whole 2^53 */
	m = parse("::progress total=0 done=77 image=a/b:1");
	assert_int_equal(m.kind, PROTOCOL_PROGRESS);
	assert_int_equal(m.done, 77);
	assert_int_equal(m.total, 0);
	m = parse("::progress image=x done=9007199254740992 total=9007199254740992");
	assert_int_equal(m.kind, PROTOCOL_PROGRESS);
	/* what a node must not get away with */
	static const char *const bad[] = {
	    "::progress image=x done=1",			 /* a key missing */
	    "::progress image=x done=1 total=2 done=1",		 /* twice */
	    "::progress image=x done=3 total=2",		 /* more than all */
	    "::progress image=x done=-1 total=2",		 /* not a count */
	    "::progress image=x done=01 total=2",		 /* leading zero */
	    "::progress image=x done=1 total=9007199254740993",	 /* past 2^53 */
	    "::progress image=x done=1 total=99999999999999999", /* 17 digits */
	    "::progress image=x done=1 total=2 ",		 /* a trailing blank */
	    "::progress image=x  done=1 total=2",		 /* two blanks */
	    "::progress image= done=1 total=2",			 /* no image */
	    "::progress image=a\x1b[2J done=1 total=2",		 /* an escape */
	    "::progress image=x done=1 total=2 rate=9",		 /* an unknown key */
	    "::progress image=x done=1 total=2x",
	    "::progress image=x done total=2",
	};
	size_t i;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse(bad[i]);
		if (m.kind != PROTOCOL_MALFORMED)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(m.error);
	}
	{
		/* a reference of 513 characters is refused, one of 512 taken */
		char line[700];
		int n = snprintf(line, sizeof(line), "::progress image=");
		memset(line + n, 'a', 512);
		strcpy(line + n + 512, " done=0 total=0");
		assert_int_equal(parse(line).kind, PROTOCOL_PROGRESS);
		memset(line + n, 'a', 513);
		strcpy(line + n + 513, " done=0 total=0");
		assert_int_equal(parse(line).kind, PROTOCOL_MALFORMED);
	}
	m = parse("::progress");
	assert_int_equal(m.kind, PROTOCOL_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_and_secret),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_other_lines),
	    cmocka_unit_test(test_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
