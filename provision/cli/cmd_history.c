/* provision history: the runs recorded in a cluster's state folder, newest first. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../record_files.h"
#include "../state.h"
#include "../util.h"
#include "../view.h"
#include "cmd.h"
#include "run_record.h"

static struct {
	const char *inventory, *state, *output;
	int max;
} args = {.output = "text", .max = 0};

static const struct opt history_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder (default: beside the inventory, NAME.state)"),
    OPT_INT('n', "max-count", &args.max, "N", 1, 1000000, "only the N newest runs"),
    OPT_CHOICE('o', "output", &args.output, "FORMAT", "text|json",
	       "a table, or one JSON object per run"),
    OPT_END,
};

static void ms_text(char *buf, size_t size, const char *ms)
{
	if (!ms)
		snprintf(buf, size, "-");
	else
		view_duration(buf, size, strtoull(ms, NULL, 10));
}

static int history_exec(int nr_pos, char **pos)
{
	struct state *s = NULL;
	struct state_run *runs = NULL;
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	bool json = !strcmp(args.output, "json");
	size_t nr = 0, i;
	int ret;

	ret = cli_state_open_ro("history", args.inventory, args.state, &s);
	if (ret)
		return ret;
	if (state_runs(s, &runs, &nr, &err) < 0) {
		fprintf(stderr, "provision history: %s\n", err.msg);
		state_free(s);
		return EXIT_USAGE;
	}
	if (!json)
		strbuf_addf(&out, "%4s  %-8s  %-19s  %-8s  %-11s  %8s  %9s  %5s  %7s  %6s\n", "RUN",
			    "ID", "STARTED", "COMMAND", "RESULT", "DURATION", "ESTIMATE", "NODES",
			    "CHANGED", "FAILED");
	for (i = 0; i < nr && (!args.max || i < (size_t)args.max); i++) {
		struct strbuf sum = STRBUF_INIT;
		char when[32], dur[32], eta[32];
		char *cmd, *result, *ms, *eta_ms, *nodes, *changed, *failed;

		state_read(s, runs[i].id, RECORD_SUMMARY, &sum, NULL);
		cmd = state_summary_get(sum.buf, "command");
		result = state_summary_get(sum.buf, "result");
		ms = state_summary_get(sum.buf, "duration_ms");
		eta_ms = state_summary_get(sum.buf, "eta_ms");
		nodes = state_summary_get(sum.buf, "nodes");
		changed = state_summary_get(sum.buf, "changed");
		failed = state_summary_get(sum.buf, "failed");
		cli_run_time(when, sizeof(when), runs[i].time);
		ms_text(dur, sizeof(dur), ms);
		ms_text(eta, sizeof(eta), eta_ms);
		if (json) {
			json_t *o = json_object();
			char *text;
			json_object_set_new(o, "run", json_integer(runs[i].number));
			json_object_set_new(o, "id", json_string(runs[i].id));
			json_object_set_new(o, "started", json_integer(runs[i].time));
			json_object_set_new(o, "command", json_string(cmd ? cmd : ""));
			json_object_set_new(o, "result", json_string(result ? result : ""));
			if (ms)
				json_object_set_new(o, "duration_ms",
						    json_integer(strtoll(ms, NULL, 10)));
			if (eta_ms)
				json_object_set_new(o, "eta_ms",
						    json_integer(strtoll(eta_ms, NULL, 10)));
			json_object_set_new(o, "subject", json_string(runs[i].subject));
			text = json_dumps(o, JSON_COMPACT);
			strbuf_addf(&out, "%s\n", text);
			free(text);
			json_decref(o);
		} else {
			strbuf_addf(&out,
				    "%4u  %.8s  %-19s  %-8s  %-11s  %8s  %9s  %5s  %7s  %6s\n",
				    runs[i].number, runs[i].id, when, cmd ? cmd : "?",
				    result ? result : "?", dur, eta, nodes ? nodes : "-",
				    changed ? changed : "-", failed ? failed : "-");
		}
		free(cmd);
		free(result);
		free(ms);
		free(eta_ms);
		free(nodes);
		free(changed);
		free(failed);
		strbuf_release(&sum);
	}
	(void)write_all(1, out.buf, out.len);
	strbuf_release(&out);
	state_runs_free(runs, nr);
	state_free(s);
	return EXIT_OK;
}

const struct cmd cmd_history = {
    .name = "history",
    .summary = "list the runs recorded for a cluster, newest first",
    .usage = "-i FILE [--state DIR] [-n N] [-o json]",
    .description = "Every 'up' and 'check' is recorded as a commit of the cluster's state folder\n"
		   "(a git repository beside the inventory).  List them, newest first: the run's\n"
		   "number (for 'diff', 'show' and 'logs'), when it started, the command, its\n"
		   "result, how long it took and how long it was estimated to take, the nodes it\n"
		   "ran on, how many of them it changed and how many failed.",
    .options = history_options,
    .exec = history_exec,
    .min_pos = 0,
    .max_pos = 0,
};
