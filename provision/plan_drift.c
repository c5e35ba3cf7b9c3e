/*
 * plan_drift: provision check's drift checks.
 *
 * Drift is what the next `up` would change on a cluster that `up` left as
 * the inventory says: a file edited by hand (containerd's config.toml), a
 * Helm release upgraded by hand, a held package unheld.  The roles' own
 * checks already tell (a template's hash and diff, pv_helm_state,
 * kube-packages' dpkg query); `check` runs them as `plan` does
 * (plan_opts.drift) and this turns every step that would change into one
 * "drift" check of that node, failed, with the differing lines, keys or
 * packages, and a node where nothing would change into one pass.  A step
 * whose check failed outright fails its drift check too: it cannot tell.
 *
 * A role no `up` ever installed on the node (every file it puts there is
 * missing: a hub added to the inventory, `up` not run since) is not
 * drift: nothing was changed by hand.  Its steps and files make one
 * "drift" warning per node, "not installed yet", naming the roles; the
 * next `up` installs them.  A missing file of a role that is installed
 * (removed by hand) is drift.  (Before, such files were drift rows with
 * an empty observed value: an artifact's detail has no diff line.)
 */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What `check` shows of one step's detail, on one line. */
#define DRIFT_OBSERVED_MAX 600

/*
 * The lines of detail worth a table row, cleaned (node text), joined with
 * "; ": of a file's unified diff only its changed lines (not the ---/+++
 * header and @@ hunks, nor context), of a step's output every line.
 */
static void drift_summary(struct strbuf *out, const char *detail, bool is_file)
{
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	const char *p = detail;
	bool first = true;

	while (*p && out->len < DRIFT_OBSERVED_MAX) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		bool keep = len > 0;

		strbuf_reset(&line);
		strbuf_add(&line, p, len);
		p += len + (nl ? 1 : 0);
		if (is_file && keep)
			keep = (line.buf[0] == '-' || line.buf[0] == '+' ||
				!strncmp(line.buf, "new file", 8)) &&
			       strncmp(line.buf, "--- ", 4) && strncmp(line.buf, "+++ ", 4);
		if (!keep)
			continue;
		text_clean_line(&clean, line.buf);
		strbuf_rtrim(&clean);
		if (!clean.len)
			continue;
		if (!first)
			strbuf_addstr(out, "; ");
		strbuf_add(out, clean.buf, clean.len);
		first = false;
	}
	if (out->len > DRIFT_OBSERVED_MAX) {
		strbuf_setlen(out, DRIFT_OBSERVED_MAX);
		/* not in the middle of a UTF-8 sequence */
		while (out->len && ((unsigned char)out->buf[out->len - 1] & 0xc0) == 0x80)
			strbuf_setlen(out, out->len - 1);
		if (out->len && (unsigned char)out->buf[out->len - 1] >= 0xc0)
			strbuf_setlen(out, out->len - 1);
		strbuf_addstr(out, " …");
	} else if (*p) {
		strbuf_addstr(out, " …");
	}
	strbuf_release(&line);
	strbuf_release(&clean);
}

/* A file step whose file is not on the node (pv_diff's "new file", an absent artifact). */
static bool file_missing(const struct plan_step_result *s)
{
	return s->is_file && s->result == STEP_WOULD_CHANGE && s->detail &&
	       !strncmp(s->detail, "new file", 8);
}

/* Role r has files on this node and none of them is there: never installed. */
static bool never_installed(const struct plan_node *pn, const struct role *r)
{
	size_t k, files = 0, missing = 0;

	for (k = 0; k < pn->nr_steps; k++) {
		if (pn->steps[k].role != r || !pn->steps[k].is_file)
			continue;
		files++;
		missing += file_missing(&pn->steps[k]);
	}
	return files && missing == files;
}

void plan_drift_checks(struct run *run)
{
	const struct plan_opts *o = run->o;
	struct plan_result *res = run->res;
	struct validation *v = &res->validation;
	struct strbuf obs = STRBUF_INIT, later = STRBUF_INIT;
	size_t i, k;

	for (i = 0; i < o->nr; i++) {
		const struct plan_node *pn = &res->nodes[i];
		unsigned differ = 0, checked = 0;
		const struct role *named = NULL;

		/* Unreachable or refused by preflight: the node's own checks say so. */
		if (!pn->have_facts || pn->preflight_failed)
			continue;
		strbuf_reset(&later);
		for (k = 0; k < pn->nr_steps; k++) {
			const struct plan_step_result *s = &pn->steps[k];
			const char *what;
			size_t before;

			checked++;
			if (s->result == STEP_WOULD_CHANGE)
				what = "";
			else if (s->result == STEP_FAILED)
				what = "cannot tell: ";
			else
				continue;
			if (s->result == STEP_WOULD_CHANGE && never_installed(pn, s->role)) {
				/* the steps of a role follow each other: its name once */
				if (named != s->role)
					strbuf_addf(&later, "%s%s", later.len ? ", " : "",
						    s->role->name);
				named = s->role;
				continue;
			}
			differ++;
			strbuf_reset(&obs);
			strbuf_addf(&obs, "%s › %s: %s", s->role->name, s->step, what);
			before = obs.len;
			if (s->detail && *s->detail)
				drift_summary(&obs, s->detail, s->is_file);
			if (obs.len == before)
				strbuf_addstr(&obs,
					      s->is_file ? "differs" : "not as provision left it");
			validation_add(
			    v, "drift", i, CHECK_FAIL, "as the last 'provision up' left it",
			    obs.buf,
			    s->result == STEP_FAILED
				? "see the step's error with 'provision plan -v'"
				: "'provision plan' shows the difference; 'provision up' "
				  "puts it back (or change the inventory or the roles "
				  "to keep it)");
		}
		if (later.len) {
			strbuf_reset(&obs);
			strbuf_addf(&obs, "not installed yet: %s (none of their files is on the node)",
				    later.buf);
			validation_add(v, "drift", i, CHECK_WARN, "as the last 'provision up' left it",
				       obs.buf, "'provision up' installs them");
		}
		if (!differ && !later.len) {
			strbuf_reset(&obs);
			strbuf_addf(&obs, "as provision left it (%u steps checked)", checked);
			validation_add(v, "drift", i, CHECK_PASS,
				       "as the last 'provision up' left it", obs.buf, NULL);
		}
	}
	strbuf_release(&obs);
	strbuf_release(&later);
}
