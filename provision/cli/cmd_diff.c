/*
 * provision diff: what changed on the cluster between two recorded runs:
 * step results (with what a file looked like on the node before it was put
 * back), facts that moved (a driver version), rendered files, artifacts,
 * the inventory and the validation.  Timings and logs differ every run and
 * are left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench.h"
#include "../record_files.h"
#include "../state.h"
#include "../util.h"
#include "cmd.h"
#include "run_record.h"

static struct {
	const char *inventory, *state;
} args;

static const struct opt diff_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder (default: beside the inventory, NAME.state)"),
    OPT_END,
};

struct paths {
	char **v;
	size_t nr, alloc;
};

static int collect(void *ctx, enum state_change what, const char *path)
{
	struct paths *p = ctx;

	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	p->v[p->nr++] = xstrdup(path);
	return 0;
}

static void read_or_empty(struct state *s, const char *id, const char *path, struct strbuf *out)
{
	strbuf_reset(out);
	state_read(s, id, path, out, NULL);
}

static bool has_line(const char *text, const char *line, size_t len)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l == len && !memcmp(p, line, len))
			return true;
		p += l + (nl ? 1 : 0);
	}
	return false;
}

/* Lines of b missing from a, each with a prefix. */
static size_t missing_lines(struct strbuf *out, const char *a, const char *b, const char *prefix,
			    const char *filter)
{
	const char *p = b;
	size_t n = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (!has_line(a, p, l) && (!filter || memmem(p, l, filter, strlen(filter)))) {
			strbuf_addf(out, "%s%.*s\n", prefix, (int)l, p);
			n++;
		}
		p += l + (nl ? 1 : 0);
	}
	return n;
}

/* One entry of a results file: its head line and the indented lines under it. */
struct entry {
	const char *head;
	size_t head_len, name_len, len; /* len: the whole entry */
};

static size_t parse_entries(const char *text, struct entry **out)
{
	struct entry *v = NULL;
	size_t n = 0, alloc = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (*p == '\t' && n) {
			v[n - 1].len = (size_t)(p + l + (nl ? 1 : 0) - v[n - 1].head);
		} else if (*p != '\t') {
			const char *tab = memchr(p, '\t', l);
			ALLOC_GROW(v, n + 1, alloc);
			v[n].head = p;
			v[n].head_len = l;
			v[n].name_len = tab ? (size_t)(tab - p) : l;
			v[n].len = l + (nl ? 1 : 0);
			n++;
		}
		p += l + (nl ? 1 : 0);
	}
	*out = v;
	return n;
}

static const struct entry *find_entry(const struct entry *v, size_t n, const struct entry *e)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].name_len == e->name_len && !memcmp(v[i].head, e->head, e->name_len))
			return &v[i];
	return NULL;
}

static void result_of(const struct entry *e, char *buf, size_t size)
{
	const char *tab = e ? memchr(e->head, '\t', e->head_len) : NULL;

	if (!e)
		snprintf(buf, size, "(not run)");
	else if (!tab)
		snprintf(buf, size, "?");
	else
		snprintf(buf, size, "%.*s", (int)(e->head_len - (size_t)(tab + 1 - e->head)),
			 tab + 1);
}

static void diff_results(struct strbuf *out, const char *a, const char *b)
{
	struct entry *ea = NULL, *eb = NULL;
	size_t na = parse_entries(a, &ea), nb = parse_entries(b, &eb), i;

	for (i = 0; i < nb; i++) {
		const struct entry *old = find_entry(ea, na, &eb[i]);
		char ra[64], rb[64];
		if (old && old->len == eb[i].len && !memcmp(old->head, eb[i].head, old->len))
			continue;
		result_of(old, ra, sizeof(ra));
		result_of(&eb[i], rb, sizeof(rb));
		strbuf_addf(out, "  ~ %.*s: %s -> %s\n", (int)eb[i].name_len, eb[i].head, ra, rb);
		if (eb[i].len > eb[i].head_len + 1)
			for (const char *p = eb[i].head + eb[i].head_len + 1;
			     p < eb[i].head + eb[i].len;) {
				const char *nl =
				    memchr(p, '\n', (size_t)(eb[i].head + eb[i].len - p));
				size_t l =
				    nl ? (size_t)(nl - p) : (size_t)(eb[i].head + eb[i].len - p);
				strbuf_addf(out, "    %.*s\n", (int)(l && *p == '\t' ? l - 1 : l),
					    l && *p == '\t' ? p + 1 : p);
				p += l + (nl ? 1 : 0);
			}
	}
	for (i = 0; i < na; i++)
		if (!find_entry(eb, nb, &ea[i]))
			strbuf_addf(out, "  - %.*s: no longer run\n", (int)ea[i].name_len,
				    ea[i].head);
	free(ea);
	free(eb);
}

static void add_text_diff(struct strbuf *out, const struct strbuf *a, const struct strbuf *b,
			  const char *label_a, const char *label_b)
{
	struct strbuf d = STRBUF_INIT;

	if (state_text_diff(a->buf, a->len, b->buf, b->len, label_a, label_b, &d, NULL) == 0)
		for (const char *p = d.buf; *p;) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			strbuf_addf(out, "    %.*s\n", (int)l, p);
			p += l + (nl ? 1 : 0);
		}
	strbuf_release(&d);
}

static int run_number(struct state *s, const char *id, char *label, size_t size)
{
	struct state_run *runs = NULL;
	size_t nr = 0, i;

	snprintf(label, size, "%.8s", id);
	if (state_runs(s, &runs, &nr, NULL) < 0)
		return -1;
	for (i = 0; i < nr; i++)
		if (!strcmp(runs[i].id, id)) {
			char when[32];
			cli_run_time(when, sizeof(when), runs[i].time);
			snprintf(label, size, "run %u (%.8s, %s: %s)", runs[i].number, id, when,
				 runs[i].subject);
		}
	state_runs_free(runs, nr);
	return 0;
}

static int diff_exec(int nr_pos, char **pos)
{
	struct state *s = NULL;
	struct paths paths = {0};
	struct strbuf out = STRBUF_INIT, a = STRBUF_INIT, b = STRBUF_INIT;
	struct error err = {0};
	char ida[41], idb[41], la[256], lb[256];
	size_t i, k;
	int ret;

	ret = cli_state_open_ro("diff", args.inventory, args.state, &s);
	if (ret)
		return ret;
	if (state_resolve(s, nr_pos ? pos[0] : "~1", ida, &err) < 0 ||
	    state_resolve(s, nr_pos > 1 ? pos[1] : "~0", idb, &err) < 0 ||
	    state_diff(s, ida, idb, collect, &paths, &err) < 0) {
		fprintf(stderr, "provision diff: %s\n", err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		ret = EXIT_USAGE;
		goto out;
	}
	run_number(s, ida, la, sizeof(la));
	run_number(s, idb, lb, sizeof(lb));
	strbuf_addf(&out, "from %s\n  to %s\n", la, lb);
	for (i = 0; i < paths.nr; i++) {
		struct record_path rp, rk;
		char node[256];
		size_t before = out.len;

		record_path_parse(paths.v[i], &rp);
		if (!record_path_same_node(&rp, &rp))
			continue; /* not a file of a node */
		if (i) {
			record_path_parse(paths.v[i - 1], &rk);
			if (record_path_same_node(&rk, &rp))
				continue; /* the node was done with its first path */
		}
		snprintf(node, sizeof(node), "%.*s", (int)rp.node_len, rp.node);
		strbuf_addf(&out, "\n%s\n", node);
		for (k = i; k < paths.nr; k++) {
			record_path_parse(paths.v[k], &rk);
			if (!record_path_same_node(&rp, &rk))
				break;
			if (rk.kind != RECORD_PATH_NODE && rk.kind != RECORD_PATH_NODE_COPY)
				continue;
			read_or_empty(s, ida, paths.v[k], &a);
			read_or_empty(s, idb, paths.v[k], &b);
			if (rk.kind == RECORD_PATH_NODE_COPY) {
				char *l1 = xasprintf("%s (%s)", rk.dest, "before");
				char *l2 = xasprintf("%s (%s)", rk.dest, "after");
				strbuf_addf(&out, "  rendered %s:\n", rk.dest);
				add_text_diff(&out, &a, &b, l1, l2);
				free(l1);
				free(l2);
			} else if (rk.file == RECORD_RESULTS) {
				diff_results(&out, a.buf, b.buf);
			} else if (rk.file == RECORD_BENCH) {
				bench_diff(&out, a.buf, b.buf, "  ");
			} else if (rk.file == RECORD_FACTS) {
				strbuf_addstr(&out, "  facts:\n");
				missing_lines(&out, b.buf, a.buf, "    - ", NULL);
				missing_lines(&out, a.buf, b.buf, "    + ", NULL);
			} else if (rk.file == RECORD_DEPLOYED) {
				struct strbuf d = STRBUF_INIT;
				missing_lines(&d, b.buf, a.buf, "    - ", " artifact ");
				missing_lines(&d, a.buf, b.buf, "    + ", " artifact ");
				if (d.len)
					strbuf_addf(&out, "  artifacts:\n%s", d.buf);
				strbuf_release(&d);
			}
		}
		if (out.len == before + strlen(node) + 2)
			strbuf_setlen(&out, before); /* only timings or logs moved */
	}
	for (i = 0; i < paths.nr; i++) {
		struct record_path rp;

		record_path_parse(paths.v[i], &rp);
		if (rp.kind == RECORD_PATH_INVENTORY) {
			read_or_empty(s, ida, paths.v[i], &a);
			read_or_empty(s, idb, paths.v[i], &b);
			strbuf_addstr(&out, "\ninventory:\n");
			add_text_diff(&out, &a, &b, RECORD_INVENTORY " (before)",
				      RECORD_INVENTORY " (after)");
		} else if (rp.kind == RECORD_PATH_VALIDATION) {
			struct strbuf d = STRBUF_INIT;
			read_or_empty(s, ida, paths.v[i], &a);
			read_or_empty(s, idb, paths.v[i], &b);
			missing_lines(&d, b.buf, a.buf, "  - ", NULL);
			missing_lines(&d, a.buf, b.buf, "  + ", NULL);
			if (d.len)
				strbuf_addf(
				    &out,
				    "\nvalidation (check, node, result, observed, expected):\n%s",
				    d.buf);
			strbuf_release(&d);
		}
	}
	if (!memchr(out.buf, '\n', out.len) || out.buf[out.len - 1] == '\n') {
		const char *first = strchr(out.buf, '\n');
		const char *second = first ? strchr(first + 1, '\n') : NULL;
		if (second && !second[1])
			strbuf_addstr(&out, "\nno change on the cluster between these runs\n");
	}
	/* Records hold node text, cleaned when it was recorded; one written by an older
	 * provision may not be: its lines pass the filter here (util.h). */
	text_make_safe(&out);
	(void)write_all(1, out.buf, out.len);
	ret = EXIT_OK;
out:
	for (i = 0; i < paths.nr; i++)
		free(paths.v[i]);
	free(paths.v);
	strbuf_release(&out);
	strbuf_release(&a);
	strbuf_release(&b);
	state_free(s);
	return ret;
}

const struct cmd cmd_diff = {
    .name = "diff",
    .summary = "show what changed on the cluster between two recorded runs",
    .usage = "-i FILE [--state DIR] [RUN [RUN]]",
    .description = "Compare two runs from the cluster's history (default: the last two; one RUN:\n"
		   "that run and the last): per node, the steps whose result changed (a file that\n"
		   "was changed by hand shows as changed, with how it looked on the node before\n"
		   "it was put back), facts that moved (a driver or kernel version), rendered\n"
		   "files and artifacts that differ, bench figures that moved (in percent);\n"
		   "then the inventory and the validation.\n"
		   "RUN is a number from 'provision history', ~K or a commit id.",
    .options = diff_options,
    .exec = diff_exec,
    .min_pos = 0,
    .max_pos = 2,
};
