/* Unit tests for bench.c: the node's output parsed strictly, judged, recorded, compared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"
#include "validate.h"

/* What bench.sh prints for 2 threads, 1000 ms, 3 runs: capped at 0.5 CPU. */
static const char good[] =
    "info ctr=1.6.20~ds1\n"
    "run host 1 v=1 threads=2 ms=1000 cpu_mops=300.0 mem_mbs=9000.0 cpu_max=max\n"
    "run container 1 v=1 threads=2 ms=1000 cpu_mops=297.0 mem_mbs=8900.0 cpu_max=max\n"
    "run capped 1 v=1 threads=2 ms=1000 cpu_mops=76.0 mem_mbs=2400.0 cpu_max=50000/100000\n"
    "run host-1 1 v=1 threads=1 ms=1000 cpu_mops=150.0 mem_mbs=6000.0 cpu_max=max\n"
    "run host 2 v=1 threads=2 ms=1000 cpu_mops=310.0 mem_mbs=9100.0 cpu_max=max\n"
    "run container 2 v=1 threads=2 ms=1000 cpu_mops=305.0 mem_mbs=9050.0 cpu_max=max\n"
    "run capped 2 v=1 threads=2 ms=1000 cpu_mops=74.0 mem_mbs=2300.0 cpu_max=50000/100000\n"
    "run host-1 2 v=1 threads=1 ms=1000 cpu_mops=152.0 mem_mbs=6100.0 cpu_max=max\n"
    "run host 3 v=1 threads=2 ms=1000 cpu_mops=100.0 mem_mbs=9050.0 cpu_max=max\n"
    "run container 3 v=1 threads=2 ms=1000 cpu_mops=299.0 mem_mbs=9000.0 cpu_max=max\n"
    "run capped 3 v=1 threads=2 ms=1000 cpu_mops=75.0 mem_mbs=2350.0 cpu_max=50000/100000\n"
    "run host-1 3 v=1 threads=1 ms=1000 cpu_mops=148.0 mem_mbs=6050.0 cpu_max=max\n"
    "end\n";

static void parse_ok(struct bench_node *b, const char *text)
{
	struct error err = {0};

	memset(b, 0, sizeof(*b));
	b->limit_cpus = 0.5;
	if (bench_parse(b, text, strlen(text), 2, 1000, 3, &err) < 0)
		fail_msg("bench_parse: %s", err.msg);
}

static void test_parse_medians(void **state)
{
	struct bench_node b;

	(void)state;
	parse_ok(&b, good);
	assert_true(b.ran);
	/* the median, not the mean: run 3's slow host figure does not count */
	assert_true(b.cpu_med[BENCH_HOST] == 300.0);
	assert_true(b.cpu_med[BENCH_CONTAINER] == 299.0);
	assert_true(b.cpu_med[BENCH_CAPPED] == 75.0);
	assert_true(b.cpu_med[BENCH_HOST1] == 150.0);
	assert_true(b.mem_med[BENCH_HOST] == 9050.0);
	assert_string_equal(b.cpu_max[BENCH_CAPPED], "50000/100000");
	assert_string_equal(b.ctr_version, "1.6.20~ds1");
	assert_true(b.limit_cpus == 0.5);
	bench_node_release(&b);
}

/* Each malformed output fails the whole node with a reason naming the line. */
static void test_parse_refuses(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
	    {"run host 1 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\n",
	     "ended before its 'end'"},
	    {"hello\nend\n", "line 1 is not of the bench protocol"},
	    {"run host 1 v=1 threads=3 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "threads is not 2"},
	    {"run host 1 v=1 threads=2 ms=999 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "ms is not 1000"},
	    {"run host 1 v=1 threads=2 ms=1000 cpu_mops=1e9 mem_mbs=1.0 cpu_max=max\nend\n",
	     "not a number"},
	    {"run host 1 v=1 threads=2 ms=1000 cpu_mops=-1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "not a number"},
	    {"run host 1 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=$(reboot)\nend\n",
	     "cpu_max"},
	    {"run host 2 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "run 2 of host came after run 0"},
	    {"run host 4 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "no known variant or repeat"},
	    {"run gpu 1 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "no known variant"},
	    {"run host 1 v=2 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max\nend\n",
	     "workload version"},
	    {"run host 1 v=1 threads=2 ms=1000 cpu_mops=1.0 mem_mbs=1.0 cpu_max=max extra=1\nend\n",
	     "not 6"},
	    {"end\nend\n", "output after 'end'"},
	    {"end\n", "host: 0 runs, not 3"},
	    {"fail nowhere because\nend\n", "no known variant"},
	    {"fail host\nend\n", "without its reason"},
	    {"info ctr=1.6;rm\nend\n", "not of the bench protocol"},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct bench_node b = {0};
		struct error err = {0};
		if (bench_parse(&b, cases[i].text, strlen(cases[i].text), 2, 1000, 3, &err) == 0)
			fail_msg("case %zu parsed: %s", i, cases[i].text);
		if (!strstr(err.msg, cases[i].want))
			fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].want);
		assert_false(b.ran);
		assert_non_null(b.error);
		bench_node_release(&b);
	}
}

static void test_parse_bounds_and_escapes(void **state)
{
	struct bench_node b = {0};
	struct error err = {0};
	struct strbuf big = STRBUF_INIT;
	const char esc[] = "fail container \x1b]0;owned\x07 no\x1b[2J way\nfail host x\nend\n";
	size_t i;

	(void)state;
	for (i = 0; i < BENCH_OUTPUT_MAX / 8 + 1; i++)
		strbuf_addstr(&big, "xxxxxxx\n");
	assert_int_equal(bench_parse(&b, big.buf, big.len, 2, 1000, 3, &err), -1);
	assert_non_null(strstr(err.msg, "more than"));
	bench_node_release(&b);
	strbuf_release(&big);
	/* a reason is kept cleaned of escape sequences: it reaches terminals and records */
	assert_int_equal(bench_parse(&b, esc, sizeof(esc) - 1, 2, 1000, 3, &err), 0);
	assert_null(strchr(b.fail[BENCH_CONTAINER], '\x1b'));
	assert_null(strchr(b.fail[BENCH_CONTAINER], '\x07'));
	bench_node_release(&b);
	/* a long reason is cut at a character, not inside one (JSON would refuse it) */
	strbuf_addstr(&big, "fail container x");
	for (i = 0; i < 200; i++)
		strbuf_addstr(&big, "\xc3\xa9"); /* é */
	strbuf_addstr(&big, "\nfail host x\nend\n");
	assert_int_equal(bench_parse(&b, big.buf, big.len, 2, 1000, 3, &err), 0);
	assert_null(text_unsafe(b.fail[BENCH_CONTAINER], strlen(b.fail[BENCH_CONTAINER])));
	bench_node_release(&b);
	strbuf_release(&big);
}

static const struct check *find(const struct validation *v, const char *id)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		if (!strcmp(v->items[i].id, id))
			return &v->items[i];
	return NULL;
}

static void test_judge(void **state)
{
	struct validation v = {0};
	struct bench_node b;
	const struct check *c;

	(void)state;
	parse_ok(&b, good);
	bench_judge(&v, 0, &b, 0);
	c = find(&v, "bench-cpu");
	assert_non_null(c);
	assert_int_equal(c->status, CHECK_PASS);
	/* 299/300, the limit's prediction 0.5 x 150 = 75 */
	assert_non_null(strstr(c->observed, "container 299.0 (1.00)"));
	assert_non_null(strstr(c->observed, "predicted 75.0 from 1 thread 150.0"));
	assert_int_equal(find(&v, "bench-memory")->status, CHECK_PASS);
	assert_null(find(&v, "bench-gpu"));
	validation_release(&v);

	/* a container at 0.90 of the host fails, with a likely cause */
	b.cpu_med[BENCH_CONTAINER] = 270.0;
	bench_judge(&v, 0, &b, 0);
	c = find(&v, "bench-cpu");
	assert_int_equal(c->status, CHECK_FAIL);
	assert_non_null(strstr(c->observed, "(0.90)"));
	assert_non_null(strstr(c->fix, "likely"));
	validation_release(&v);

	/* a quota on the unlimited container is named as the cause */
	strcpy(b.cpu_max[BENCH_CONTAINER], "20000/100000");
	bench_judge(&v, 0, &b, 0);
	assert_non_null(strstr(find(&v, "bench-cpu")->fix, "20000/100000"));
	validation_release(&v);

	/* a limit that did not act (capped as fast as the host): a warning */
	b.cpu_med[BENCH_CONTAINER] = 299.0;
	b.cpu_med[BENCH_CAPPED] = 290.0;
	bench_judge(&v, 0, &b, 0);
	assert_int_equal(find(&v, "bench-cpu")->status, CHECK_WARN);
	validation_release(&v);

	/* no container at all: the node fails, saying why */
	b.fail[BENCH_CONTAINER] = xstrdup("ctr is not installed");
	bench_judge(&v, 0, &b, 0);
	c = find(&v, "bench-cpu");
	assert_int_equal(c->status, CHECK_FAIL);
	assert_non_null(strstr(c->observed, "ctr is not installed"));
	validation_release(&v);
	bench_node_release(&b);

	/* a node whose bench did not run */
	b.error = xstrdup("the node printed more than 65536 bytes");
	bench_judge(&v, 3, &b, 0);
	assert_int_equal(v.nr, 1);
	assert_int_equal(v.items[0].node, 3);
	assert_int_equal(v.items[0].status, CHECK_FAIL);
	validation_release(&v);
	bench_node_release(&b);
}

static void test_gpu(void **state)
{
	static const char text[] =
	    "run host 1 v=1 threads=2 ms=1000 cpu_mops=300.0 mem_mbs=9000.0 cpu_max=max\n"
	    "fail container ctr is not installed\n"
	    "run host-1 1 v=1 threads=1 ms=1000 cpu_mops=150.0 mem_mbs=6000.0 cpu_max=max\n"
	    "fail capped no container\n"
	    "gpu nvidia-smi ms=12.5 gpus=2\n"
	    "end\n";
	struct validation v = {0};
	struct bench_node b = {0};
	struct error err = {0};
	const struct check *c;

	(void)state;
	assert_int_equal(bench_parse(&b, text, sizeof(text) - 1, 2, 1000, 1, &err), 0);
	assert_true(b.gpu);
	bench_judge(&v, 0, &b, 2);
	c = find(&v, "bench-gpu");
	assert_int_equal(c->status, CHECK_PASS);
	assert_non_null(strstr(c->observed, "no CUDA kernel"));
	validation_release(&v);
	bench_judge(&v, 0, &b, 3);
	assert_int_equal(find(&v, "bench-gpu")->status, CHECK_FAIL);
	validation_release(&v);
	bench_node_release(&b);
}

static void test_values_limit(void **state)
{
	(void)state;
	/* as roles/jupyterhub's values.yaml.tmpl renders the profiles */
	assert_int_equal(bench_values_limit_milli("    - display_name: \"CPU only\"\n"
						  "      kubespawner_override:\n"
						  "        cpu_guarantee: 1.0\n"
						  "        cpu_limit: 1.5\n"
						  "    - display_name: \"1x RTX 3070\"\n"
						  "      kubespawner_override:\n"
						  "        cpu_guarantee: 0.67\n"
						  "        cpu_limit: 1.0\n"),
			 670);
	assert_int_equal(bench_values_limit_milli("cpu_guarantee: x\ncpu_guarantee: 0.01\n"), 0);
	assert_int_equal(bench_values_limit_milli(""), 0);
}

static void test_record_and_diff(void **state)
{
	struct bench_node b;
	struct strbuf a = STRBUF_INIT, z = STRBUF_INIT, d = STRBUF_INIT;

	(void)state;
	parse_ok(&b, good);
	bench_record(&a, &b);
	assert_non_null(strstr(a.buf, "workload v1 threads=2 ms=1000 repeat=3\n"));
	assert_non_null(strstr(a.buf, "cpu_mops.host 300.0\n"));
	assert_non_null(strstr(a.buf, "cpu_mops.capped 75.0\n"));
	assert_non_null(strstr(a.buf, "mem_mbs.host-1 6050.0\n"));
	assert_non_null(strstr(a.buf, "cpu_max.capped 50000/100000\n"));
	assert_non_null(strstr(a.buf, "cpu_max.container max\n"));
	/* a driver upgrade that cost 10 % */
	b.cpu_med[BENCH_HOST] = 270.0;
	bench_record(&z, &b);
	bench_diff(&d, a.buf, z.buf, "  ");
	assert_string_equal(d.buf, "  ! bench cpu_mops.host: 300.0 -> 270.0 (-10.0 %)\n");
	strbuf_reset(&d);
	bench_diff(&d, a.buf, a.buf, "  ");
	assert_int_equal(d.len, 0);
	/* another workload: not compared */
	strbuf_reset(&z);
	b.threads = 4;
	bench_record(&z, &b);
	bench_diff(&d, a.buf, z.buf, "  ");
	assert_non_null(strstr(d.buf, "another workload"));
	strbuf_reset(&d);
	bench_diff(&d, "", a.buf, "  ");
	assert_non_null(strstr(d.buf, "first figures"));
	/* a record edited by hand: a key longer than any of provision's is left alone */
	strbuf_reset(&d);
	strbuf_reset(&z);
	strbuf_addstr(&z, a.buf);
	strbuf_addf(&z, "%0100d 1.0\n", 7);
	bench_diff(&d, z.buf, z.buf, "  ");
	bench_diff(&d, a.buf, z.buf, "  ");
	assert_null(strstr(d.buf, "0000000"));
	bench_node_release(&b);
	strbuf_release(&a);
	strbuf_release(&z);
	strbuf_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_medians),
	    cmocka_unit_test(test_parse_refuses),
	    cmocka_unit_test(test_parse_bounds_and_escapes),
	    cmocka_unit_test(test_judge),
	    cmocka_unit_test(test_gpu),
	    cmocka_unit_test(test_values_limit),
	    cmocka_unit_test(test_record_and_diff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
