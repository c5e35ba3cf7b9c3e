/*
 * plan_bench: the bench pass of `provision bench` and `check --bench`
 * (bench.h), after the validation, on the sessions the run already has.
 *
 * Per node, on its worker: the workload of the node's architecture is
 * uploaded (put_file: nothing is sent when the node has it already), then
 * provision/bench.sh runs with the run's parameters on its standard input;
 * its standard output is kept (at most BENCH_OUTPUT_MAX bytes: a node that
 * prints more fails) and parsed on the main thread after the pass.  Every
 * line is also an event, so the node's log and `-v` show what it printed.
 */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct bench_workload {
	char *arch;
	struct strbuf bin;
	char *error; /* why there is none */
};

struct bench_job {
	struct strbuf out;
	bool over;   /* printed more than BENCH_OUTPUT_MAX */
	char *error; /* the session or the command failed */
	const struct bench_workload *wl;
	char *input; /* the environment and the script */
};

struct bench_pass {
	struct bench_job *jobs; /* per node of o->nodes */
};

/*
 * The workload's architecture: the facts' (amd64 or arm64 only, facts.c:
 * it names a file on this machine), else the inventory's.
 */
static const char *deb_arch(const char *arch, const char *fallback)
{
	return arch ? arch : fallback ? fallback : "amd64";
}

static bool bench_filter(void *ctx, struct runner_job *job, int stream, const char *line,
			 size_t len, unsigned flags)
{
	struct bench_job *bj = ctx;

	if (stream != TRANSPORT_STDOUT || bj->over)
		return false;
	if (bj->out.len + len + 1 > BENCH_OUTPUT_MAX) {
		bj->over = true;
		return false;
	}
	strbuf_add(&bj->out, line, len);
	if (!(flags & TRANSPORT_LINE_MORE))
		strbuf_addch(&bj->out, '\n');
	return false;
}

static int bench_fn(struct runner_job *job, void *data)
{
	struct run *run = data;
	size_t idx = run->map[runner_job_index(job)];
	struct bench_job *bj = &run->bench->jobs[idx];
	const struct node *n = run->o->nodes[idx];
	struct transport_result res = {0};
	struct error err = {0};
	struct event *ev;
	bool skipped = false;
	int rc, timeout_ms = n->ssh.command_timeout * 1000;

	ev = event_new(EVENT_STEP_START, 0);
	ev->phase = PHASE_VALIDATE;
	ev->role = xstrdup(phase_name(PHASE_VALIDATE));
	ev->step = xstrdup("bench");
	runner_job_post(job, ev);
	rc = runner_job_exec(job, PHASE_VALIDATE, "bench", "mkdir -p " BENCH_NODE_DIR, NULL, 0,
			     timeout_ms, &res, &err);
	if (rc == 0 && res.exit_status != 0)
		rc = error_set(&err, -1, "cannot make %s (exit %d)", BENCH_NODE_DIR,
			       res.exit_status);
	if (rc == 0)
		rc = run->o->ops->put_file(runner_job_transport(job),
					   BENCH_NODE_DIR "/provision-bench", bj->wl->bin.buf,
					   bj->wl->bin.len, 0755, NULL, &skipped, &err);
	if (rc < 0) {
		bj->error = xasprintf("the workload could not be put on the node: %s", err.msg);
		return 0;
	}
	/* What the next half minute is for (plain lines show no step start). */
	ev = event_new(EVENT_MESSAGE, 0);
	ev->phase = PHASE_VALIDATE;
	ev->role = xstrdup("bench");
	ev->step = xstrdup("start");
	ev->result = STEP_OK;
	ev->text =
	    xasprintf("the workload on the host, in a container, limited to %.2f CPU and on 1 "
		      "thread, %u time%s each: %u s of measuring",
		      run->res->bench[idx].limit_cpus, run->res->bench[idx].repeat,
		      run->res->bench[idx].repeat == 1 ? "" : "s",
		      run->res->bench[idx].repeat * 4 * 2 * BENCH_MS / 1000);
	runner_job_post(job, ev);
	runner_job_set_filter(job, bench_filter, bj);
	rc = runner_job_exec(job, PHASE_VALIDATE, "bench", ". /dev/stdin", bj->input,
			     strlen(bj->input), timeout_ms, &res, &err);
	runner_job_set_filter(job, NULL, NULL);
	if (rc < 0)
		bj->error = xasprintf("the bench did not finish: %s", err.msg);
	else if (res.exit_status != 0)
		bj->error = xasprintf("the bench script exited %d", res.exit_status);
	return 0;
}

/* The workload of `arch` from dir (read once per architecture). */
static const struct bench_workload *workload_for(struct bench_workload **wls, size_t *nr,
						 const char *dir, const char *arch)
{
	struct bench_workload *w;
	char *path;
	size_t i;
	int e;

	for (i = 0; i < *nr; i++)
		if (!strcmp((*wls)[i].arch, arch))
			return &(*wls)[i];
	*wls = xrealloc(*wls, (*nr + 1) * sizeof(**wls));
	w = &(*wls)[(*nr)++];
	w->arch = xstrdup(arch);
	strbuf_init(&w->bin, 0);
	w->error = NULL;
	path = xasprintf("%s/provision-bench-%s", dir ? dir : ".", arch);
	if ((e = read_file(path, &w->bin)) < 0 || w->bin.len < 4 ||
	    memcmp(w->bin.buf, "\177ELF", 4))
		w->error =
		    xasprintf("no workload for %s on this machine: '%s': %s ('make' builds "
			      "this machine's, 'make BENCH_CC_%s=CROSS-GCC' another's)",
			      arch, path, e < 0 ? strerror(-e) : "is not an ELF binary", arch);
	free(path);
	return w;
}

void plan_run_bench(struct run *run, struct runner_opts *ro, struct transport **sessions)
{
	const struct plan_opts *o = run->o;
	struct plan_result *res = run->res;
	const struct facts **facts = xcalloc(o->nr ? o->nr : 1, sizeof(*facts));
	const struct node **pass_nodes = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_nodes));
	struct transport **pass_sessions = xcalloc(o->nr ? o->nr : 1, sizeof(*pass_sessions));
	struct bench_workload *wls = NULL;
	struct bench_pass pass = {0};
	struct runner_summary sum;
	unsigned repeat = o->bench_repeat ? o->bench_repeat : BENCH_REPEAT, limit;
	size_t i, n2 = 0, nr_wls = 0, first = res->validation.nr;

	for (i = 0; i < o->nr; i++)
		facts[i] = res->nodes[i].have_facts ? &res->nodes[i].facts : NULL;
	limit =
	    o->bench_limit_milli ? o->bench_limit_milli : bench_limit_milli(o->nodes, facts, o->nr);
	res->bench = xcalloc(o->nr ? o->nr : 1, sizeof(*res->bench));
	pass.jobs = xcalloc(o->nr ? o->nr : 1, sizeof(*pass.jobs));
	for (i = 0; i < o->nr; i++) {
		struct bench_job *bj = &pass.jobs[i];
		const struct facts *f = facts[i];
		unsigned threads;

		strbuf_init(&bj->out, 0);
		res->bench[i].limit_cpus = limit / 1000.0;
		res->bench[i].ms = BENCH_MS;
		res->bench[i].repeat = repeat;
		if (!f)
			continue;
		bj->wl =
		    workload_for(&wls, &nr_wls, o->bench_dir, deb_arch(f->arch, o->nodes[i]->arch));
		if (bj->wl->error)
			continue;
		threads = f->cpus ? (f->cpus > 1024 ? 1024 : f->cpus) : 1;
		res->bench[i].threads = threads;
		bj->input = xasprintf(
		    "PROVISION_BENCH_THREADS=%u\nPROVISION_BENCH_MS=%u\n"
		    "PROVISION_BENCH_REPEAT=%u\nPROVISION_BENCH_QUOTA=%u\n"
		    "PROVISION_BENCH_SYSTEMD=%d\nPROVISION_BENCH_GPU=%d\n%.*s",
		    threads, BENCH_MS, repeat, limit * 100, f->containerd_systemd_cgroup ? 1 : 0,
		    node_has_gpu(o->nodes[i], f) ? 1 : 0, (int)bench_script_len, bench_script);
		run->map[n2] = i;
		pass_nodes[n2] = o->nodes[i];
		pass_sessions[n2] = sessions[i];
		sessions[i] = NULL;
		n2++;
	}
	run->bench = &pass;
	if (n2) {
		ro->node_fn = bench_fn;
		ro->sessions = pass_sessions;
		runner_run(ro, pass_nodes, n2, &sum, NULL);
		res->interrupted = res->interrupted || sum.interrupted;
	}
	for (i = 0; i < n2; i++) {
		sessions[run->map[i]] = pass_sessions[i];
		pass_sessions[i] = NULL;
	}
	run->bench = NULL;
	for (i = 0; i < o->nr; i++) {
		struct bench_job *bj = &pass.jobs[i];
		struct bench_node *b = &res->bench[i];
		struct error err = {0};

		if (!facts[i])
			continue; /* unreachable: its reachable check failed already */
		if (bj->wl && bj->wl->error)
			b->error = xstrdup(bj->wl->error);
		else if (bj->error)
			b->error = xstrdup(bj->error);
		else if (bj->over)
			b->error =
			    xasprintf("the node printed more than %u bytes", BENCH_OUTPUT_MAX);
		else if (bench_parse(b, bj->out.buf, bj->out.len, b->threads, BENCH_MS, repeat,
				     &err) < 0) {
			char *m = xasprintf(
			    "the node's bench output is not what bench.sh prints: %s", b->error);
			free(b->error);
			b->error = m;
		}
		bench_judge(&res->validation, i, b, facts[i]->nr_gpus);
	}
	plan_post_checks(run, first, 0);
	for (i = 0; i < o->nr; i++) {
		strbuf_release(&pass.jobs[i].out);
		free(pass.jobs[i].error);
		free(pass.jobs[i].input);
	}
	for (i = 0; i < nr_wls; i++) {
		free(wls[i].arch);
		strbuf_release(&wls[i].bin);
		free(wls[i].error);
	}
	free(wls);
	free(pass.jobs);
	free(pass_nodes);
	free(pass_sessions);
	free(facts);
}
