/* plan_files: templates and artifacts to the node, ::fetch'ed files from it. */
#include "plan_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"

void plan_clear_fetches(struct node_ctx *nc)
{
	size_t i;

	for (i = 0; i < nc->nr_fetches; i++)
		free(nc->fetches[i]);
	free(nc->fetches);
	nc->fetches = NULL;
	nc->nr_fetches = 0;
}

void plan_node_ctx_release(struct node_ctx *nc)
{
	strbuf_release(&nc->tail);
	free(nc->skip_reason);
	free(nc->hint);
	free(nc->note);
	free(nc->protocol_error);
	nc->skip_reason = nc->hint = nc->note = nc->protocol_error = NULL;
	plan_clear_fetches(nc);
	while (nc->nr_progress)
		free(nc->progress_refs[--nc->nr_progress]);
	free(nc->progress_refs);
	free(nc->progress_ms);
	nc->progress_refs = NULL;
	nc->progress_ms = NULL;
}

/* Copy the files the step asked for into the state folder; 0, or 1 with *detail set. */
int plan_do_fetches(struct node_ctx *nc, struct runner_job *job, char **detail)
{
	const char *state = nc->run->o->state_dir;
	struct transport_result res = {0};
	struct error err = {0};
	size_t i;
	int rc, ret = 0;

	for (i = 0; i < nc->nr_fetches && !ret; i++) {
		char *nl = strchr(nc->fetches[i], '\n');
		struct strbuf cmd = STRBUF_INIT;
		char *priv;

		*nl = '\0';
		if (!state) {
			*detail = xasprintf("cannot keep '%s': no state folder", nc->fetches[i]);
			ret = 1;
			break;
		}
		strbuf_addstr(&cmd, "cat -- ");
		strbuf_add_sh_quoted(&cmd, nc->fetches[i]);
		strbuf_reset(&nc->capture);
		nc->capture.max = 1 << 20;
		nc->capturing = nc->swallow = true;
		rc = runner_job_exec(job, PHASE_NONE, NULL, cmd.buf, NULL, 0,
				     nc->node->ssh.command_timeout * 1000, &res, &err);
		nc->capturing = nc->swallow = false;
		strbuf_release(&cmd);
		if (rc < 0 || res.exit_status != 0 || nc->capture.truncated) {
			*detail = xasprintf("cannot read '%s' on the node%s%s", nc->fetches[i],
					    rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
			ret = 1;
			break;
		}
		if (!strcmp(nl + 1, "admin.conf")) {
			/* The admin's kubeconfig, and this machine's for /readyz: it must not
			 * send requests elsewhere nor run commands (http.h). */
			const struct inventory *inv = nc->run->o->inv;
			const char *host = inventory_api_host(inv);
			/* the API endpoint: the control plane, or cluster.api_endpoint */
			if (http_kubeconfig_check(nc->capture.buf, nc->capture.len,
						  host ? host : nc->node->address,
						  inventory_api_port(inv), &err) < 0) {
				*detail =
				    xasprintf("'%s' (%s) from node '%s' is refused: %s; "
					      "the copy on this machine is unchanged",
					      nl + 1, nc->fetches[i], nc->node->name, err.msg);
				explicit_bzero(nc->capture.buf, nc->capture.len);
				strbuf_reset(&nc->capture);
				ret = 1;
				break;
			}
		}
		priv = xasprintf("%s/private", state);
		(void)mkdir(state, 0700);
		rc = write_private_file(priv, nl + 1, nc->capture.buf, nc->capture.len);
		if (rc < 0) {
			*detail = xasprintf("cannot write '%s/%s': %s", priv, nl + 1, strerror(-rc));
			ret = 1;
		}
		explicit_bzero(nc->capture.buf, nc->capture.len);
		strbuf_reset(&nc->capture);
		free(priv);
	}
	plan_clear_fetches(nc);
	return ret;
}


/* A file step's commands print no protocol: any such line is a violation. */
static void file_protocol_reset(struct node_ctx *nc, const struct role *r)
{
	free(nc->protocol_error);
	nc->protocol_error = NULL;
	nc->role = r;
	nc->step = NULL;
}

static void file_protocol_check(struct node_ctx *nc, enum step_result *result, char **detail,
				int *ret)
{
	if (!nc->protocol_error || *ret < 0)
		return;
	*result = STEP_FAILED;
	free(*detail);
	*detail = xstrdup(nc->protocol_error);
	*ret = 1;
}

/*
 * The command of a file step's request: "set -- DEST SHA MODE OWNER", then
 * roles/lib.sh and the script (tail) that uses them, all run by the agent's
 * subshell; the request's stdin is left for the content.
 */
static void file_command(struct strbuf *cmd, const struct role_set *rs, const char *dest,
			 const char *sha, const char *mode, const char *owner, const char *tail)
{
	strbuf_addstr(cmd, "set -- ");
	strbuf_add_sh_quoted(cmd, dest);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, sha);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, mode);
	strbuf_addch(cmd, ' ');
	strbuf_add_sh_quoted(cmd, owner);
	strbuf_addch(cmd, '\n');
	strbuf_add(cmd, rs->lib, rs->lib_len);
	strbuf_addch(cmd, '\n');
	strbuf_addstr(cmd, tail);
}

int plan_deploy_file(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		       const struct role_template *t)
{
	const struct plan_opts *o = nc->run->o;
	struct transport *tp = runner_job_transport(job);
	struct strbuf content = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	struct tval *vals;
	enum step_result result;
	char *detail = NULL, *drift = NULL, sha[65] = "", mode[8];
	uint64_t t0 = now_ms();
	int rc, ret = 0;

	plan_post_step(job, EVENT_STEP_START, r, t->dest, STEP_NONE, 0, NULL);
	file_protocol_reset(nc, r);
	vals = plan_node_values(nc);
	rc = plan_add_profiles(vals, &err);
	if (rc < 0) {
		tval_free(vals);
		result = STEP_FAILED;
		detail = xasprintf("cannot work out the hub's profiles from the handed nodes: %s",
				   err.msg);
		ret = 1;
		goto done;
	}
	rc = template_render(t->tmpl, vals, &content, &err);
	tval_free(vals);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xasprintf("cannot render: %s", err.msg);
		ret = 1;
		goto done;
	}
	transport_sha256_hex(sha, content.buf, content.len);
	snprintf(mode, sizeof(mode), "%o", t->mode);
	/* First the cheap question, without the content: is the node's copy
	 * already this one?  On a no-change run that is all (no upload, no
	 * second shell); otherwise the content goes up for the diff below. */
	file_command(&cmd, o->roles, t->dest, sha, mode, t->owner, "pv_same \"$@\"\n");
	strbuf_reset(&nc->tail);
	rc = runner_job_exec(job, r->phase, t->dest, cmd.buf, NULL, 0,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	strbuf_reset(&cmd);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
		goto done;
	}
	if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
		goto done;
	}
	/* The content is the command's stdin, for the diff; when the node's copy
	 * is replaced, that diff goes to the run record (the drift). */
	file_command(&cmd, o->roles, t->dest, sha, mode, t->owner,
		     o->check_only ? "pv_diff \"$1\"\n"
				   : "pv_prepare \"$1\" \"$2\" \"$3\" \"$4\" && exit 0\n"
				     "s=$?; [ \"$s\" = 1 ] || exit \"$s\"; pv_diff \"$1\"; exit 1\n");
	strbuf_reset(&nc->tail);
	strbuf_reset(&nc->capture);
	nc->capturing = true;
	rc = runner_job_exec(job, r->phase, t->dest, cmd.buf, content.buf, content.len,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	nc->capturing = false;
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
	} else if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
	} else if (res.exit_status != 1) {
		result = STEP_FAILED;
		detail = plan_failure_text(nc, "cannot inspect the file on the node");
		ret = 1;
	} else if (o->check_only) {
		result = STEP_WOULD_CHANGE;
		detail = strbuf_detach(&nc->capture, NULL);
	} else {
		bool skipped = false;
		rc = o->ops->put_file(tp, t->dest, content.buf, content.len, t->mode, t->owner,
				      &skipped, &err);
		if (rc < 0) {
			result = STEP_FAILED;
			detail = xasprintf("cannot write the file: %s", err.msg);
			ret = rc == TRANSPORT_ERR_LOST ? -1 : 1;
		} else {
			result = STEP_CHANGED;
			drift = strbuf_detach(&nc->capture, NULL);
		}
	}
done:
	file_protocol_check(nc, &result, &detail, &ret);
	plan_post_step(job, EVENT_STEP_END, r, t->dest, result, now_ms() - t0, detail);
	plan_record(nc, r, t->dest, true, result, now_ms() - t0, detail);
	plan_record_file(nc, sha[0] ? sha : NULL, t->mode, t->owner, t->src, false, &content, drift);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, t->dest, detail ? detail : "failed");
	free(detail);
	explicit_bzero(content.buf, content.len);
	strbuf_release(&content);
	strbuf_release(&cmd);
	return ret;
}

/*
 * An artifact of the manifest, from this machine's cache to the node: put
 * only when the node's copy differs (hash, mode, owner), like a template.
 */
int plan_deploy_artifact(struct node_ctx *nc, struct runner_job *job, const struct role *r,
			   const struct role_artifact *ra)
{
	const struct plan_opts *o = nc->run->o;
	const struct artifact *a = artifact_find(&o->roles->artifacts, ra->name);
	struct strbuf content = STRBUF_INIT, cmd = STRBUF_INIT;
	struct transport_result res = {0};
	struct error err = {0};
	enum step_result result;
	char *detail = NULL, mode[8];
	uint64_t t0 = now_ms();
	int rc, ret = 0;

	plan_post_step(job, EVENT_STEP_START, r, ra->dest, STEP_NONE, 0, NULL);
	file_protocol_reset(nc, r);
	if (!a || !a->sha256) {
		result = STEP_FAILED;
		detail = xasprintf("artifact '%s' has no pinned sha256", ra->name);
		ret = 1;
		goto done;
	}
	snprintf(mode, sizeof(mode), "%o", ra->mode);
	/* check: 4 when the node has no copy at all (drift tells "not installed yet") */
	file_command(&cmd, o->roles, ra->dest, a->sha256, mode, ra->owner,
		     o->check_only ? "[ -f \"$1\" ] || exit 4\n"
				     "[ \"$(sha256sum <\"$1\" | cut -c1-64)\" = \"$2\" ]\n"
				   : "pv_prepare \"$1\" \"$2\" \"$3\" \"$4\"\n");
	strbuf_reset(&nc->tail);
	rc = runner_job_exec(job, r->phase, ra->dest, cmd.buf, NULL, 0,
			     nc->node->ssh.command_timeout * 1000, &res, &err);
	if (rc < 0) {
		result = STEP_FAILED;
		detail = xstrdup(err.msg);
		ret = -1;
	} else if (res.exit_status == 0) {
		result = STEP_UNCHANGED;
	} else if (o->check_only && res.exit_status == 4) {
		/* as pv_diff says of a template that is not there */
		result = STEP_WOULD_CHANGE;
		detail = xasprintf("new file %s: artifact %s (sha256 %.12s…)", ra->dest, a->name,
				   a->sha256);
	} else if (res.exit_status != 1) {
		result = STEP_FAILED;
		detail = plan_failure_text(nc, "cannot inspect the file on the node");
		ret = 1;
	} else if (o->check_only) {
		result = STEP_WOULD_CHANGE;
		detail = xasprintf("the node's copy differs from artifact %s (sha256 %.12s…)",
				   a->name, a->sha256);
	} else if (!o->artifact_cache ||
		   artifact_read(o->artifact_cache, a, &content, &err) < 0) {
		result = STEP_FAILED;
		detail = o->artifact_cache ? xstrdup(err.msg) : xstrdup("no artifact cache");
		ret = 1;
	} else {
		bool skipped = false;
		rc = o->ops->put_file(runner_job_transport(job), ra->dest, content.buf, content.len,
				      ra->mode, ra->owner, &skipped, &err);
		if (rc < 0) {
			result = STEP_FAILED;
			detail = xasprintf("cannot write the file: %s", err.msg);
			ret = rc == TRANSPORT_ERR_LOST ? -1 : 1;
		} else {
			result = STEP_CHANGED;
		}
	}
done:
	file_protocol_check(nc, &result, &detail, &ret);
	plan_post_step(job, EVENT_STEP_END, r, ra->dest, result, now_ms() - t0, detail);
	plan_record(nc, r, ra->dest, true, result, now_ms() - t0, detail);
	plan_record_file(nc, a ? a->sha256 : NULL, ra->mode, ra->owner, ra->name, true, NULL, NULL);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › %s: %s", r->name, ra->dest, detail ? detail : "failed");
	free(detail);
	strbuf_release(&content);
	strbuf_release(&cmd);
	return ret;
}
