/* provision show: one recorded run: its summary, what it did on each node, its validation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../record_files.h"
#include "../state.h"
#include "../util.h"
#include "cmd.h"
#include "run_record.h"

static struct {
	const char *inventory, *state;
	bool all;
} args;

static const struct opt show_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder (default: beside the inventory, NAME.state)"),
    OPT_BOOL('a', "all", &args.all, "also list the steps that were unchanged"),
    OPT_END,
};

/* The results file with unchanged steps left out (unless --all). */
static void add_results(struct strbuf *out, const char *text)
{
	const char *p = text;
	bool keep = true;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (*p != '\t') {
			const char *tab = memchr(p, '\t', len);
			keep = args.all || !tab || strncmp(tab + 1, "unchanged", 9);
		}
		if (keep) {
			strbuf_addstr(out, "  ");
			strbuf_add(out, p, len);
			strbuf_addch(out, '\n');
		}
		p += len + (nl ? 1 : 0);
	}
}

static int show_exec(int nr_pos, char **pos)
{
	struct state *s = NULL;
	struct state_run *runs = NULL;
	struct strbuf out = STRBUF_INIT, sum = STRBUF_INIT, file = STRBUF_INIT;
	struct error err = {0};
	char id[41], when[32], *ran = NULL;
	size_t nr = 0, i;
	int ret;

	ret = cli_state_open_ro("show", args.inventory, args.state, &s);
	if (ret)
		return ret;
	if (state_resolve(s, nr_pos ? pos[0] : "~0", id, &err) < 0 ||
	    state_runs(s, &runs, &nr, &err) < 0) {
		fprintf(stderr, "provision show: %s\n", err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		ret = EXIT_USAGE;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		if (strcmp(runs[i].id, id))
			continue;
		cli_run_time(when, sizeof(when), runs[i].time);
		strbuf_addf(&out, "run %u  %s  %s\n%s\n\n%s", runs[i].number, id, when,
			    runs[i].subject, runs[i].body);
		if (runs[i].body[0] && runs[i].body[strlen(runs[i].body) - 1] != '\n')
			strbuf_addch(&out, '\n');
	}
	if (state_read(s, id, RECORD_SUMMARY, &sum, NULL) == 0) {
		strbuf_addstr(&out, "\nsummary:\n");
		for (const char *p = sum.buf; *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			strbuf_addf(&out, "  %.*s\n", (int)len, p);
			p += len + (nl ? 1 : 0);
		}
		ran = state_summary_get(sum.buf, "ran");
		{
			char *result = state_summary_get(sum.buf, "result");
			if (result && !strcmp(result, "killed")) {
				/* It recorded no results: what it did is in its logs. */
				strbuf_addf(&out,
					    "\nthe run was killed; what it did is in its logs: "
					    "provision logs -i FILE NODE %.8s\n",
					    id);
				free(ran);
				ran = NULL;
			}
			free(result);
		}
	}
	for (const char *p = ran ? ran : ""; *p;) {
		size_t len = strcspn(p, " ");
		char *node = xstrndup(p, len), *path = record_node_path(node, RECORD_RESULTS);
		strbuf_reset(&file);
		if (len && state_read(s, id, path, &file, NULL) == 0) {
			strbuf_addf(&out, "\n%.*s:\n", (int)len, p);
			add_results(&out, file.buf);
		}
		free(path);
		free(node);
		p += len;
		while (*p == ' ')
			p++;
	}
	strbuf_reset(&file);
	if (state_read(s, id, RECORD_VALIDATION, &file, NULL) == 0 && file.len) {
		strbuf_addstr(&out, "\nvalidation (check, node, result, observed, expected):\n");
		for (const char *p = file.buf; *p;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			strbuf_addf(&out, "  %.*s\n", (int)len, p);
			p += len + (nl ? 1 : 0);
		}
	}
	strbuf_reset(&file);
	text_clean(&file, out.buf, out.len); /* node text in results: the terminal's filter */
	(void)write_all(1, file.buf, file.len);
	ret = EXIT_OK;
out:
	free(ran);
	strbuf_release(&out);
	strbuf_release(&sum);
	strbuf_release(&file);
	state_runs_free(runs, nr);
	state_free(s);
	return ret;
}

const struct cmd cmd_show = {
    .name = "show",
    .summary = "print one recorded run",
    .usage = "-i FILE [--state DIR] [--all] [RUN]",
    .description = "Print a run from the cluster's history (default: the last): who ran which\n"
		   "command when, its result and duration, each node's steps that changed,\n"
		   "failed or were skipped (with --all, every step), with what a changed file\n"
		   "looked like on the node before it was put back, and the validation.\n"
		   "RUN is a number from 'provision history', ~K (K runs before the last) or\n"
		   "a commit id.",
    .options = show_options,
    .exec = show_exec,
    .min_pos = 0,
    .max_pos = 1,
};
