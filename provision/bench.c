/* bench: see bench.h. */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "inventory.h"
#include "profiles.h"

static const char *const variant_names[BENCH_NR_VARIANTS] = {"host", "container", "capped",
							     "host-1"};

const char *bench_variant_name(enum bench_variant v)
{
	return v < BENCH_NR_VARIANTS ? variant_names[v] : "?";
}

void bench_node_release(struct bench_node *b)
{
	int v;

	free(b->error);
	free(b->ctr_version);
	free(b->gpu_fail);
	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		free(b->fail[v]);
	memset(b, 0, sizeof(*b));
}

static int variant_of(const char *s, size_t len)
{
	int v;

	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		if (strlen(variant_names[v]) == len && !memcmp(variant_names[v], s, len))
			return v;
	return -1;
}

/* A figure: 1-9 digits, optionally '.' and 1-3 digits. */
static int parse_figure(const char *s, double *out)
{
	size_t i = 0, d = 0, f = 0;

	while (s[i] >= '0' && s[i] <= '9')
		i++, d++;
	if (s[i] == '.') {
		i++;
		while (s[i] >= '0' && s[i] <= '9')
			i++, f++;
		if (!f || f > 3)
			return -1;
	}
	if (!d || d > 9 || s[i])
		return -1;
	*out = strtod(s, NULL);
	return isfinite(*out) ? 0 : -1;
}

static int parse_uint(const char *s, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	size_t i;

	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 9)
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (!i || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* "Q/P" (digits), "max" or "unknown". */
static bool quota_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	unsigned q, p;
	char buf[24];

	if (!strcmp(s, "max") || !strcmp(s, "unknown"))
		return true;
	if (!slash || (size_t)(slash - s) >= sizeof(buf) || strlen(s) >= 40)
		return false;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	return parse_uint(buf, 999999999, &q) == 0 && parse_uint(slash + 1, 999999999, &p) == 0;
}

/* The value of word `key=` in words[0..n), or NULL. */
static const char *word(char **words, size_t n, const char *key)
{
	size_t k = strlen(key), i;

	for (i = 0; i < n; i++)
		if (!strncmp(words[i], key, k) && words[i][k] == '=')
			return words[i] + k + 1;
	return NULL;
}

static char *clean_text(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	text_clean_line(&sb, s);
	if (sb.len > 300) {
		size_t n = 300;
		/* at a character: a cut UTF-8 sequence is not text (JSON refuses it) */
		while (n && ((unsigned char)sb.buf[n] & 0xc0) == 0x80)
			n--;
		strbuf_setlen(&sb, n);
		strbuf_addstr(&sb, "...");
	}
	return strbuf_detach(&sb, NULL);
}

/* One `run` line's words after "run VARIANT REP". */
static int parse_run(struct bench_node *b, int v, unsigned rep, char **w, size_t n,
		     struct error *err)
{
	static const char *const keys[] = {"v", "threads", "ms", "cpu_mops", "mem_mbs", "cpu_max"};
	unsigned ver, threads, ms, i;
	const char *q;
	double cpu, mem;

	if (n != 6)
		return error_set(err, -1, "a run line has %zu fields after its variant, not 6", n);
	for (i = 0; i < 6; i++)
		if (strncmp(w[i], keys[i], strlen(keys[i])) || w[i][strlen(keys[i])] != '=')
			return error_set(err, -1, "field %u is not %s=", i + 1, keys[i]);
	if (parse_uint(word(w, n, "v"), 99, &ver) || ver != BENCH_WORKLOAD_VERSION)
		return error_set(err, -1, "workload version is not %d", BENCH_WORKLOAD_VERSION);
	if (parse_uint(word(w, n, "threads"), 1024, &threads) ||
	    threads != (v == BENCH_HOST1 ? 1 : b->threads))
		return error_set(err, -1, "threads is not %u", v == BENCH_HOST1 ? 1 : b->threads);
	if (parse_uint(word(w, n, "ms"), 60000, &ms) || ms != b->ms)
		return error_set(err, -1, "ms is not %u", b->ms);
	if (parse_figure(word(w, n, "cpu_mops"), &cpu) || parse_figure(word(w, n, "mem_mbs"), &mem))
		return error_set(err, -1, "a figure is not a number of the form 123.4");
	q = word(w, n, "cpu_max");
	if (!quota_ok(q))
		return error_set(err, -1, "cpu_max is not Q/P, max or unknown");
	if (rep != b->runs[v] + 1)
		return error_set(err, -1, "run %u of %s came after run %u", rep, variant_names[v],
				 b->runs[v]);
	b->cpu[v][b->runs[v]] = cpu;
	b->mem[v][b->runs[v]] = mem;
	b->runs[v]++;
	snprintf(b->cpu_max[v], sizeof(b->cpu_max[v]), "%s", q);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned n)
{
	double s[BENCH_REPEAT_MAX];

	if (!n)
		return 0;
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

#define WORDS_MAX 12

int bench_parse(struct bench_node *b, const char *text, size_t len, unsigned threads, unsigned ms,
		unsigned repeat, struct error *err)
{
	double limit = b->limit_cpus;
	const char *p = text, *end = text + len;
	unsigned lineno = 0;
	bool ended = false;
	char line[BENCH_LINE_MAX + 1];
	int v;

	bench_node_release(b);
	b->limit_cpus = limit;
	b->threads = threads;
	b->ms = ms;
	b->repeat = repeat;
	if (len > BENCH_OUTPUT_MAX) {
		error_set(err, -1, "the node printed more than %u bytes", BENCH_OUTPUT_MAX);
		goto bad;
	}
	if (memchr(text, '\0', len)) {
		error_set(err, -1, "the node printed a NUL byte");
		goto bad;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *words[WORDS_MAX], *save = NULL, *t;
		size_t n = 0;
		struct error e = {0};

		lineno++;
		if (ended) {
			error_set(err, -1, "line %u: output after 'end'", lineno);
			goto bad;
		}
		if (l > BENCH_LINE_MAX) {
			error_set(err, -1, "line %u: longer than %d bytes", lineno, BENCH_LINE_MAX);
			goto bad;
		}
		memcpy(line, p, l);
		line[l] = '\0';
		p += l + (nl ? 1 : 0);
		if (!strncmp(line, "fail ", 5)) {
			const char *sp = strchr(line + 5, ' ');
			char **slot;
			if (!sp || sp[1] == '\0') {
				error_set(err, -1, "line %u: a fail line without its reason",
					  lineno);
				goto bad;
			}
			if ((size_t)(sp - line - 5) == 3 && !memcmp(line + 5, "gpu", 3)) {
				slot = &b->gpu_fail;
			} else if ((v = variant_of(line + 5, (size_t)(sp - line - 5))) >= 0) {
				slot = &b->fail[v];
			} else {
				error_set(err, -1, "line %u: a fail line of no known variant",
					  lineno);
				goto bad;
			}
			if (!*slot)
				*slot = clean_text(sp + 1);
			continue;
		}
		for (t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
			if (n == WORDS_MAX) {
				error_set(err, -1, "line %u: more than %d words", lineno,
					  WORDS_MAX);
				goto bad;
			}
			words[n++] = t;
		}
		if (n == 1 && !strcmp(words[0], "end")) {
			ended = true;
		} else if (n >= 3 && !strcmp(words[0], "run")) {
			unsigned rep;
			v = variant_of(words[1], strlen(words[1]));
			if (v < 0 || parse_uint(words[2], repeat, &rep) || !rep) {
				error_set(err, -1,
					  "line %u: a run line of no known variant or repeat",
					  lineno);
				goto bad;
			}
			if (b->fail[v] || parse_run(b, v, rep, words + 3, n - 3, &e) < 0) {
				error_set(err, -1, "line %u: %s", lineno,
					  b->fail[v] ? "a run after its variant failed" : e.msg);
				goto bad;
			}
		} else if (n == 4 && !strcmp(words[0], "gpu") && !strcmp(words[1], "nvidia-smi") &&
			   !strncmp(words[2], "ms=", 3) && !strncmp(words[3], "gpus=", 5) &&
			   !b->gpu && !parse_figure(words[2] + 3, &b->gpu_ms) &&
			   !parse_uint(words[3] + 5, 64, &b->gpu_count)) {
			b->gpu = true;
		} else if (n == 2 && !strncmp(words[0], "info", 5) &&
			   !strncmp(words[1], "ctr=", 4) && !b->ctr_version &&
			   strlen(words[1]) > 4 && strlen(words[1]) < 60 &&
			   strspn(words[1] + 4,
				  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789.~+_-") == strlen(words[1] + 4)) {
			b->ctr_version = xstrdup(words[1] + 4);
		} else {
			error_set(err, -1, "line %u is not of the bench protocol", lineno);
			goto bad;
		}
	}
	if (!ended) {
		error_set(err, -1, "the output ended before its 'end' line (%u lines)", lineno);
		goto bad;
	}
	for (v = 0; v < BENCH_NR_VARIANTS; v++) {
		/* A failed host run ends the loop on the node: fewer runs of the others then. */
		if (!b->fail[v] && !b->fail[BENCH_HOST] && !b->fail[BENCH_HOST1] &&
		    b->runs[v] != repeat) {
			error_set(err, -1, "%s: %u runs, not %u", variant_names[v], b->runs[v],
				  repeat);
			goto bad;
		}
		b->cpu_med[v] = median(b->cpu[v], b->runs[v]);
		b->mem_med[v] = median(b->mem[v], b->runs[v]);
	}
	b->ran = true;
	return 0;
bad:
	free(b->error);
	b->error = clean_text(err->msg);
	b->ran = false;
	return -1;
}

static bool has_quota(const char *q)
{
	return q[0] && strcmp(q, "max") && strcmp(q, "unknown");
}

/* Where a low container/host ratio most likely comes from. */
static char *likely_cause(const struct bench_node *b, bool memory)
{
	if (has_quota(b->cpu_max[BENCH_CONTAINER]))
		return xasprintf(
		    "the container's cgroup has a CPU quota (%s) although none was "
		    "asked for: a CPUQuota on system.slice or in the runtime's options",
		    b->cpu_max[BENCH_CONTAINER]);
	if (memory)
		return xstrdup("likely: other load on the node while it ran, or the container's "
			       "memory on another NUMA node; run 'provision bench -l NODE' again, "
			       "and if it stays low compare the runtime (ctr info) with runc");
	return xstrdup("likely: a runtime that costs CPU (a sandboxed runtime instead of runc), "
		       "another CPU frequency or power setting in the container's cgroup, or "
		       "other load on the node while it ran; run 'provision bench -l NODE' again");
}

static void judge_one(struct validation *v, size_t node, const struct bench_node *b, bool memory)
{
	const double *med = memory ? b->mem_med : b->cpu_med;
	const char *id = memory ? "bench-memory" : "bench-cpu", *unit = memory ? "MB/s" : "Mop/s";
	struct strbuf obs = STRBUF_INIT, exp = STRBUF_INIT;
	enum check_status st = CHECK_PASS;
	char *fix = NULL;
	double ratio = 0, cap_ratio = 0, predicted = 0;

	strbuf_addf(&exp, "container/host >= %.2f", BENCH_RATIO_MIN);
	if (!memory)
		strbuf_addf(&exp, "; limited to %.2f CPU: about %.2f x the 1-thread figure",
			    b->limit_cpus, fmin(b->limit_cpus, (double)b->threads));
	strbuf_addf(&obs, "host %.1f", med[BENCH_HOST]);
	if (b->fail[BENCH_CONTAINER]) {
		strbuf_addf(&obs, ", container failed: %s", b->fail[BENCH_CONTAINER]);
		st = CHECK_FAIL;
		fix = xstrdup("is containerd running with ctr on the node? 'provision up --phases "
			      "prep' installs it; 'ctr version' on the node tells");
		goto done;
	}
	ratio = med[BENCH_HOST] > 0 ? med[BENCH_CONTAINER] / med[BENCH_HOST] : 0;
	strbuf_addf(&obs, ", container %.1f (%.2f)", med[BENCH_CONTAINER], ratio);
	if (b->fail[BENCH_CAPPED]) {
		strbuf_addf(&obs, ", limited failed: %s", b->fail[BENCH_CAPPED]);
	} else {
		cap_ratio = med[BENCH_HOST] > 0 ? med[BENCH_CAPPED] / med[BENCH_HOST] : 0;
		strbuf_addf(&obs, ", limited to %.2f CPU %.1f (%.2f", b->limit_cpus,
			    med[BENCH_CAPPED], cap_ratio);
		if (!memory && !b->fail[BENCH_HOST1]) {
			predicted = fmin(b->limit_cpus, (double)b->threads) * med[BENCH_HOST1];
			strbuf_addf(&obs, "; predicted %.1f from 1 thread %.1f", predicted,
				    med[BENCH_HOST1]);
		}
		strbuf_addch(&obs, ')');
	}
	strbuf_addf(&obs, " %s", unit);
	if (med[BENCH_HOST] <= 0 || ratio < BENCH_RATIO_MIN) {
		st = CHECK_FAIL;
		fix = likely_cause(b, memory);
	} else if (b->fail[BENCH_CAPPED]) {
		st = CHECK_FAIL;
		fix = xstrdup("the CPU limit could not be set on the node's containerd: see the "
			      "error; ctr run --cpu-quota needs containerd 1.6 or later");
	} else if (predicted > 0 && fabs(med[BENCH_CAPPED] / predicted - 1) > BENCH_CAP_TOLERANCE) {
		st = CHECK_WARN;
		fix = xasprintf("the limit did not act as predicted; the limited container's "
				"cgroup said cpu_max=%s",
				b->cpu_max[BENCH_CAPPED]);
	}
done:
	validation_add(v, id, node, st, exp.buf, obs.buf, fix);
	free(fix);
	strbuf_release(&obs);
	strbuf_release(&exp);
}

void bench_judge(struct validation *v, size_t node, const struct bench_node *b,
		 unsigned expected_gpus)
{
	if (!b->ran) {
		validation_add(
		    v, "bench-cpu", node, CHECK_FAIL, "the workload runs on the node",
		    b->error ? b->error : "did not run",
		    "see the node's error; 'provision bench -l NODE -v' shows its output");
		return;
	}
	if (b->fail[BENCH_HOST]) {
		validation_add(
		    v, "bench-cpu", node, CHECK_FAIL, "the workload runs on the node",
		    b->fail[BENCH_HOST],
		    "'provision bench -l NODE -v' shows the workload's output on the node");
		return;
	}
	judge_one(v, node, b, false);
	judge_one(v, node, b, true);
	if (b->gpu_fail) {
		validation_add(v, "bench-gpu", node, CHECK_FAIL, "nvidia-smi answers on the host",
			       b->gpu_fail,
			       "is the NVIDIA driver loaded? 'nvidia-smi' on the node");
	} else if (b->gpu) {
		char *exp = xasprintf("nvidia-smi lists the %u GPU%s the facts found",
				      expected_gpus, expected_gpus == 1 ? "" : "s");
		char *obs = xasprintf("nvidia-smi answered in %.1f ms on the host, %u GPU%s (the "
				      "driver's answer time; no CUDA kernel was run)",
				      b->gpu_ms, b->gpu_count, b->gpu_count == 1 ? "" : "s");
		validation_add(
		    v, "bench-gpu", node, b->gpu_count == expected_gpus ? CHECK_PASS : CHECK_FAIL,
		    exp, obs, b->gpu_count == expected_gpus ? NULL : "'nvidia-smi -L' on the node");
		free(exp);
		free(obs);
	}
}

unsigned bench_limit_milli(const struct node *const *nodes, const struct facts *const *facts,
			   size_t nr)
{
	struct profile_node *pn = xcalloc(nr ? nr : 1, sizeof(*pn));
	struct hub_profile *prof = NULL;
	size_t i, k, n = 0, nr_prof = 0;
	unsigned best = 0;

	for (i = 0; i < nr; i++) {
		const struct facts *f = facts[i];
		if (!f)
			continue;
		pn[n].name = nodes[i]->name;
		profiles_allocatable(f->cpus, f->mem_kib, &pn[n].cpu_milli, &pn[n].mem_mib);
		for (k = 0; k < f->nr_gpus && k < PROFILES_MAX_GPUS; k++) {
			pn[n].gpus[k].model = f->gpus[k].model;
			pn[n].gpus[k].memory_mib = f->gpus[k].memory_mib;
		}
		pn[n].nr_gpus = k;
		pn[n].schedulable = nodes[i]->roles & NODE_ROLE_WORKER;
		pn[n].sharing = nodes[i]->gpu_sharing > 1 ? (unsigned)nodes[i]->gpu_sharing : 0;
		n++;
	}
	profiles_reserve_addons(pn, n);
	profiles_generate(&prof, &nr_prof, pn, n);
	for (i = 0; i < nr_prof; i++)
		if (prof[i].cpu_guarantee_milli && (!best || prof[i].cpu_guarantee_milli < best))
			best = prof[i].cpu_guarantee_milli;
	profiles_free(prof, nr_prof);
	free(pn);
	if (!best)
		best = 1000;
	return best < 50 ? 50 : best;
}

unsigned bench_values_limit_milli(const char *values_yaml)
{
	const char *p;
	unsigned best = 0;

	for (p = values_yaml; (p = strstr(p, "cpu_guarantee: ")); p++) {
		char *end;
		double v = strtod(p + 15, &end);
		unsigned m;

		if (end == p + 15 || (*end != '\n' && *end) || !isfinite(v) || v <= 0 || v > 1024)
			continue;
		m = (unsigned)lround(v * 1000);
		if (m >= 50 && (!best || m < best))
			best = m;
	}
	return best;
}

void bench_record(struct strbuf *out, const struct bench_node *b)
{
	int v;

	strbuf_addf(out, "workload v%d threads=%u ms=%u repeat=%u\n", BENCH_WORKLOAD_VERSION,
		    b->threads, b->ms, b->repeat);
	strbuf_addf(out, "limit_cpus %.2f\n", b->limit_cpus);
	if (!b->ran) {
		strbuf_addf(out, "error %s\n", b->error ? b->error : "did not run");
		return;
	}
	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		if (!b->fail[v])
			strbuf_addf(out, "cpu_mops.%s %.1f\n", variant_names[v], b->cpu_med[v]);
	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		if (!b->fail[v])
			strbuf_addf(out, "mem_mbs.%s %.1f\n", variant_names[v], b->mem_med[v]);
	/* the quota each container's cgroup showed: the limit at work, or not */
	for (v = BENCH_CONTAINER; v <= BENCH_CAPPED; v++)
		if (!b->fail[v] && b->runs[v])
			strbuf_addf(out, "cpu_max.%s %s\n", variant_names[v], b->cpu_max[v]);
	if (b->gpu)
		strbuf_addf(out, "gpu_nvidia_smi_ms.host %.1f\n", b->gpu_ms);
	for (v = 0; v < BENCH_NR_VARIANTS; v++)
		if (b->fail[v])
			strbuf_addf(out, "fail.%s %s\n", variant_names[v], b->fail[v]);
	if (b->gpu_fail)
		strbuf_addf(out, "fail.gpu %s\n", b->gpu_fail);
}

/* The value of line "KEY VALUE" in text, or NULL; *len its length. */
static const char *value_of(const char *text, const char *key, size_t klen, size_t *len)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l > klen && !memcmp(p, key, klen) && p[klen] == ' ') {
			*len = l - klen - 1;
			return p + klen + 1;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

void bench_diff(struct strbuf *out, const char *a, const char *b, const char *indent)
{
	const char *p = b, *wa, *wb;
	size_t la = 0, lb = 0;

	wa = value_of(a, "workload", 8, &la);
	wb = value_of(b, "workload", 8, &lb);
	if (!wa && !wb)
		return;
	if (!wa || !wb) {
		strbuf_addf(out, "%sbench: %s\n", indent,
			    wa ? "no figures in the later run" : "first figures");
		if (!wa)
			a = "";
	} else if (la != lb || memcmp(wa, wb, la)) {
		strbuf_addf(out, "%sbench: another workload (%.*s -> %.*s): figures not compared\n",
			    indent, (int)la, wa, (int)lb, wb);
		return;
	}
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		size_t l = nl ? (size_t)(nl - p) : strlen(p), ol = 0;
		const char *old;
		double x, y;

		sp = memchr(p, ' ', l);
		/* keys are provision's own (cpu_mops.host); a longer one is not compared */
		if (sp && (size_t)(sp - p) < 64 && strncmp(p, "workload ", 9)) {
			char key[64], va[64] = "", vb[64];
			size_t kl = (size_t)(sp - p);
			snprintf(key, sizeof(key), "%.*s", (int)kl, p);
			snprintf(vb, sizeof(vb), "%.*s", (int)(l - kl - 1), sp + 1);
			old = value_of(a, key, kl, &ol);
			if (old)
				snprintf(va, sizeof(va), "%.*s", (int)ol, old);
			if (!old) {
				strbuf_addf(out, "%sbench %s: %s (new)\n", indent, key, vb);
			} else if (strcmp(va, vb)) {
				if (parse_figure(va, &x) == 0 && parse_figure(vb, &y) == 0 &&
				    x > 0) {
					double pct = (y - x) / x * 100;
					strbuf_addf(out, "%s%sbench %s: %s -> %s (%+.1f %%)\n",
						    indent, fabs(pct) >= 5 ? "! " : "", key, va, vb,
						    pct);
				} else {
					strbuf_addf(out, "%sbench %s: %s -> %s\n", indent, key, va,
						    vb);
				}
			}
		}
		p += l + (nl ? 1 : 0);
	}
}
