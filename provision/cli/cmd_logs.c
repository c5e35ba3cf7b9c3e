/* provision logs: a node's log of a recorded run (its steps, their output and times). */
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
} args;

static const struct opt logs_options[] = {
    OPT_STRING('i', "inventory", &args.inventory, "FILE", "the inventory file"),
    OPT_STRING(0, "state", &args.state, "DIR",
	       "the cluster's state folder (default: beside the inventory, NAME.state)"),
    OPT_END,
};

static int logs_exec(int nr_pos, char **pos)
{
	struct state *s = NULL;
	struct strbuf log = STRBUF_INIT;
	struct error err = {0};
	char id[41], *path;
	int ret, rc;

	ret = cli_state_open_ro("logs", args.inventory, args.state, &s);
	if (ret)
		return ret;
	if (state_resolve(s, nr_pos > 1 ? pos[1] : "~0", id, &err) < 0) {
		fprintf(stderr, "provision logs: %s\n", err.msg);
		if (err.hint[0])
			fprintf(stderr, "  hint: %s\n", err.hint);
		state_free(s);
		return EXIT_USAGE;
	}
	path = record_log_path(pos[0]);
	rc = state_read(s, id, path, &log, &err);
	if (rc < 0) {
		fprintf(stderr, "provision logs: run %.8s has no log of node '%s'\n", id, pos[0]);
		if (rc == STATE_ERR_NOTFOUND)
			fprintf(stderr, "  hint: 'provision show' lists the nodes a run ran on\n");
		ret = EXIT_USAGE;
	} else {
		/* cleaned when written (record.c); again here for records made before */
		struct strbuf clean = STRBUF_INIT;
		text_clean(&clean, log.buf, log.len);
		(void)write_all(1, clean.buf, clean.len);
		strbuf_release(&clean);
		ret = EXIT_OK;
	}
	free(path);
	strbuf_release(&log);
	state_free(s);
	return ret;
}

const struct cmd cmd_logs = {
    .name = "logs",
    .summary = "print a node's log of a recorded run",
    .usage = "-i FILE [--state DIR] NODE [RUN]",
    .description = "Print the log of NODE from a recorded run (default: the last one that ran on\n"
		   "it): each step's start, every line of its output and its result, with the\n"
		   "seconds since the run began.  Secrets are redacted in logs before they are\n"
		   "written.  RUN is a number from 'provision history', ~K or a commit id.",
    .options = logs_options,
    .exec = logs_exec,
    .min_pos = 1,
    .max_pos = 2,
};
