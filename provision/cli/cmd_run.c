/*
 * provision run: an ad-hoc command on the selected nodes.
 *
 * Default output: live lines "NODE: LINE" (stdout lines to stdout, stderr
 * lines to stderr), one write per line so nodes never interleave within a
 * line.  --group buffers each node's output and prints identical outputs
 * (and exit statuses) once under a compressed host list, like dshbak -c.
 * -o json prints one JSON object per node as each finishes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../hostlist.h"
#include "../runner.h"
#include "../util.h"
#include "cmd.h"
#include "common.h"
#include "print.h"
#include "prompt.h"

static const char *opt_inventory;
static const char *opt_limit;
static const char *opt_output = "text";
static int opt_forks = 64;
static int opt_timeout = 0;
static bool opt_sudo;
static bool opt_group;
static bool opt_ask_sudo;
static bool opt_channels;

static const struct opt run_options[] = {
	OPT_STRING('i', "inventory", &opt_inventory, "FILE", "the inventory file (required)"),
	OPT_STRING('l', "limit", &opt_limit, "NODES",
		   "only these nodes: names, ranges (b-[2-4]) and roles (@worker), comma-separated"),
	OPT_INT('f', "forks", &opt_forks, "N", 1, 4096, "at most N nodes at once (default 64)"),
	OPT_BOOL(0, "sudo", &opt_sudo, "run the command as root (sudo when the login user is not root)"),
	OPT_BOOL('K', "ask-sudo-password", &opt_ask_sudo,
		 "ask once for the sudo password (or set PROVISION_SUDO_PASSWORD)"),
	OPT_BOOL('g', "group", &opt_group,
		 "print identical outputs once, under a compressed node list"),
	OPT_CHOICE('o', "output", &opt_output, "FORMAT", "text|json",
		   "text (live lines) or json (one object per node)"),
	OPT_INT('t', "timeout", &opt_timeout, "SECONDS", 0, 86400,
		"stop the command on a node after SECONDS (default: the inventory's command_timeout)"),
	OPT_BOOL(0, "channel-per-command", &opt_channels,
		 "do not start the remote agent; open one SSH channel per command"),
	OPT_END,
};

#define CAPTURE_MAX (4u << 20) /* per node, for --group and json */

struct run_node {
	struct strbuf out, err, all; /* all: stdout and stderr interleaved, for --group */
	const char *name;
	const char *address;
};

struct run_state {
	const struct node **nodes;
	size_t nr;
	struct run_node *rn;
	bool capture, json;
	char *command;
	int timeout_ms;
	unsigned interrupts; /* runner_interrupts() already said (run_tick) */
};

/*
 * What a ^C does, said at once on standard error (stdout holds the nodes'
 * output; JSON goes there as one object): the first lets the running
 * commands finish and starts no other node, the second stops them.
 */
static void run_tick(void *data)
{
	struct run_state *s = data;
	unsigned n = runner_interrupts();
	const char *text;

	if (n <= s->interrupts)
		return;
	s->interrupts = n;
	text = n == 1 ? "^C: stopping: no new node starts; the commands running now finish "
			"first (exit 130).  ^C again stops them at once."
		      : "^C again: cancelling: the commands running now are stopped (exit 130).";
	if (s->json) {
		json_t *o = json_object();
		char *line;
		json_object_set_new(o, "event", json_string("interrupt"));
		json_object_set_new(o, "interrupts", json_integer((json_int_t)n));
		json_object_set_new(o, "action", json_string(n == 1 ? "stopping" : "cancelling"));
		json_object_set_new(o, "text", json_string(text));
		line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
		cli_write_line(STDOUT_FILENO, NULL, line, strlen(line));
		free(line);
		json_decref(o);
	} else {
		struct strbuf line = STRBUF_INIT;
		/* on a terminal, over the "^C" the terminal echoed at the start of the line */
		if (isatty(STDERR_FILENO))
			strbuf_addch(&line, '\r');
		strbuf_addstr(&line, text);
		cli_write_line(STDERR_FILENO, NULL, line.buf, line.len);
		strbuf_release(&line);
	}
}

static int run_node_fn(struct runner_job *job, void *data)
{
	struct run_state *s = data;
	struct transport_result res = {0};
	struct error err = {0};
	int rc;
	int timeout_ms = s->timeout_ms >= 0 ? s->timeout_ms
					    : runner_job_node(job)->ssh.command_timeout * 1000;

	rc = runner_job_exec(job, PHASE_NONE, NULL, s->command, NULL, 0, timeout_ms, &res, &err);
	if (rc == TRANSPORT_ERR_CMD_TIMEOUT) {
		runner_job_set_exit(job, res.exit_status);
		runner_job_fail(job, "%s", err.msg);
		return 1;
	}
	if (rc < 0) {
		runner_job_fail(job, "%s", err.msg);
		return rc == TRANSPORT_ERR_CANCELLED ? 1 : -1;
	}
	runner_job_set_exit(job, res.exit_status);
	if (res.exit_status != 0) {
		runner_job_fail(job, "command exited with status %d", res.exit_status);
		return 1;
	}
	return 0;
}

static void json_print_node(struct run_state *s, size_t i, const struct node_status *st)
{
	json_t *o = json_object();
	char *text;

	json_object_set_new(o, "node", json_string(s->rn[i].name));
	json_object_set_new(o, "address", json_string(s->rn[i].address));
	json_object_set_new(o, "status", json_string(node_state_name(st->state)));
	if (st->exit_status >= 0)
		json_object_set_new(o, "exit_status", json_integer(st->exit_status));
	else
		json_object_set_new(o, "exit_status", json_null());
	json_object_set_new(o, "stdout", json_stringn(s->rn[i].out.buf, s->rn[i].out.len));
	json_object_set_new(o, "stderr", json_stringn(s->rn[i].err.buf, s->rn[i].err.len));
	json_object_set_new(o, "truncated",
			    json_boolean(s->rn[i].out.truncated || s->rn[i].err.truncated));
	json_object_set_new(o, "duration_ms",
			    json_integer((json_int_t)(st->ended_ms - (st->started_ms ? st->started_ms
										   : st->ended_ms))));
	if (st->state != NODE_DONE && st->reason)
		json_object_set_new(o, "error", json_string(st->reason));
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	cli_write_line(STDOUT_FILENO, NULL, text, strlen(text));
	free(text);
	json_decref(o);
}

static void run_on_event(const struct event *ev, const struct node_status *st, void *data)
{
	struct run_state *s = data;
	struct run_node *rn = &s->rn[ev->node];

	switch (ev->kind) {
	case EVENT_LINE:
		if (s->capture) {
			struct strbuf *sb = ev->stream == TRANSPORT_STDERR ? &rn->err : &rn->out;
			strbuf_addstr(sb, ev->text);
			strbuf_addch(sb, '\n');
			strbuf_addstr(&rn->all, ev->text);
			strbuf_addch(&rn->all, '\n');
		} else {
			cli_write_line(ev->stream == TRANSPORT_STDERR ? STDERR_FILENO
								      : STDOUT_FILENO,
				       rn->name, ev->text, strlen(ev->text));
		}
		break;
	case EVENT_NODE_STATE:
		if (ev->state < NODE_DONE)
			break;
		if (s->json) {
			json_print_node(s, ev->node, st);
		} else if (!s->capture && ev->state != NODE_DONE && ev->text) {
			struct strbuf line = STRBUF_INIT;
			strbuf_addf(&line, "%s: %s", rn->name,
				    ev->state == NODE_UNREACHABLE ? "unreachable: " : "");
			strbuf_addstr(&line, ev->text);
			cli_write_line(STDERR_FILENO, NULL, line.buf, line.len);
			strbuf_release(&line);
		}
		break;
	default:
		break;
	}
}

/* --group: nodes with the same output and result share one block. */
static void print_groups(struct run_state *s, const struct node_status *status)
{
	bool *done = xcalloc(s->nr, sizeof(*done));
	const char **names = xcalloc(s->nr, sizeof(*names));
	size_t i, j;

	for (i = 0; i < s->nr; i++) {
		struct strbuf block = STRBUF_INIT, head = STRBUF_INIT;
		char *list;
		size_t n = 0;

		if (done[i])
			continue;
		for (j = i; j < s->nr; j++) {
			if (done[j] || status[j].state != status[i].state ||
			    status[j].exit_status != status[i].exit_status ||
			    s->rn[j].all.len != s->rn[i].all.len ||
			    memcmp(s->rn[j].all.buf, s->rn[i].all.buf, s->rn[i].all.len))
				continue;
			if (status[i].state != NODE_DONE &&
			    strcmp(status[j].reason ? status[j].reason : "",
				   status[i].reason ? status[i].reason : ""))
				continue;
			done[j] = true;
			names[n++] = s->rn[j].name;
		}
		list = hostlist_compress(names, n);
		if (status[i].state == NODE_DONE)
			strbuf_addf(&head, "%s (%zu node%s, exit 0)", list, n, n == 1 ? "" : "s");
		else if (status[i].state == NODE_FAILED && status[i].exit_status >= 0)
			strbuf_addf(&head, "%s (%zu node%s, exit %d)", list, n, n == 1 ? "" : "s",
				    status[i].exit_status);
		else
			strbuf_addf(&head, "%s (%zu node%s, %s: %s)", list, n, n == 1 ? "" : "s",
				    node_state_name(status[i].state),
				    status[i].reason ? status[i].reason : "no reason");
		strbuf_addstr(&block, "----------------\n");
		strbuf_addstr(&block, head.buf);
		strbuf_addstr(&block, "\n----------------\n");
		strbuf_add(&block, s->rn[i].all.buf, s->rn[i].all.len);
		if (s->rn[i].all.truncated)
			strbuf_addstr(&block, "[output truncated at 4 MiB]\n");
		(void)write_all(STDOUT_FILENO, block.buf, block.len);
		strbuf_release(&block);
		strbuf_release(&head);
		free(list);
	}
	free(names);
	free(done);
}

static int run_exec(int nr_pos, char **pos)
{
	struct inventory *inv = NULL;
	const struct node **nodes = NULL;
	struct node_status *status = NULL;
	struct runner_summary sum;
	struct run_state s = {0};
	struct strbuf cmd = STRBUF_INIT;
	char *password = NULL, *passphrase = NULL;
	size_t nr = 0, i;
	int ret, k;

	if (opt_group && !strcmp(opt_output, "json")) {
		cmd_usage_error(&cmd_run, "--group and -o json do not go together");
		return EXIT_USAGE;
	}
	ret = cli_load_inventory("run", opt_inventory, &inv);
	if (ret)
		return ret;
	ret = cli_select_nodes("run", inv, opt_limit, &nodes, &nr);
	if (ret)
		goto out;

	/* The words after -- are joined like ssh does: the node's shell parses them. */
	for (k = 0; k < nr_pos; k++) {
		if (k)
			strbuf_addch(&cmd, ' ');
		strbuf_addstr(&cmd, pos[k]);
	}
	s.command = cmd.buf;
	s.nodes = nodes;
	s.nr = nr;
	s.json = !strcmp(opt_output, "json");
	s.capture = opt_group || s.json;
	s.rn = xcalloc(nr, sizeof(*s.rn));
	for (i = 0; i < nr; i++) {
		strbuf_init(&s.rn[i].out, 0);
		strbuf_init(&s.rn[i].err, 0);
		strbuf_init(&s.rn[i].all, 0);
		s.rn[i].out.max = s.rn[i].err.max = s.rn[i].all.max = CAPTURE_MAX;
		s.rn[i].name = nodes[i]->name;
		s.rn[i].address = nodes[i]->address;
	}
	s.timeout_ms = opt_timeout ? opt_timeout * 1000 : -1;

	if (opt_sudo) {
		password = cli_sudo_password(opt_ask_sudo, inv->ssh.sudo_password_file);
		ret = cli_node_sudo_passwords("run", inv, NULL);
		if (ret)
			goto out;
	}
	passphrase = cli_key_passphrase(inv);

	{
		struct runner_opts ro = {
			.ops = &transport_ssh_ops,
			.forks = opt_forks,
			.use_sudo = opt_sudo,
			.sudo_password = password,
			.identity_passphrase = passphrase,
			.passphrase_identity = inv->ssh.identity,
			.per_command_channels = opt_channels,
			/* What the user typed runs as ssh would run it: $$ is its own shell. */
			.own_shell = true,
			.node_fn = run_node_fn,
			.data = &s,
			.handle_signals = true,
		};
		event_consumers_add(&ro.consumers, run_on_event, run_tick, &s);
		runner_run(&ro, nodes, nr, &sum, &status);
	}
	if (opt_group)
		print_groups(&s, status);

	if (sum.interrupted)
		ret = EXIT_INTERRUPTED;
	else if (sum.failed || sum.unreachable || sum.cancelled)
		ret = EXIT_NODE_FAILED;
	else
		ret = EXIT_OK;
	if (ret != EXIT_OK && !s.json) {
		struct strbuf line = STRBUF_INIT;
		strbuf_addf(&line,
			    "provision run: %zu node%s: %zu ok, %zu failed, %zu unreachable, %zu "
			    "cancelled",
			    sum.nodes, sum.nodes == 1 ? "" : "s", sum.ok, sum.failed,
			    sum.unreachable, sum.cancelled);
		cli_write_line(STDERR_FILENO, NULL, line.buf, line.len);
		strbuf_release(&line);
	}
out:
	if (s.rn) {
		for (i = 0; i < nr; i++) {
			strbuf_release(&s.rn[i].out);
			strbuf_release(&s.rn[i].err);
			strbuf_release(&s.rn[i].all);
		}
		free(s.rn);
	}
	runner_status_release(status, nr);
	cli_free_secret(password);
	cli_free_secret(passphrase);
	strbuf_release(&cmd);
	free(nodes);
	inventory_free(inv);
	return ret;
}

const struct cmd cmd_run = {
	.name = "run",
	.summary = "run a command on nodes, output grouped or live",
	.usage = "-i FILE [-l NODES] [--forks N] [--sudo] [--group | -o json] -- COMMAND...",
	.description = "Run COMMAND with the node's /bin/sh on every selected node, at most --forks\n"
		       "at once, over one SSH session per node.  Lines are printed as they arrive,\n"
		       "prefixed with the node name; --group prints identical outputs once.",
	.options = run_options,
	.exec = run_exec,
	.min_pos = 1,
	.max_pos = -1,
};
