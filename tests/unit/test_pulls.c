/*
 * Unit tests for pulls.c: the image pulls of a run's nodes as their
 * EVENT_PROGRESS events tell them (bytes, rate over the last seconds, time
 * left, what is in flight), and the bounds that keep a node from making it
 * grow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "pulls.h"
#include "util.h"

static const struct pull_image *feed(struct pulls *p, size_t node, const char *ref, uint64_t done,
				     uint64_t total, uint64_t at)
{
	struct event *ev = event_new(EVENT_PROGRESS, node);
	const struct pull_image *im;

	ev->role = xstrdup("images-init");
	ev->text = xstrdup(ref);
	ev->done = done;
	ev->total = total;
	ev->at_ms = at;
	im = pulls_event(p, ev);
	event_free(ev);
	return im;
}

static void step(struct pulls *p, size_t node, enum event_kind kind, uint64_t at)
{
	struct event *ev = event_new(kind, node);
	ev->at_ms = at;
	pulls_event(p, ev);
	event_free(ev);
}

static void test_rate_and_eta(void **unused)
{
	struct pulls p;
	struct pull_summary s;
	uint64_t t;

	pulls_init(&p, 2);
	assert_false(pulls_node(&p, 0, 1000, &s));
	step(&p, 0, EVENT_STEP_START, 1000);
	/* 10 MB/s for 5 s on a 100 MB image */
	for (t = 0; t <= 5; t++)
		feed(&p, 0, "registry.k8s.io/etcd:3.6.8-0", t * 10000000, 100000000,
		     1000 + t * 1000);
	assert_true(pulls_node(&p, 0, 6000, &s));
	assert_int_equal(s.in_flight, 1);
	assert_int_equal(s.done, 50000000);
	assert_int_equal(s.total, 100000000);
	assert_true(s.total_known);
	assert_int_equal(s.rate, 10000000);
	assert_int_equal(s.eta_ms, 5000);
	assert_string_equal(s.image->ref, "registry.k8s.io/etcd:3.6.8-0");
	/* a second image in flight, its total not known yet */
	feed(&p, 0, "registry.k8s.io/pause:3.10.2", 0, 0, 6100);
	assert_true(pulls_node(&p, 0, 6100, &s));
	assert_int_equal(s.in_flight, 2);
	assert_false(s.total_known);
	assert_int_equal(s.eta_ms, -1);
	assert_string_equal(s.image->ref, "registry.k8s.io/pause:3.10.2");
	/* the first completes: counted done, not in flight */
	feed(&p, 0, "registry.k8s.io/etcd:3.6.8-0", 100000000, 100000000, 7000);
	feed(&p, 0, "registry.k8s.io/pause:3.10.2", 300000, 300000, 7000);
	assert_true(pulls_node(&p, 0, 7000, &s));
	assert_int_equal(s.in_flight, 0);
	assert_int_equal(s.finished, 2);
	/* silent for longer than the window: the rate is not what it was */
	feed(&p, 0, "registry.k8s.io/kube-proxy:v1.36.4", 1000, 30000000, 8000);
	assert_true(pulls_node(&p, 0, 8000 + PULLS_RATE_WINDOW_MS + 1, &s));
	assert_int_equal(s.rate, 0);
	/* the step ends: nothing in flight any more; the other node never pulled */
	step(&p, 0, EVENT_STEP_END, 20000);
	assert_false(pulls_node(&p, 0, 20000, &s));
	assert_false(pulls_node(&p, 1, 20000, &s));
	assert_false(pulls_node(&p, 7, 20000, &s));
	pulls_release(&p);
}

/* The rate is the recent one: a slow start does not drag it down for ever. */
static void test_rate_window(void **unused)
{
	struct pulls p;
	struct pull_summary s;
	uint64_t t, done = 0;

	pulls_init(&p, 1);
	for (t = 0; t < 30; t++) {
		done += t < 10 ? 1000000 : 20000000; /* 1 MB/s, then 20 MB/s */
		feed(&p, 0, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", done, 2000000000,
		     t * 1000);
	}
	assert_true(pulls_node(&p, 0, 29000, &s));
	assert_int_equal(s.rate, 20000000);
	pulls_release(&p);
}

/* A node that names more images than any role asks for is not followed past the bound. */
static void test_bounds(void **unused)
{
	struct pulls p;
	struct pull_summary s;
	char ref[64];
	int i;

	pulls_init(&p, 1);
	for (i = 0; i < PULLS_IMAGES_MAX + 10; i++) {
		snprintf(ref, sizeof(ref), "reg.io/x%d:1", i);
		if (i < PULLS_IMAGES_MAX)
			assert_non_null(feed(&p, 0, ref, 1, 2, 1000));
		else
			assert_null(feed(&p, 0, ref, 1, 2, 1000));
	}
	assert_true(pulls_node(&p, 0, 1000, &s));
	assert_int_equal(s.in_flight, PULLS_IMAGES_MAX);
	/* an event for a node that is not there, or of another kind */
	assert_null(feed(&p, 3, "reg.io/x:1", 1, 2, 1000));
	pulls_release(&p);
}

static void test_bytes(void **unused)
{
	char b[32];

	pulls_bytes(b, sizeof(b), 512);
	assert_string_equal(b, "512 B");
	pulls_bytes(b, sizeof(b), 950000);
	assert_string_equal(b, "950 kB");
	pulls_bytes(b, sizeof(b), 31200000);
	assert_string_equal(b, "31.2 MB");
	pulls_bytes(b, sizeof(b), 1200000000);
	assert_string_equal(b, "1.20 GB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rate_and_eta),
	    cmocka_unit_test(test_rate_window),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
