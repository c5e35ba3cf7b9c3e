/*
 * provision bench: the same fixed workload on each node's host, in a
 * container its containerd starts, and in one with a CPU limit the size of
 * the smallest hub profile's guarantee (bench.h); the figures, their ratios
 * and what they say, recorded with the run (nodes/NODE/bench) so that
 * `provision diff` shows what moved between two bench runs.
 *
 * A bench run is a run like `check`: facts first (an unreachable node fails
 * alone), then the bench pass on the sessions (plan_bench.c); no role runs
 * and nothing on a node changes but the workload kept in
 * /var/lib/provision/bench.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench.h"
#include "../plan.h"
#include "../record_files.h"
#include "../role.h"
#include "../state.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "print.h"
#include "session.h"
#include "bench.h"

static const char *opt_limit_cpus;
static char limit_source[200] =
    "the smallest CPU guarantee of the hub profiles the nodes' facts give";

unsigned cli_bench_limit(unsigned given, const char *state_dir, const struct inventory *inv)
{
	const struct node *cp = inventory_control_plane(inv);
	struct state *s = NULL;
	struct strbuf values = STRBUF_INIT;
	struct error err = {0};
	unsigned best = 0;
	char id[41], *path = NULL;

	if (given) {
		snprintf(limit_source, sizeof(limit_source), "--cpu-limit");
		return given;
	}
	if (!cp || state_open(&s, state_dir, false, &err) < 0)
		goto out;
	path = record_file_path(cp->name, "/etc/provision/jupyterhub/values.yaml");
	if (state_resolve(s, "~0", id, &err) < 0 || state_read(s, id, path, &values, &err) < 0)
		goto out;
	best = bench_values_limit_milli(values.buf);
	if (best)
		snprintf(limit_source, sizeof(limit_source),
			 "the smallest CPU guarantee of the hub's profiles as last deployed (%s)",
			 path + 6);
out:
	free(path);
	strbuf_release(&values);
	state_free(s);
	return best;
}
static struct cli_plan_args args = {
    .cmd_name = "bench",
    .forks = 64,
    .output = "text",
    .mode = RUN_BENCH,
    .bench_limit = cli_bench_limit,
    .skip_preflight = true,
};

static const struct opt bench_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file (required)"),
    OPT_STRING('l', "limit", &args.limit, "NODES",
	       "only these nodes: names, ranges (b-[2-4]) and roles (@worker)"),
    OPT_INT('f', "forks", &args.forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
    OPT_INT(0, "repeat", &args.bench_repeat, "N", 1, BENCH_REPEAT_MAX,
	    "runs of each variant, the median kept (default 3)"),
    OPT_STRING(0, "cpu-limit", &opt_limit_cpus, "CPUS",
	       "the limited container's CPU (0.5 or 500m; default: the smallest hub "
	       "profile's CPU guarantee)"),
    CLI_RUN_VIEW_OPTIONS(args),
    OPT_END,
};

/* "0.5", "2", "500m" -> millicores; 0 when not a CPU amount in [0.05, 1024]. */
static unsigned parse_cpus(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !isfinite(v))
		return 0;
	if (*end == 'm' && !end[1])
		v /= 1000;
	else if (*end)
		return 0;
	if (v < 0.05 || v > 1024)
		return 0;
	return (unsigned)lround(v * 1000);
}

static double ratio(double x, double y)
{
	return y > 0 ? x / y : 0;
}

static json_t *variants_json(const struct bench_node *b, const double *med)
{
	json_t *o = json_object();
	int v;

	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		json_object_set_new(o, v == BENCH_HOST1 ? "host_1" : bench_variant_name(v),
				    b->fail[v] || !b->runs[v] ? json_null() : json_real(med[v]));
	return o;
}

static void print_json(const struct cli_plan_done *d)
{
	size_t i;
	int v;

	for (i = 0; i < d->nr; i++) {
		const struct bench_node *b = &d->res->bench[i];
		json_t *o = json_object(), *r, *f;
		char *text;
		size_t k;

		json_object_set_new(o, "event", json_string("bench"));
		json_object_set_new(o, "node", json_string(d->nodes[i]->name));
		json_object_set_new(o, "workload", json_integer(BENCH_WORKLOAD_VERSION));
		json_object_set_new(o, "threads", json_integer(b->threads));
		json_object_set_new(o, "ms", json_integer(b->ms));
		json_object_set_new(o, "repeat", json_integer(b->repeat));
		json_object_set_new(o, "limit_cpus", json_real(b->limit_cpus));
		json_object_set_new(o, "limit_source", json_string(limit_source));
		/* the node's checks decide its status: fail over warn over pass */
		{
			const char *status = b->ran || b->error ? "pass" : "unreachable";
			for (k = 0; k < d->res->validation.nr; k++) {
				const struct check *c = &d->res->validation.items[k];
				if (c->node != i || strncmp(c->id, "bench-", 6))
					continue;
				if (c->status == CHECK_FAIL)
					status = "fail";
				else if (c->status == CHECK_WARN && strcmp(status, "fail"))
					status = "warn";
			}
			json_object_set_new(o, "status", json_string(status));
		}
		if (!b->ran) {
			json_object_set_new(o, "error",
					    b->error ? json_string(b->error)
						     : json_string("unreachable: no facts"));
		} else {
			json_object_set_new(o, "cpu_mops", variants_json(b, b->cpu_med));
			json_object_set_new(o, "mem_mbs", variants_json(b, b->mem_med));
			r = json_object();
			if (!b->fail[BENCH_CONTAINER]) {
				json_object_set_new(r, "cpu_container",
						    json_real(ratio(b->cpu_med[BENCH_CONTAINER],
								    b->cpu_med[BENCH_HOST])));
				json_object_set_new(r, "mem_container",
						    json_real(ratio(b->mem_med[BENCH_CONTAINER],
								    b->mem_med[BENCH_HOST])));
			}
			if (!b->fail[BENCH_CAPPED] && !b->fail[BENCH_CONTAINER]) {
				json_object_set_new(r, "cpu_capped",
						    json_real(ratio(b->cpu_med[BENCH_CAPPED],
								    b->cpu_med[BENCH_HOST])));
				json_object_set_new(r, "mem_capped",
						    json_real(ratio(b->mem_med[BENCH_CAPPED],
								    b->mem_med[BENCH_HOST])));
				json_object_set_new(
				    o, "cpu_capped_predicted",
				    json_real(fmin(b->limit_cpus, (double)b->threads) *
					      b->cpu_med[BENCH_HOST1]));
				json_object_set_new(o, "cpu_max_capped",
						    json_string(b->cpu_max[BENCH_CAPPED]));
			}
			json_object_set_new(o, "ratios", r);
			if (b->ctr_version)
				json_object_set_new(o, "ctr", json_string(b->ctr_version));
			if (b->gpu) {
				json_t *g = json_object();
				json_object_set_new(g, "kind", json_string("nvidia-smi"));
				json_object_set_new(g, "host_ms", json_real(b->gpu_ms));
				json_object_set_new(g, "gpus", json_integer(b->gpu_count));
				json_object_set_new(o, "gpu", g);
			}
			f = json_object();
			for (v = 0; v < BENCH_NR_VARIANTS; v++)
				if (b->fail[v])
					json_object_set_new(
					    f, v == BENCH_HOST1 ? "host_1" : bench_variant_name(v),
					    json_string(b->fail[v]));
			if (b->gpu_fail)
				json_object_set_new(f, "gpu", json_string(b->gpu_fail));
			json_object_set_new(o, "failures", f);
		}
		text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
		cli_write_line(STDOUT_FILENO, NULL, text, strlen(text));
		free(text);
		json_decref(o);
	}
}

static void add_cell(struct strbuf *out, const struct bench_node *b, int v, const double *med)
{
	if (b->fail[v] || !b->runs[v])
		strbuf_addf(out, " %10s", "failed");
	else
		strbuf_addf(out, " %10.1f", med[v]);
}

static void print_table(const struct cli_plan_done *d)
{
	struct strbuf out = STRBUF_INIT;
	size_t i, w = 4;
	int k;

	for (i = 0; i < d->nr; i++)
		if (strlen(d->nodes[i]->name) > w)
			w = strlen(d->nodes[i]->name);
	strbuf_addf(&out,
		    "\nbench: workload v%d, median of %u runs; LIMITED: the container with "
		    "the CPU limit; RATIO: against HOST\n",
		    BENCH_WORKLOAD_VERSION,
		    d->nr && d->res->bench ? d->res->bench[0].repeat : BENCH_REPEAT);
	strbuf_addf(&out, "limit: %.2f CPU, %s\n",
		    d->nr && d->res->bench ? d->res->bench[0].limit_cpus : 0.0, limit_source);
	strbuf_addf(&out, "%-*s  %-6s %5s %10s %10s %6s %10s %6s %10s %s\n", (int)w, "NODE",
		    "KERNEL", "CPUS", "HOST", "CONTAINER", "RATIO", "LIMITED", "RATIO", "PREDICTED",
		    "UNIT");
	for (i = 0; i < d->nr; i++) {
		const struct bench_node *b = &d->res->bench[i];
		if (!b->ran) {
			strbuf_addf(&out, "%-*s  %s\n", (int)w, d->nodes[i]->name,
				    b->error		       ? b->error
				    : d->res->status[i].reason ? d->res->status[i].reason
							       : "unreachable");
			continue;
		}
		for (k = 0; k < 2; k++) {
			const double *med = k ? b->mem_med : b->cpu_med;
			strbuf_addf(&out, "%-*s  %-6s %5.2f", (int)w, d->nodes[i]->name,
				    k ? "memory" : "cpu", b->limit_cpus);
			add_cell(&out, b, BENCH_HOST, med);
			add_cell(&out, b, BENCH_CONTAINER, med);
			if (b->fail[BENCH_CONTAINER])
				strbuf_addf(&out, " %6s", "-");
			else
				strbuf_addf(&out, " %6.2f",
					    ratio(med[BENCH_CONTAINER], med[BENCH_HOST]));
			add_cell(&out, b, BENCH_CAPPED, med);
			if (b->fail[BENCH_CAPPED] || b->fail[BENCH_CONTAINER])
				strbuf_addf(&out, " %6s", "-");
			else
				strbuf_addf(&out, " %6.2f",
					    ratio(med[BENCH_CAPPED], med[BENCH_HOST]));
			if (!k && !b->fail[BENCH_HOST1])
				strbuf_addf(&out, " %10.1f",
					    fmin(b->limit_cpus, (double)b->threads) *
						b->cpu_med[BENCH_HOST1]);
			else
				strbuf_addf(&out, " %10s", "");
			strbuf_addf(&out, " %s\n", k ? "MB/s" : "Mop/s");
		}
		if (b->gpu)
			strbuf_addf(
			    &out,
			    "%-*s  %-6s nvidia-smi answered in %.1f ms on the host, %u GPU%s "
			    "(no CUDA kernel run)\n",
			    (int)w, d->nodes[i]->name, "gpu", b->gpu_ms, b->gpu_count,
			    b->gpu_count == 1 ? "" : "s");
	}
	strbuf_addf(&out, "CPUS: the limit in CPUs; cpu PREDICTED: min(limit, threads) x the "
			  "1-thread host figure\n");
	(void)write_all(STDOUT_FILENO, out.buf, out.len);
	strbuf_release(&out);
}

int cli_bench_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	if (!d->res->bench)
		return d->ret;
	if (a->output && !strcmp(a->output, "json"))
		print_json(d);
	else
		print_table(d);
	return d->ret;
}

static int bench_exec(int nr_pos, char **pos)
{
	if (opt_limit_cpus) {
		args.bench_limit_milli = parse_cpus(opt_limit_cpus);
		if (!args.bench_limit_milli) {
			fprintf(
			    stderr,
			    "provision bench: --cpu-limit '%s' is not a CPU amount from 0.05 to "
			    "1024 (0.5, 2 or 500m); nothing was changed\n",
			    opt_limit_cpus);
			return EXIT_USAGE;
		}
	}
	args.after = cli_bench_after;
	return cli_plan_run(&args);
}

const struct cmd cmd_bench = {
    .name = "bench",
    .summary = "compare each node's speed on the host and in containers, changing nothing",
    .usage = "-i FILE [-l NODES] [--repeat N] [--cpu-limit CPUS] [-o json]",
    .description = "On each node, a short fixed workload (a multi-thread compute kernel in Mop/s\n"
		   "and a memory triad in MB/s) runs on the host, then in a container started by\n"
		   "the node's containerd (ctr, runc, its cgroup driver; the container holds the\n"
		   "workload alone: no image, no registry), then in one limited to the smallest\n"
		   "hub profile's CPU guarantee, each --repeat times, interleaved; GPU nodes add\n"
		   "an nvidia-smi figure.  Reported per node: the medians and their ratios.  A\n"
		   "container/host ratio below 0.95 fails the node with its likely cause; the\n"
		   "limited figure is expected at min(limit, threads) x the 1-thread figure.\n"
		   "Recorded with the run; 'provision diff' compares two bench runs.\n"
		   "Exit status 0 when every node's bench passes, 1 otherwise.",
    .options = bench_options,
    .exec = bench_exec,
    .min_pos = 0,
    .max_pos = 0,
};
