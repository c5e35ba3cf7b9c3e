/*
 * Unit tests for certs.c: kubeadm's check-expiration tables (a recorded real
 * output in tests/validate/), openssl's notAfter line, the checks made of
 * them, and what a hostile node could print instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "certs.h"

/* 2026-08-19 09:03 UTC, the end date of the recorded leaf certificates */
#define LEAF_END ((int64_t)1787130180)

static char *load(const char *name, size_t *len)
{
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT;

	strbuf_addf(&path, "tests/validate/%s", name);
	if (read_file(path.buf, &text) < 0)
		fail_msg("cannot read %s", path.buf);
	strbuf_release(&path);
	return strbuf_detach(&text, len);
}

static const struct check *find(const struct validation *v, const char *id)
{
	size_t i;
	for (i = 0; i < v->nr; i++)
		if (!strcmp(v->items[i].id, id))
			return &v->items[i];
	fail_msg("no check %s", id);
	return NULL;
}

static void test_kubeadm_table(void **state)
{
	struct cert_list l;
	struct error err = {0};
	size_t len, i, ncas = 0;
	char *text = load("kubeadm-check-expiration.txt", &len);

	(void)state;
	assert_int_equal(certs_parse_kubeadm(&l, text, len, &err), 0);
	assert_int_equal(l.nr, 14);
	for (i = 0; i < l.nr; i++)
		ncas += l.items[i].ca;
	assert_int_equal(ncas, 3);
	assert_string_equal(l.items[0].name, "admin.conf");
	assert_true(l.items[0].not_after == LEAF_END);
	assert_string_equal(l.items[10].name, "super-admin.conf");
	assert_string_equal(l.items[11].name, "ca");
	assert_true(l.items[11].ca);
	free(text);
}

static void test_checks(void **state)
{
	struct cert_list l;
	struct error err = {0};
	struct validation v = {0};
	size_t len;
	char *text = load("kubeadm-check-expiration.txt", &len);
	const struct check *c;

	(void)state;
	assert_int_equal(certs_parse_kubeadm(&l, text, len, &err), 0);
	/* a year before: clean, the first to expire named */
	validate_certs(&v, 0, &l, LEAF_END - 360 * 86400, 30);
	c = find(&v, "certificates");
	assert_int_equal(c->status, CHECK_PASS);
	assert_non_null(strstr(c->observed, "11 certificates and 3 CAs"));
	assert_non_null(strstr(c->observed, "360 days left"));
	validation_release(&v);
	/* ten days before: a warning naming each certificate with its days */
	validate_certs(&v, 0, &l, LEAF_END - 10 * 86400 - 60, 30);
	c = find(&v, "certificates");
	assert_int_equal(c->status, CHECK_WARN);
	assert_non_null(strstr(c->observed, "apiserver 10 days left"));
	assert_non_null(strstr(c->observed, "super-admin.conf 10 days left"));
	assert_null(strstr(c->observed, "etcd-ca"));
	assert_non_null(strstr(c->fix, "provision renew-certs"));
	validation_release(&v);
	/* the warning period is the inventory's */
	validate_certs(&v, 0, &l, LEAF_END - 10 * 86400 - 60, 7);
	assert_int_equal(find(&v, "certificates")->status, CHECK_PASS);
	validation_release(&v);
	/* a day after: expired fails, with the hint */
	validate_certs(&v, 0, &l, LEAF_END + 86400, 30);
	c = find(&v, "certificates");
	assert_int_equal(c->status, CHECK_FAIL);
	assert_non_null(strstr(c->observed, "apiserver expired on 2026-08-19"));
	assert_non_null(strstr(c->fix, "provision renew-certs"));
	assert_null(strstr(c->fix, "CAs"));
	validation_release(&v);
	/* years later the CAs expire too: kubeadm does not renew them */
	validate_certs(&v, 0, &l, LEAF_END + 10 * 365 * 86400LL, 30);
	c = find(&v, "certificates");
	assert_non_null(strstr(c->observed, "ca (CA) expired"));
	assert_non_null(strstr(c->fix, "does not renew CAs"));
	validation_release(&v);
	free(text);
}

static void test_missing_and_invalid(void **state)
{
	static const char text[] =
		"CERTIFICATE                EXPIRES                  RESIDUAL TIME   CERTIFICATE AUTHORITY   EXTERNALLY MANAGED\n"
		"admin.conf                 Jan 02, 2020 15:04 UTC   <invalid>       ca                      no      \n"
		"!MISSING! apiserver-etcd-client                                                                     \n"
		"\n"
		"CERTIFICATE AUTHORITY   EXPIRES                  RESIDUAL TIME   EXTERNALLY MANAGED\n"
		"ca                      Dec 31, 2029 15:04 UTC   3y              no      \n";
	struct cert_list l;
	struct error err = {0};
	struct validation v = {0};
	const struct check *c;

	(void)state;
	assert_int_equal(certs_parse_kubeadm(&l, text, sizeof(text) - 1, &err), 0);
	assert_int_equal(l.nr, 3);
	assert_true(l.items[1].missing);
	validate_certs(&v, 0, &l, 1700000000, 30);
	c = find(&v, "certificates");
	assert_int_equal(c->status, CHECK_FAIL);
	assert_non_null(strstr(c->observed, "admin.conf expired on 2020-01-02"));
	assert_non_null(strstr(c->observed, "apiserver-etcd-client missing"));
	validation_release(&v);
}

/* What a lying or broken node might print instead: each refused with the line. */
static void test_hostile(void **state)
{
	static const char *const head =
		"CERTIFICATE   EXPIRES   RESIDUAL TIME   CERTIFICATE AUTHORITY   EXTERNALLY MANAGED\n";
	static const char *const ca =
		"\nCERTIFICATE AUTHORITY   EXPIRES   RESIDUAL TIME   EXTERNALLY MANAGED\n"
		"ca   Dec 31, 2029 15:04 UTC   3y   no\n";
	static const struct {
		const char *rows, *msg;
	} cases[] = {
	    {"apiserver   Feb 30, 2026 09:03 UTC   1d   ca   no\n", "line 2: not a row"},
	    {"apiserver   Aug 19, 2026 09:03 CEST   1d   ca   no\n", "line 2: not a row"},
	    {"api\033[2Jserver   Aug 19, 2026 09:03 UTC   1d   ca   no\n", "line 2: not a certificate name"},
	    {"apiserver   Aug 19, 2026 09:03 UTC   1d   ca   maybe\n", "line 2: not a row"},
	    {"apiserver   Aug 19, 2026 09:03 UTC   1d   ca   no\n"
	     "apiserver   Aug 19, 2026 09:03 UTC   1d   ca   no\n", "line 3: 'apiserver' listed twice"},
	    {"apiserver   Aug 19, 2026 09:03 UTC   1d   ca   no   extra\n", "line 2: not a row"},
	};
	struct cert_list l;
	struct error err = {0};
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s%s%s", head, cases[i].rows, ca);
		assert_int_equal(certs_parse_kubeadm(&l, sb.buf, sb.len, &err), -1);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: '%s' has no '%s'", i, err.msg, cases[i].msg);
	}
	/* no tables at all, or only the first */
	assert_int_equal(certs_parse_kubeadm(&l, "error: boom\n", 12, &err), -1);
	assert_non_null(strstr(err.msg, "no CERTIFICATE table"));
	strbuf_reset(&sb);
	strbuf_addf(&sb, "%sapiserver   Aug 19, 2026 09:03 UTC   1d   ca   no\n", head);
	assert_int_equal(certs_parse_kubeadm(&l, sb.buf, sb.len, &err), -1);
	assert_non_null(strstr(err.msg, "no CERTIFICATE AUTHORITY table"));
	/* more rows than kept, a line too long, too much output */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, head);
	for (i = 0; i < CERTS_MAX + 1; i++)
		strbuf_addf(&sb, "c%zu   Aug 19, 2026 09:03 UTC   1d   ca   no\n", i);
	strbuf_addstr(&sb, ca);
	assert_int_equal(certs_parse_kubeadm(&l, sb.buf, sb.len, &err), -1);
	assert_non_null(strstr(err.msg, "more than 64 certificates"));
	strbuf_reset(&sb);
	strbuf_addstr(&sb, head);
	for (i = 0; i < 600; i++)
		strbuf_addch(&sb, 'a');
	assert_int_equal(certs_parse_kubeadm(&l, sb.buf, sb.len, &err), -1);
	assert_non_null(strstr(err.msg, "line 2: longer than"));
	strbuf_reset(&sb);
	for (i = 0; i < CERTS_TEXT_MAX + 1; i++)
		strbuf_addch(&sb, '\n');
	assert_int_equal(certs_parse_kubeadm(&l, sb.buf, sb.len, &err), -1);
	assert_non_null(strstr(err.msg, "more than"));
	strbuf_release(&sb);
}

static void test_enddate(void **state)
{
	struct error err = {0};
	struct validation v = {0};
	int64_t t = 0;
	const struct check *c;

	(void)state;
	assert_int_equal(certs_parse_enddate(&t, "notAfter=Aug 19 09:03:00 2026 GMT\n", 34, &err), 0);
	assert_true(t == LEAF_END);
	assert_int_equal(certs_parse_enddate(&t, "notAfter=Jun  1 12:00:00 2026 GMT", 33, &err), 0);
	assert_int_equal(certs_parse_enddate(&t, "notAfter=Jun 31 12:00:00 2026 GMT", 33, &err), -1);
	assert_int_equal(certs_parse_enddate(&t, "notAfter=Jun  1 12:00:00 2026 UTC", 33, &err), -1);
	assert_int_equal(certs_parse_enddate(&t, "notAfter=Jun  1 12:00:00 2026 GMT\nx", 35, &err), -1);
	assert_int_equal(certs_parse_enddate(&t, "Could not open file", 19, &err), -1);

	validate_kubelet_cert(&v, 1, false, LEAF_END, NULL, LEAF_END - 5 * 86400 - 1, 30);
	c = find(&v, "kubelet-client-cert");
	assert_int_equal(c->status, CHECK_WARN);
	assert_string_equal(c->observed, "expires 2026-08-19 (5 days left)");
	validation_release(&v);
	validate_kubelet_cert(&v, 1, false, LEAF_END, NULL, LEAF_END + 3 * 86400, 30);
	c = find(&v, "kubelet-client-cert");
	assert_int_equal(c->status, CHECK_FAIL);
	assert_string_equal(c->observed, "expires 2026-08-19 (expired 3 days ago)");
	validation_release(&v);
	validate_kubelet_cert(&v, 1, true, 0, NULL, LEAF_END, 30);
	assert_int_equal(find(&v, "kubelet-client-cert")->status, CHECK_SKIP);
	validation_release(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubeadm_table),	    cmocka_unit_test(test_checks),
		cmocka_unit_test(test_missing_and_invalid), cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_enddate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
