/* eta: see eta.h.  Reads the record through state.h; no libgit2 here. */
#include "eta.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_files.h"

#define ETA_MAX_RUNS 9
/* How far back the record is searched for the machine a node was (eta_machine). */
#define ETA_MACHINE_RUNS 64

/*
 * Samples are keyed "SCOPE\tROLE\tSTEP\tCLASS": SCOPE is "n:NODE", "k:KIND"
 * or "*" (any node); CLASS is
 *   "k"  the step's first check: the whole step when it found nothing to do
 *        (unchanged, skipped), the check's share when it did work and the
 *        record says (timings' 5th field);
 *   "a"  the rest of a step that did work: apply and the check after it;
 *   "c"  the whole of a step that did work (changed, failed): for records
 *        that do not split check from apply;
 *   "*"  any.
 * A step is expected to do work (check + apply) when its node never ran
 * it, when the node's newest run of it did not leave it converged (it
 * failed), when it did work in the node's last two runs of it (a step that
 * changes every time), or when an earlier step of its role is expected to
 * do work (what it depends on changes); else only its check runs.  So the
 * no-change run after a first run is estimated from the first run's check
 * times, and a run of other phases in between changes nothing of that.  Collected as a flat list, then sorted and grouped: loading is
 * O(n log n) and a lookup is a binary search, whatever the number of nodes.
 */
struct eta_sample {
	char *key;
	int64_t ms;
};

struct eta_key {
	char *key;
	int64_t median;
};

/*
 * A node's steps: every step its runs read ran, each as the newest run
 * that ran it left it, and the coming run's steps (seq) among them.
 */
struct eta_plan {
	char *node;
	char **steps;	 /* "role\tstep" */
	char *last;	 /* its result then: 'u' no work, 'c' changed, 'f' failed; 'n' never ran */
	bool *again;	 /* it did work in the run of the node before that too */
	unsigned *age;	 /* which run of the node ran it last: 0 the newest */
	unsigned *seen;	 /* in how many runs of the node (counted to 2) */
	bool *work;	 /* it is expected to do work (check + apply): eta_settle() */
	int64_t *expect; /* its duration as the run now expects it (eta_expect); -1 none */
	size_t nr, alloc;
	size_t *seq; /* the coming run's steps, in order: indices into steps */
	size_t nr_seq;
	unsigned runs; /* runs of the node read */
	bool other;    /* another machine than the record saw (eta_machine) */
};

/* What the time outside the nodes' steps was, in runs that did work and in runs that did not. */
struct eta_overhead {
	int64_t *ms;
	double *ratio; /* ms / the slowest node's steps */
	char **phases; /* the run's phases, as its summary says ("" not said) */
	size_t nr, alloc;
};

struct eta {
	struct eta_sample *samples;
	size_t nr_samples, alloc_samples;
	struct eta_key *keys;
	size_t nr;
	struct eta_plan *plans;
	size_t nr_plans, alloc_plans;
	char **nodes, **kinds; /* the inventory's, sorted by node */
	char **machines;       /* nodes[i]'s machine-id in the newest run that ran it, or NULL */
	bool *met;	       /* eta_machine was told nodes[i]'s machine (once counts) */
	size_t nr_nodes;
	struct eta_overhead overhead[2]; /* [0] runs that changed nothing, [1] the others */
	size_t runs;
	int64_t overhead_median[2];
	double overhead_ratio[2];
	/*
	 * The pulls (nodes/NODE/pulls): each image's bytes as last pulled, and
	 * bytes per millisecond of each pull step ("rate" samples of eta_sample,
	 * stored as bytes per second in ms), per node, kind and any.
	 */
	char **image_refs;
	uint64_t *image_bytes;
	size_t nr_images, alloc_images;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, size_t n)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median_d(double *v, size_t n)
{
	size_t i, j;

	if (!n)
		return -1;
	for (i = 1; i < n; i++) /* few runs: insertion sort */
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *eta_kind(const struct eta *e, const char *node)
{
	size_t i;

	for (i = 0; i < e->nr_nodes; i++)
		if (!strcmp(e->nodes[i], node))
			return e->kinds[i];
	return NULL;
}

static void eta_sample(struct eta *e, const char *scope, const char *role, const char *step,
		       const char *cls, int64_t ms)
{
	ALLOC_GROW(e->samples, e->nr_samples + 1, e->alloc_samples);
	e->samples[e->nr_samples].key = xasprintf("%s\t%s\t%s\t%s", scope, role, step, cls);
	e->samples[e->nr_samples++].ms = ms;
}

static struct eta_plan *eta_plan_of(const struct eta *e, const char *node)
{
	size_t i;

	for (i = 0; i < e->nr_plans; i++)
		if (!strcmp(e->plans[i].node, node))
			return &e->plans[i];
	return NULL;
}

static struct eta_plan *eta_plan_new(struct eta *e, const char *node)
{
	struct eta_plan *plan;

	ALLOC_GROW(e->plans, e->nr_plans + 1, e->alloc_plans);
	plan = &e->plans[e->nr_plans++];
	memset(plan, 0, sizeof(*plan));
	plan->node = xstrdup(node);
	return plan;
}

/* The index of step rs ("role\tstep") in the plan, looked for from hint on; nr if none. */
static size_t eta_step_of(const struct eta_plan *plan, const char *rs, size_t hint)
{
	size_t i, k;

	for (k = 0; k < plan->nr; k++) {
		i = (hint + k) % plan->nr;
		if (!strcmp(plan->steps[i], rs))
			return i;
	}
	return plan->nr;
}

static size_t eta_step_add(struct eta_plan *plan, const char *rs, char last, unsigned age)
{
	size_t i = plan->nr;

	ALLOC_GROW(plan->steps, plan->nr + 1, plan->alloc);
	plan->last = xrealloc(plan->last, plan->alloc);
	plan->again = xrealloc(plan->again, plan->alloc * sizeof(bool));
	plan->age = xrealloc(plan->age, plan->alloc * sizeof(unsigned));
	plan->seen = xrealloc(plan->seen, plan->alloc * sizeof(unsigned));
	if (plan->expect)
		plan->expect = xrealloc(plan->expect, plan->alloc * sizeof(int64_t));
	plan->steps[i] = xstrdup(rs);
	plan->last[i] = last;
	plan->again[i] = false;
	plan->age[i] = age;
	plan->seen[i] = last == 'n' ? 0 : 1;
	if (plan->expect)
		plan->expect[i] = -1;
	plan->nr++;
	return i;
}

/* Steps a and b ("role\tstep") are of the same role. */
static bool eta_same_role(const char *a, const char *b)
{
	size_t rl = strcspn(a, "\t");

	return !strncmp(a, b, rl) && (b[rl] == '\t' || !b[rl]);
}

/*
 * Which steps of a node are expected to do work: those it never ran, those
 * that failed last time, those that changed in its last two runs of them
 * (they change every time), those the run learnt a duration of
 * (eta_expect), every step of another machine (eta_machine), and in the
 * coming run the steps of a role after one of those (what they depend on
 * changes).  A step that changed once was left converged: its check after
 * apply passed.
 */
static void eta_settle(struct eta_plan *plan)
{
	size_t i;

	free(plan->work);
	plan->work = xcalloc(plan->nr ? plan->nr : 1, sizeof(bool));
	for (i = 0; i < plan->nr; i++)
		plan->work[i] = plan->other || plan->last[i] == 'n' || plan->last[i] == 'f' ||
				(plan->last[i] == 'c' && plan->again[i]) ||
				(plan->expect && plan->expect[i] >= 0);
	for (i = 1; i < plan->nr_seq; i++)
		if (plan->work[plan->seq[i - 1]] &&
		    eta_same_role(plan->steps[plan->seq[i - 1]], plan->steps[plan->seq[i]]))
			plan->work[plan->seq[i]] = true;
}

/* Without eta_run_steps, the coming run is the steps of the node's newest run. */
static void eta_seq_newest(struct eta_plan *plan)
{
	size_t i;

	free(plan->seq);
	plan->seq = xcalloc(plan->nr ? plan->nr : 1, sizeof(size_t));
	plan->nr_seq = 0;
	for (i = 0; i < plan->nr; i++)
		if (plan->age[i] == 0)
			plan->seq[plan->nr_seq++] = i;
}

/*
 * A step of the node's run number `age` (0: its newest): the first run
 * that has it says how it was left, the second whether it did work again.
 */
static void eta_learn_step(struct eta_plan *plan, const char *role, const char *step,
			   const char *result, bool work, unsigned age, size_t *hint)
{
	char *rs = xasprintf("%s\t%s", role, step);
	size_t i = eta_step_of(plan, rs, *hint);

	if (i == plan->nr)
		i = eta_step_add(plan, rs,
				 !work			     ? 'u'
				 : !strcmp(result, "failed") ? 'f'
							     : 'c',
				 age);
	else if (plan->seen[i] == 1 && plan->age[i] != age) {
		plan->again[i] = work;
		plan->seen[i] = 2;
	}
	*hint = i + 1;
	free(rs);
}

/* Learn from one run (newest first): the timings of each node it ran. */
static void eta_learn(struct eta *e, struct state *s, const char *id, const char *ran,
		      const char *phases, int64_t elapsed)
{
	const char *p = ran;
	int64_t slowest = 0;
	bool changed = false;

	while (*p) {
		size_t len = strcspn(p, " ");
		char *node = xstrndup(p, len), *path = record_node_path(node, RECORD_TIMINGS);
		char *scope_n = xasprintf("n:%s", node), *scope_k = NULL;
		struct strbuf t = STRBUF_INIT;
		const char *kind = eta_kind(e, node);
		struct eta_plan *plan = eta_plan_of(e, node);
		unsigned age;
		size_t hint = 0;
		int64_t sum = 0;

		if (kind)
			scope_k = xasprintf("k:%s", kind);
		if (!plan)
			plan = eta_plan_new(e, node);
		age = plan->runs++;
		if (state_read(s, id, path, &t, NULL) == 0) {
			struct record_timing *tm = NULL;
			size_t nr = record_timings_parse(t.buf, &tm), k;
			for (k = 0; k < nr; k++) {
				const char *role = tm[k].role, *step = tm[k].step,
					   *res = tm[k].result;
				int64_t ms = tm[k].ms, check = tm[k].check_ms;
				bool work = strcmp(res, "unchanged") && strcmp(res, "skipped") &&
					    strcmp(res, "ok");
				const char *scopes[3] = {scope_n, scope_k, "*"};
				size_t si;

				sum += ms;
				changed = changed || work;
				if (check > ms)
					check = ms;
				for (si = 0; si < 3; si++) {
					if (!scopes[si])
						continue;
					eta_sample(e, scopes[si], role, step, "*", ms);
					/* not a role's step (facts): it never does work */
					if (!strcmp(res, "ok"))
						eta_sample(e, scopes[si], role, step, "o", ms);
					if (!work) {
						eta_sample(e, scopes[si], role, step, "k", ms);
						continue;
					}
					eta_sample(e, scopes[si], role, step, "c", ms);
					if (check >= 0) {
						eta_sample(e, scopes[si], role, step, "k", check);
						eta_sample(e, scopes[si], role, step, "a",
							   ms - check);
					}
				}
				eta_learn_step(plan, role, step, res, work, age, &hint);
			}
			record_timings_free(tm, nr);
		}
		if (sum > slowest)
			slowest = sum;
		strbuf_release(&t);
		free(path);
		free(node);
		free(scope_n);
		free(scope_k);
		p += len;
		while (*p == ' ')
			p++;
	}
	if (elapsed >= slowest) {
		struct eta_overhead *o = &e->overhead[changed];
		ALLOC_GROW(o->ms, o->nr + 1, o->alloc);
		o->ratio = xrealloc(o->ratio, o->alloc * sizeof(double));
		o->phases = xrealloc(o->phases, o->alloc * sizeof(char *));
		o->ms[o->nr] = elapsed - slowest;
		o->phases[o->nr] = xstrdup(phases ? phases : "");
		o->ratio[o->nr++] = slowest ? (double)(elapsed - slowest) / (double)slowest : 0;
	}
}

static int cmp_sample(const void *a, const void *b)
{
	const struct eta_sample *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : cmp_i64(&x->ms, &y->ms);
}

/* Sort the samples and keep one median per key. */
static void eta_group(struct eta *e)
{
	size_t i = 0, j, k;
	int64_t *v;

	if (!e->nr_samples)
		return;
	qsort(e->samples, e->nr_samples, sizeof(*e->samples), cmp_sample);
	e->keys = xcalloc(e->nr_samples, sizeof(*e->keys));
	v = xcalloc(e->nr_samples, sizeof(*v));
	while (i < e->nr_samples) {
		for (j = i; j < e->nr_samples && !strcmp(e->samples[j].key, e->samples[i].key); j++)
			v[j - i] = e->samples[j].ms;
		e->keys[e->nr].key = e->samples[i].key;
		e->keys[e->nr++].median = median(v, j - i);
		for (k = i + 1; k < j; k++)
			free(e->samples[k].key);
		i = j;
	}
	free(v);
	free(e->samples);
	e->samples = NULL;
	e->nr_samples = 0;
}

/*
 * The pulls of one run (newest first): each image's size (the newest
 * seen), and per node the rate of its pull steps -- the bytes its images
 * of a role took over that role's pull step's time (timings), as a sample
 * "rate" of role/step in bytes per second (its "ms" field).
 */
static void eta_learn_pulls(struct eta *e, struct state *s, const char *id, const char *ran)
{
	const char *p = ran;

	while (*p) {
		size_t len = strcspn(p, " ");
		char *node = xstrndup(p, len), *path = record_node_path(node, RECORD_PULLS);
		struct strbuf pulls = STRBUF_INIT, timings = STRBUF_INIT;
		const char *kind = eta_kind(e, node);

		if (state_read(s, id, path, &pulls, NULL) == 0 && pulls.len) {
			char *tpath = record_node_path(node, RECORD_TIMINGS);
			struct record_pull *pl = NULL;
			struct record_timing *tm = NULL;
			size_t npl = record_pulls_parse(pulls.buf, &pl), ntm, i;
			/* per role: bytes of its done pulls */
			const char *roles[8] = {NULL};
			uint64_t bytes[8] = {0};
			size_t nroles = 0, r, k;

			(void)state_read(s, id, tpath, &timings, NULL);
			free(tpath);
			ntm = record_timings_parse(timings.buf, &tm);
			for (i = 0; i < npl; i++) {
				if (!pl[i].done)
					continue;
				for (k = 0; k < e->nr_images && strcmp(e->image_refs[k], pl[i].ref);
				     k++)
					;
				if (k == e->nr_images) {
					ALLOC_GROW(e->image_refs, e->nr_images + 1,
						   e->alloc_images);
					e->image_bytes = xrealloc(
					    e->image_bytes, e->alloc_images * sizeof(uint64_t));
					e->image_refs[e->nr_images] = xstrdup(pl[i].ref);
					e->image_bytes[e->nr_images++] = pl[i].bytes;
				}
				for (r = 0; r < nroles && strcmp(roles[r], pl[i].role); r++)
					;
				if (r == nroles && nroles < 8)
					roles[nroles++] = pl[i].role;
				if (r < 8)
					bytes[r] += pl[i].bytes;
			}
			/* each role's pull step: the timings line of that role that took longest */
			for (r = 0; r < nroles; r++) {
				int64_t ms = 0;
				for (i = 0; i < ntm; i++) {
					/* a step that pulled in this run (a file of an
					 * earlier run lies under a run that wrote none) */
					if (!strcmp(tm[i].role, roles[r]) && tm[i].ms > ms &&
					    strlen(tm[i].step) < 64 &&
					    strncmp(tm[i].step, "import", 6) &&
					    !strncmp(tm[i].result, "changed", 7))
						ms = tm[i].ms;
				}
				if (ms > 0 && bytes[r]) {
					const char *scopes[3] = {NULL, NULL, "*"};
					char *sn = xasprintf("n:%s", node),
					     *sk = kind ? xasprintf("k:%s", kind) : NULL;
					size_t si;
					scopes[0] = sn;
					scopes[1] = sk;
					for (si = 0; si < 3; si++)
						if (scopes[si])
							eta_sample(e, scopes[si], "pull", "rate",
								   "r",
								   (int64_t)(bytes[r] * 1000 /
									     (uint64_t)ms));
					free(sn);
					free(sk);
				}
			}
			record_pulls_free(pl, npl);
			record_timings_free(tm, ntm);
		}
		strbuf_release(&pulls);
		strbuf_release(&timings);
		free(path);
		free(node);
		p += len;
		while (*p == ' ')
			p++;
	}
}

/*
 * Which machine each node was when the record last saw it: the facts of
 * the newest run of any command that ran it (a `check` after the last `up`
 * counts: it met the machine too).  Called for each run, newest first, with
 * the nodes it ran; at most ETA_MACHINE_RUNS runs back.
 */
static size_t learn_machines(struct eta *e, struct state *s, const char *id, const char *ran)
{
	const char *p = ran;
	size_t found = 0;

	while (*p) {
		size_t len = strcspn(p, " "), k;
		for (k = 0; k < e->nr_nodes; k++) {
			struct strbuf text = STRBUF_INIT;
			struct facts facts;
			char *path;
			if (e->machines[k] || strlen(e->nodes[k]) != len ||
			    strncmp(p, e->nodes[k], len))
				continue;
			path = record_node_path(e->nodes[k], RECORD_FACTS);
			if (state_read(s, id, path, &text, NULL) == 0 &&
			    record_facts_parse(text.buf, text.len, &facts) == 0) {
				/* an empty machine_id names no machine */
				if (facts.machine_id && *facts.machine_id)
					e->machines[k] = xstrdup(facts.machine_id);
				facts_release(&facts);
			}
			found += e->machines[k] != NULL;
			strbuf_release(&text);
			free(path);
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	return found;
}

/*
 * The time outside the steps of earlier runs that changed nothing and of
 * the others: the medians of the runs of these phases when there are any
 * (a run's barriers depend on its passes: init alone has one, the whole up
 * five), else of every run.
 */
static void eta_overhead_of(struct eta *e, const char *phases)
{
	size_t c, i, n;

	for (c = 0; c < 2; c++) {
		const struct eta_overhead *o = &e->overhead[c];
		int64_t *ms = xcalloc(o->nr ? o->nr : 1, sizeof(*ms));
		double *ratio = xcalloc(o->nr ? o->nr : 1, sizeof(*ratio));
		for (n = i = 0; phases && i < o->nr; i++)
			if (!strcmp(o->phases[i], phases)) {
				ms[n] = o->ms[i];
				ratio[n++] = o->ratio[i];
			}
		for (i = 0; !n && i < o->nr; i++) {
			ms[i] = o->ms[i];
			ratio[i] = o->ratio[i];
		}
		if (!n)
			n = o->nr;
		e->overhead_median[c] = median(ms, n);
		e->overhead_ratio[c] = median_d(ratio, n);
		free(ms);
		free(ratio);
	}
}

struct eta *eta_load(struct state *s, const char *command, const char *const *nodes,
		     const char *const *kinds, size_t nr)
{
	struct eta *e = xcalloc(1, sizeof(*e));
	struct state_run *runs = NULL;
	size_t nr_runs = 0, i, known = 0;

	e->nr_nodes = nr;
	e->nodes = xcalloc(nr ? nr : 1, sizeof(char *));
	e->kinds = xcalloc(nr ? nr : 1, sizeof(char *));
	e->machines = xcalloc(nr ? nr : 1, sizeof(char *));
	e->met = xcalloc(nr ? nr : 1, sizeof(bool));
	for (i = 0; i < nr; i++) {
		e->nodes[i] = xstrdup(nodes[i]);
		e->kinds[i] = xstrdup(kinds[i]);
	}
	if (s && state_runs(s, &runs, &nr_runs, NULL) == 0) {
		/* One reading of each summary: the runs to learn from, the machines the nodes were.
		 */
		for (i = 0; i < nr_runs &&
			    (e->runs < ETA_MAX_RUNS || (i < ETA_MACHINE_RUNS && known < nr));
		     i++) {
			struct strbuf sum = STRBUF_INIT;
			char *cmd = NULL, *ran = NULL, *elapsed = NULL, *result = NULL;
			char *phases = NULL;
			if (state_read(s, runs[i].id, RECORD_SUMMARY, &sum, NULL) == 0) {
				cmd = state_summary_get(sum.buf, "command");
				phases = state_summary_get(sum.buf, "phases");
				ran = state_summary_get(sum.buf, "ran");
				elapsed = state_summary_get(sum.buf, "duration_ms");
				result = state_summary_get(sum.buf, "result");
			}
			/* Runs that were cut short say nothing about how long a run takes. */
			if (ran && i < ETA_MACHINE_RUNS && known < nr)
				known += learn_machines(e, s, runs[i].id, ran);
			if (e->runs < ETA_MAX_RUNS && cmd && ran && *ran && elapsed && result &&
			    !strcmp(cmd, command) &&
			    (!strcmp(result, "ok") || !strcmp(result, "failed"))) {
				eta_learn(e, s, runs[i].id, ran, phases,
					  strtoll(elapsed, NULL, 10));
				eta_learn_pulls(e, s, runs[i].id, ran);
				e->runs++;
			}
			free(cmd);
			free(ran);
			free(elapsed);
			free(result);
			free(phases);
			strbuf_release(&sum);
		}
		state_runs_free(runs, nr_runs);
	}
	eta_group(e);
	for (i = 0; i < e->nr_plans; i++) {
		eta_seq_newest(&e->plans[i]);
		eta_settle(&e->plans[i]);
	}
	eta_overhead_of(e, NULL);
	return e;
}

void eta_free(struct eta *e)
{
	size_t i, k;

	if (!e)
		return;
	for (i = 0; i < e->nr; i++)
		free(e->keys[i].key);
	free(e->keys);
	for (i = 0; i < e->nr_samples; i++)
		free(e->samples[i].key);
	free(e->samples);
	for (i = 0; i < e->nr_images; i++)
		free(e->image_refs[i]);
	free(e->image_refs);
	free(e->image_bytes);
	for (i = 0; i < e->nr_plans; i++) {
		for (k = 0; k < e->plans[i].nr; k++)
			free(e->plans[i].steps[k]);
		free(e->plans[i].expect);
		free(e->plans[i].steps);
		free(e->plans[i].last);
		free(e->plans[i].again);
		free(e->plans[i].age);
		free(e->plans[i].seen);
		free(e->plans[i].seq);
		free(e->plans[i].work);
		free(e->plans[i].node);
	}
	free(e->plans);
	for (i = 0; i < e->nr_nodes; i++) {
		free(e->nodes[i]);
		free(e->kinds[i]);
		free(e->machines[i]);
	}
	free(e->nodes);
	free(e->kinds);
	free(e->machines);
	free(e->met);
	for (i = 0; i < 2; i++) {
		for (k = 0; k < e->overhead[i].nr; k++)
			free(e->overhead[i].phases[k]);
		free(e->overhead[i].phases);
		free(e->overhead[i].ms);
		free(e->overhead[i].ratio);
	}
	free(e);
}

static int cmp_key(const void *k, const void *entry)
{
	return strcmp(k, ((const struct eta_key *)entry)->key);
}

static int64_t eta_find(const struct eta *e, const char *scope, const char *role_step,
			const char *cls)
{
	char *key = xasprintf("%s\t%s\t%s", scope, role_step, cls);
	const struct eta_key *k =
	    e->nr ? bsearch(key, e->keys, e->nr, sizeof(*e->keys), cmp_key) : NULL;

	free(key);
	return k ? k->median : -1;
}

/* The median of class cls: the node's own, else its kind's, else any node's; -1 none. */
static int64_t eta_find_scoped(const struct eta *e, const char *node, const char *role_step,
			       const char *cls)
{
	const char *kind = eta_kind(e, node);
	char *scope[3] = {xasprintf("n:%s", node), kind ? xasprintf("k:%s", kind) : NULL,
			  xstrdup("*")};
	int64_t v = -1;
	size_t i;

	for (i = 0; i < 3 && v < 0; i++)
		if (scope[i])
			v = eta_find(e, scope[i], role_step, cls);
	for (i = 0; i < 3; i++)
		free(scope[i]);
	return v;
}

/*
 * A step expected to do work: its check and its apply (or, from records
 * that do not split them, the whole of it when it did work), from the
 * node's own runs, else from nodes of its kind, else from any node; -1
 * when no node of the record ever saw it do work ("no history": its check
 * alone, what a converged node spends on it, would be 10 to 70 times too
 * little for a kubeadm init: issue 33).  A step expected to change nothing:
 * its check, else any time it took.
 */
static int64_t eta_lookup(const struct eta *e, const char *node, const char *role_step, bool work)
{
	const char *kind = eta_kind(e, node);
	char *scope[3] = {xasprintf("n:%s", node), kind ? xasprintf("k:%s", kind) : NULL,
			  xstrdup("*")};
	int64_t v = -1;
	size_t i;

	if (!work) {
		v = eta_find_scoped(e, node, role_step, "k");
		if (v < 0)
			v = eta_find_scoped(e, node, role_step, "*");
	}
	for (i = 0; work && i < 3 && v < 0; i++) {
		int64_t k, a;
		if (!scope[i])
			continue;
		k = eta_find(e, scope[i], role_step, "k");
		a = eta_find(e, scope[i], role_step, "a");
		v = k >= 0 && a >= 0 ? k + a : eta_find(e, scope[i], role_step, "c");
	}
	/* the facts, which never do work: any time they took */
	if (work && v < 0 && eta_find_scoped(e, node, role_step, "o") >= 0)
		v = eta_find_scoped(e, node, role_step, "*");
	for (i = 0; i < 3; i++)
		free(scope[i]);
	return v;
}

/* Is this step of the node expected to do work (struct eta_plan)? */
static bool eta_work(const struct eta *e, const char *node, const char *role_step)
{
	const struct eta_plan *plan = eta_plan_of(e, node);
	size_t i;

	if (!plan)
		return true; /* a new node */
	i = eta_step_of(plan, role_step, 0);
	return i == plan->nr || plan->work[i]; /* a step it did not run does work */
}

int64_t eta_step_ms(const struct eta *e, const char *node, const char *role, const char *step)
{
	char *rs;
	int64_t v;

	if (!e)
		return -1;
	rs = xasprintf("%s\t%s", role, step);
	v = eta_lookup(e, node, rs, eta_work(e, node, rs));
	free(rs);
	return v;
}

/* The newest node of this one's kind that the record has, or NULL. */
static const struct eta_plan *eta_plan_of_kind(const struct eta *e, const char *node)
{
	const char *kind = eta_kind(e, node);
	size_t i;

	for (i = 0; i < e->nr_plans && kind; i++) {
		const char *k = eta_kind(e, e->plans[i].node);
		if (e->plans[i].runs && k && !strcmp(k, kind))
			return &e->plans[i];
	}
	return NULL;
}

/*
 * The known part of a node's work (the coming run's steps: eta_run_steps,
 * else those it ran last time, else the newest node of its kind's), -1
 * when the record has no such node;
 * *unknown gets how many of those steps have no history of doing work, and
 * what (the first), the step's "role › step", to *what when non-NULL.
 */
static int64_t eta_node(const struct eta *e, const char *node, size_t *unknown, char **what)
{
	const struct eta_plan *plan = eta_plan_of(e, node);
	/* the node's own plan says what each step will do, another's only which steps */
	bool own = plan != NULL;
	int64_t sum = 0;
	size_t k;

	*unknown = 0;
	/* A node never seen: the steps of the newest node of its kind. */
	if (!plan)
		plan = eta_plan_of_kind(e, node);
	if (!plan)
		return -1;
	for (k = 0; k < plan->nr_seq; k++) {
		size_t i = plan->seq[k];
		bool work = own ? plan->work[i] : true;
		int64_t v = own && plan->expect && plan->expect[i] >= 0
				? plan->expect[i]
				: eta_lookup(e, node, plan->steps[i], work);
		if (v > 0)
			sum += v;
		if (v < 0 && work) {
			if (!*unknown && what) {
				const char *tab = strchr(plan->steps[i], '\t');
				*what = tab ? xasprintf("%.*s › %s", (int)(tab - plan->steps[i]),
							plan->steps[i], tab + 1)
					    : xstrdup(plan->steps[i]);
			}
			(*unknown)++;
		}
	}
	return sum;
}

uint64_t eta_image_bytes(const struct eta *e, const char *ref)
{
	size_t i;

	for (i = 0; e && i < e->nr_images; i++)
		if (!strcmp(e->image_refs[i], ref))
			return e->image_bytes[i];
	return 0;
}

int64_t eta_pull_ms(const struct eta *e, const char *node, uint64_t bytes)
{
	int64_t rate;

	if (!e)
		return -1;
	rate = eta_find_scoped(e, node, "pull\trate", "r"); /* bytes per second */
	if (rate <= 0)
		return -1;
	return (int64_t)(bytes * 1000 / (uint64_t)rate);
}

bool eta_expect(struct eta *e, const char *node, const char *role, const char *step, int64_t ms)
{
	struct eta_plan *plan = e ? eta_plan_of(e, node) : NULL;
	char *rs;
	size_t i;
	bool found = false;

	if (!plan)
		return false;
	rs = xasprintf("%s\t%s", role, step);
	if (!plan->expect) {
		plan->expect = xcalloc(plan->nr ? plan->nr : 1, sizeof(int64_t));
		for (i = 0; i < plan->nr; i++)
			plan->expect[i] = -1;
	}
	for (i = 0; i < plan->nr; i++)
		if (!strcmp(plan->steps[i], rs)) {
			plan->expect[i] = ms;
			plan->work[i] = true;
			found = true;
		}
	free(rs);
	return found;
}

int64_t eta_node_ms(const struct eta *e, const char *node)
{
	size_t unknown;
	int64_t v;

	if (!e)
		return -1;
	v = eta_node(e, node, &unknown, NULL);
	/* a step with no history: no estimate, rather than a tiny one */
	return unknown ? -1 : v;
}

size_t eta_unknown(const struct eta *e, const char *const *nodes, size_t nr, struct strbuf *what)
{
	size_t i, total = 0, first = 0;

	for (i = 0; e && e->runs && i < nr; i++) {
		char *step = NULL;
		size_t unknown;
		if (eta_node(e, nodes[i], &unknown, &step) < 0) {
			/* no node of its kind in the record: none of its steps is known */
			unknown = 1;
			step = xstrdup("every step (no node of its kind in the record)");
		}
		if (unknown && what && !total) {
			strbuf_addf(what, "%s on %s", step, nodes[i]);
			first = unknown;
		}
		total += unknown;
		free(step);
	}
	/* the first node's other steps count among the "more" (they were left out) */
	if (what && total > first)
		strbuf_addf(what, " and %zu more step%s", total - 1, total == 2 ? "" : "s");
	else if (what && first > 1)
		strbuf_addf(what, " and %zu more step%s there", first - 1, first == 2 ? "" : "s");
	return total;
}

int64_t eta_total_ms(const struct eta *e, const char *const *nodes, size_t nr, int forks)
{
	int64_t slowest = 0, total = 0, over;
	bool work = false;
	size_t i, k;

	if (!e || !e->runs)
		return -1;
	for (i = 0; i < nr; i++) {
		const struct eta_plan *plan = eta_plan_of(e, nodes[i]);
		size_t unknown;
		/* the known part of each node: a lower bound where steps have no history */
		int64_t v = eta_node(e, nodes[i], &unknown, NULL);
		work = work || !plan;
		for (k = 0; plan && k < plan->nr_seq; k++)
			work = work || plan->work[plan->seq[k]];
		if (v < 0)
			continue;
		total += v;
		if (v > slowest)
			slowest = v;
	}
	if (forks > 0 && total / forks > slowest)
		slowest = total / forks;
	/*
	 * The time outside the steps (connecting, the passes' barriers,
	 * validation) of earlier runs like this one, that did work or not; with
	 * none such, the other kind's in proportion to the steps' time (a run
	 * that does work waits at its barriers for work, one that does not for
	 * checks).
	 */
	over = e->overhead_median[work];
	if (over < 0 && e->overhead_ratio[!work] >= 0)
		over = (int64_t)(e->overhead_ratio[!work] * (double)slowest);
	return slowest + (over > 0 ? over : 0);
}

bool eta_machine(struct eta *e, const char *node, const char *machine_id)
{
	struct eta_plan *plan;
	size_t i;
	bool other;

	if (!e || !machine_id || !*machine_id)
		return false;
	for (i = 0; i < e->nr_nodes && strcmp(e->nodes[i], node); i++)
		;
	/* the first word counts: a node that names several machines changes nothing more */
	if (i == e->nr_nodes || e->met[i])
		return false;
	e->met[i] = true;
	other = e->machines[i] && strcmp(e->machines[i], machine_id);
	free(e->machines[i]);
	e->machines[i] = xstrdup(machine_id);
	plan = eta_plan_of(e, node);
	if (!other || !plan || !plan->runs)
		return false; /* the same machine, or one this command never ran: as estimated */
	plan->other = true;
	eta_settle(plan);
	return true;
}

/* Put step i of the plan into the coming run, once. */
static void eta_seq_add(struct eta_plan *plan, size_t i, size_t *alloc)
{
	size_t k;

	for (k = 0; k < plan->nr_seq; k++)
		if (plan->seq[k] == i)
			return;
	ALLOC_GROW(plan->seq, plan->nr_seq + 1, *alloc);
	plan->seq[plan->nr_seq++] = i;
}

/* The newest run (its age) in which PLAN ran the role of step RS; UINT_MAX: none. */
static unsigned eta_role_age(const struct eta_plan *plan, const char *rs)
{
	unsigned age = UINT_MAX;
	size_t i;

	for (i = 0; i < plan->nr; i++)
		if (plan->last[i] != 'n' && eta_same_role(rs, plan->steps[i]) && plan->age[i] < age)
			age = plan->age[i];
	return age;
}

/*
 * A role of the coming run on the node: its steps as the node's newest run
 * of it ran them (files included), else as the newest node of its kind ran
 * them (new here: they do work), then those of `steps` (the role's, from
 * role.h) that neither ran (new too).
 */
static void eta_seq_role(const struct eta *e, struct eta_plan *plan, const char *node,
			 const char *const *steps, size_t nr, size_t *alloc)
{
	const struct eta_plan *from = plan;
	unsigned age = eta_role_age(plan, steps[0]);
	size_t i, k;

	if (age == UINT_MAX) {
		/* the newest node of its kind that ran the role */
		const char *kind = eta_kind(e, node);
		from = NULL;
		for (k = 0; k < e->nr_plans && !from && kind; k++) {
			const struct eta_plan *o = &e->plans[k];
			const char *ok = eta_kind(e, o->node);
			if (o == plan || !o->runs || !ok || strcmp(ok, kind))
				continue;
			if ((age = eta_role_age(o, steps[0])) != UINT_MAX)
				from = o;
		}
	}
	for (i = 0; from && i < from->nr; i++) {
		size_t at;
		if (from->last[i] == 'n' || from->age[i] != age ||
		    !eta_same_role(steps[0], from->steps[i]))
			continue;
		at = from == plan ? i : eta_step_of(plan, from->steps[i], 0);
		if (at == plan->nr)
			at = eta_step_add(plan, from->steps[i], 'n', UINT_MAX);
		eta_seq_add(plan, at, alloc);
	}
	/* the role's steps that did not run there: after the role's last step that did */
	for (k = 0; k < nr; k++) {
		size_t at = eta_step_of(plan, steps[k], 0);
		if (at == plan->nr)
			at = eta_step_add(plan, steps[k], 'n', UINT_MAX);
		eta_seq_add(plan, at, alloc); /* once: it skips a step already in the sequence */
	}
}

void eta_run_steps(struct eta *e, const char *node, const char *const *steps, size_t nr)
{
	struct eta_plan *plan;
	size_t i, n, alloc = 0;

	if (!e)
		return;
	plan = eta_plan_of(e, node);
	if (!plan)
		plan = eta_plan_new(e, node);
	free(plan->seq);
	plan->seq = NULL;
	plan->nr_seq = 0;
	for (i = 0; i < nr; i += n) {
		for (n = 1; i + n < nr && eta_same_role(steps[i], steps[i + n]); n++)
			;
		eta_seq_role(e, plan, node, steps + i, n, &alloc);
	}
	eta_settle(plan);
}

void eta_phases(struct eta *e, const char *phases)
{
	if (e)
		eta_overhead_of(e, phases ? phases : "all");
}

size_t eta_runs(const struct eta *e)
{
	return e ? e->runs : 0;
}
