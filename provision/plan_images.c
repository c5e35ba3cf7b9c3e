/* plan_images: which node runs which image (images.h), with the values the roles render. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci.h"
#include "preflight.h"
#include "pulls.h"

struct image_values {
	const struct inventory *inv;
	const struct node *const *nodes;
	const struct facts *const *facts;
	const struct kube_minor *kube;
	const struct tval *gpu; /* {gpu: ...} */
};

/* The values a role's templates see on node i, before any step handed one. */
static struct tval *image_values(void *ctx, size_t i)
{
	const struct image_values *iv = ctx;
	static const struct facts none;
	struct tval *v =
	    plan_values(iv->inv, iv->nodes[i], iv->facts[i] ? iv->facts[i] : &none, iv->kube);

	tval_set(v, "gpu", tval_copy(tval_lookup(iv->gpu, "gpu")));
	tval_map_at(v, "set");
	tval_set(v, "profiles", tval_new_list()); /* no Nodes handed yet (roles/jupyterhub) */
	return v;
}

int plan_images(struct images_plan *out, const struct inventory *inv, const struct role_set *rs,
		const char *cache, const struct node *const *nodes,
		const struct facts *const *facts, size_t nr, const struct tval *gpu,
		struct error *err)
{
	struct image_values iv = {inv, nodes, facts, NULL, gpu};
	struct images_input in = {0};
	struct tval *own = NULL;
	bool *has_gpu = xcalloc(nr ? nr : 1, sizeof(bool));
	size_t i;
	int rc;

	iv.kube = kube_matrix_find(&rs->kube, inv->cluster.kubernetes_version);
	if (!gpu) {
		struct strbuf names = STRBUF_INIT;
		const struct tval *n;
		struct tval *g;

		own = tval_new_map();
		plan_gpu_values(own, nodes, facts, nr);
		/*
		 * A node whose facts are not known yet (fetch --images before the
		 * first up) is a GPU node when the inventory gives it GPUs: the
		 * roles' `{% if gpu.names %}` then lists the GPU Operator's
		 * cluster-wide images (the operator, NFD) for an offline bundle.
		 */
		g = tval_map_at(own, "gpu");
		n = tval_lookup(g, "names");
		if (n && n->kind == TVAL_STR && n->str)
			strbuf_addstr(&names, n->str);
		for (i = 0; i < nr; i++)
			if (!facts[i] && nodes[i]->gpus > 0)
				strbuf_addf(&names, "%s%s", names.len ? " " : "", nodes[i]->name);
		tval_set_str(g, "names", names.buf);
		strbuf_release(&names);
		iv.gpu = own;
	}
	for (i = 0; i < nr; i++)
		has_gpu[i] = facts[i] ? node_has_gpu(nodes[i], facts[i]) : nodes[i]->gpus > 0;
	in.inv = inv;
	in.roles = rs;
	in.artifact_cache = cache;
	in.nodes = nodes;
	in.nr = nr;
	in.gpu = has_gpu;
	in.values = image_values;
	in.ctx = &iv;
	rc = images_plan_make(out, &in, err);
	free(has_gpu);
	tval_free(own);
	return rc;
}

void plan_env_images(struct strbuf *sb, struct node_ctx *nc, const struct role *r)
{
	struct strbuf refs = STRBUF_INIT;

	if (nc->run->have_images)
		images_node_refs(&nc->run->images, nc->index, (const char *const *)r->pulls, &refs);
	static const char *const sources[] = {"auto", "registry", "bundle"};
	const struct cluster_settings *c = &nc->run->o->inv->cluster;
	char t[16];

	plan_env_export(sb, "PROVISION_IMAGES", refs.buf);
	plan_env_export(sb, "PROVISION_IMAGE_PULLS", PLAN_STR(PLAN_PULLS_PER_NODE));
	snprintf(t, sizeof(t), "%d", c->image_pull_timeout > 0 ? c->image_pull_timeout : 1800);
	plan_env_export(sb, "PROVISION_IMAGE_PULL_TIMEOUT", t);
	plan_env_export(sb, "PROVISION_IMAGE_STALL_TIMEOUT", PLAN_STR(PLAN_PULL_STALL_S));
	plan_env_export(sb, "PROVISION_IMAGE_SOURCE", sources[c->images_source]);
	strbuf_release(&refs);
}

/*
 * cluster.images.source: bundle -- every image of a node must be in this
 * machine's bundle for its architecture: a node for which one is not fails
 * in preflight, naming the images and the fetch command, before any node
 * is changed.
 */
static void bundle_preflight(struct run *run)
{
	const struct plan_opts *o = run->o;
	size_t i;

	for (i = 0; i < o->nr; i++) {
		struct strbuf refs = STRBUF_INIT, missing = STRBUF_INIT;
		const char *arch = o->nodes[i]->arch ? o->nodes[i]->arch : "amd64";
		char *w, *save = NULL;
		size_t n = 0;

		if (!run->res->nodes[i].have_facts || run->res->nodes[i].preflight_failed)
			continue;
		images_node_refs(&run->images, i, NULL, &refs);
		for (w = strtok_r(refs.buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			struct oci_image img;
			if (o->artifact_cache && oci_bundle_find(o->artifact_cache, w, arch, &img))
				continue;
			strbuf_addf(&missing, "%s%s", n++ ? ", " : "", w);
		}
		if (n) {
			struct event *ev = event_new(EVENT_MESSAGE, i);
			ev->phase = PHASE_PREFLIGHT;
			ev->role = xstrdup(phase_name(PHASE_PREFLIGHT));
			ev->step = xstrdup("error");
			ev->result = STEP_FAILED;
			ev->text =
			    xasprintf("%zu image%s of %s not in this machine's image bundle "
				      "(linux/%s), and cluster.images.source is bundle: %s "
				      "(hint: provision fetch -i %s --images, on a machine that "
				      "reaches the registries, then provision up again)",
				      n, n == 1 ? "" : "s", o->nodes[i]->name, arch, missing.buf,
				      o->inv->path);
			plan_forward(run, ev, i);
			event_free(ev);
			run->res->nodes[i].preflight_failed = true;
		}
		strbuf_release(&refs);
		strbuf_release(&missing);
	}
}

void plan_run_images(struct run *run)
{
	const struct plan_opts *o = run->o;
	const struct role_set *rs = o->roles;
	const struct facts **facts = xcalloc(o->nr ? o->nr : 1, sizeof(*facts));
	struct error err = {0};
	size_t i, ri, cp = 0;
	bool pulls = false;

	for (ri = 0; ri < rs->nr; ri++)
		for (i = 0; i < o->nr && rs->roles[ri].pulls && !pulls; i++)
			pulls = run->applies[i * rs->nr + ri];
	if (!pulls) {
		free(facts);
		return;
	}
	for (i = 0; i < o->nr; i++) {
		facts[i] = run->res->nodes[i].have_facts ? &run->res->nodes[i].facts : NULL;
		if (o->nodes[i]->roles & NODE_ROLE_CONTROL_PLANE)
			cp = i;
	}
	if (plan_images(&run->images, o->inv, rs, o->artifact_cache, o->nodes, facts, o->nr,
			run->gpu, &err) < 0) {
		struct event *ev = event_new(EVENT_MESSAGE, cp);
		ev->phase = PHASE_INIT;
		ev->role = xstrdup("images");
		ev->result = STEP_WARNED;
		ev->text = xasprintf("the image list: %s; the kubelet pulls on its own", err.msg);
		plan_forward(run, ev, cp);
		event_free(ev);
		free(facts);
		return;
	}
	run->have_images = true;
	if (o->inv->cluster.images_source == IMAGES_SOURCE_BUNDLE)
		bundle_preflight(run);
	for (i = 0; i < run->images.nr_unresolved; i++) {
		struct event *ev = event_new(EVENT_MESSAGE, cp);
		ev->phase = PHASE_INIT;
		ev->role = xstrdup("images");
		ev->result = STEP_WARNED;
		ev->text = xasprintf("cannot tell which image %s; the kubelet pulls it on its own "
				     "(hint: provision fetch -i %s --images says the same)",
				     run->images.unresolved[i], o->inv->path);
		plan_forward(run, ev, cp);
		event_free(ev);
	}
	free(facts);
}

/* ---- the bundle into the node (provision fetch --images) ---- */

/* The refs containerd on the node holds, complete (`ctr images check`); -1 when it cannot tell. */
static int node_images(struct node_ctx *nc, struct runner_job *job, struct strbuf *out,
		       struct error *err)
{
	struct transport_result res = {0};
	int rc;

	strbuf_reset(&nc->capture);
	nc->capture.max = 1 << 20;
	nc->capturing = nc->swallow = true;
	rc = runner_job_exec(job, PHASE_NONE, NULL,
			     "ctr -n k8s.io images check 2>/dev/null | "
			     "awk 'NR > 1 && $4 == \"complete\" { print $1 }'",
			     NULL, 0, nc->node->ssh.command_timeout * 1000, &res, err);
	nc->capturing = nc->swallow = false;
	nc->capture.max = CAPTURE_MAX;
	if (rc < 0)
		return -1;
	if (res.exit_status != 0)
		return error_set(err, -1, "ctr images check failed on the node (exit %d)",
				 res.exit_status);
	strbuf_reset(out);
	strbuf_addch(out, '\n');
	strbuf_add(out, nc->capture.buf, nc->capture.len);
	strbuf_reset(&nc->capture);
	return 0;
}

struct upload {
	struct node_ctx *nc;
	struct runner_job *job;
	const struct role *r;
	const char *ref, *path;
	uint64_t sent, total, last_ms;
	struct error *err;
};

static void post_progress(struct upload *u, bool force)
{
	struct event *ev;
	uint64_t now = now_ms();

	if (!force && now < u->last_ms + 1000)
		return;
	u->last_ms = now;
	ev = event_new(EVENT_PROGRESS, runner_job_index(u->job));
	ev->phase = u->r->phase;
	ev->role = xstrdup(u->r->name);
	ev->step = xstrdup("import");
	ev->text = xstrdup(u->ref);
	ev->done = u->sent;
	ev->total = u->total;
	runner_job_post(u->job, ev);
}

/* One piece of the archive, appended to the file on the node. */
static int upload_chunk(void *ctx, const void *p, size_t n)
{
	struct upload *u = ctx;
	struct transport_result res = {0};
	struct strbuf cmd = STRBUF_INIT;
	int rc;

	if (runner_job_cancelled(u->job))
		return error_set(u->err, -1, "cancelled");
	strbuf_addstr(&cmd, "cat >>");
	strbuf_add_sh_quoted(&cmd, u->path);
	rc = runner_job_exec(u->job, PHASE_NONE, NULL, cmd.buf, p, n,
			     u->nc->node->ssh.command_timeout * 1000, &res, u->err);
	strbuf_release(&cmd);
	if (rc < 0)
		return rc;
	if (res.exit_status != 0)
		return error_set(u->err, -1, "cannot write '%s' on the node (disk full?)", u->path);
	u->sent += n;
	post_progress(u, u->sent == u->total);
	return 0;
}

#define IMPORT_DIR   "/var/lib/provision/images"
#define IMPORT_CHUNK (4u << 20)

int plan_import_images(struct node_ctx *nc, struct runner_job *job, const struct role *r)
{
	const struct plan_opts *o = nc->run->o;
	const char *arch = nc->node->arch ? nc->node->arch : "amd64";
	struct strbuf refs = STRBUF_INIT, have = STRBUF_INIT, detail = STRBUF_INIT;
	struct oci_image *imgs = NULL;
	struct error err = {0};
	enum step_result result = STEP_UNCHANGED;
	size_t nr = 0, alloc = 0, imported = 0, i;
	uint64_t t0 = now_ms(), bytes = 0;
	char *p, *word, *save = NULL;
	int ret = 0;

	if (!nc->run->have_images || o->check_only)
		return 0;
	images_node_refs(&nc->run->images, nc->index, (const char *const *)r->pulls, &refs);
	if (!refs.len)
		goto out;
	/*
	 * What the node lacks, said once per image ("queued": the run's
	 * estimate counts the pull from the record of earlier pulls); a node
	 * that cannot tell (containerd down) is the pull step's to say.
	 */
	if (node_images(nc, job, &have, &err) < 0)
		goto out;
	for (word = strtok_r(refs.buf, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
		struct strbuf line = STRBUF_INIT;
		bool lacks;
		strbuf_addf(&line, "\n%s\n", word);
		lacks = !strstr(have.buf, line.buf);
		strbuf_release(&line);
		if (!lacks)
			continue;
		{
			struct event *ev = event_new(EVENT_PROGRESS, runner_job_index(job));
			ev->phase = r->phase;
			ev->role = xstrdup(r->name);
			ev->step = xstrdup("queued");
			ev->text = xstrdup(word);
			runner_job_post(job, ev);
		}
		ALLOC_GROW(imgs, nr + 1, alloc);
		if (o->artifact_cache && o->inv->cluster.images_source != IMAGES_SOURCE_REGISTRY &&
		    oci_bundle_find(o->artifact_cache, word, arch, &imgs[nr]))
			nr++;
	}
	if (!nr)
		goto out; /* nothing of this node's in the bundle: nothing to say */
	plan_post_step(job, EVENT_STEP_START, r, "import", STEP_NONE, 0, NULL);
	for (i = 0; i < nr && ret == 0; i++) {
		struct strbuf cmd = STRBUF_INIT, line = STRBUF_INIT;
		struct transport_result res = {0};
		char *path = xasprintf(IMPORT_DIR "/import-%zu.tar", i);
		struct upload u = {nc, job, r, imgs[i].ref, path, 0, 0, 0, &err};

		strbuf_addf(&line, "\n%s\n", imgs[i].ref);
		p = strstr(have.buf, line.buf);
		strbuf_release(&line);
		if (p) {
			free(path);
			continue; /* the node has it: nothing to send */
		}
		if (oci_archive_size(o->artifact_cache, &imgs[i], &u.total, &err) < 0) {
			result = STEP_FAILED;
			strbuf_addf(&detail, "%s", err.msg);
			ret = 1;
			free(path);
			break;
		}
		strbuf_addstr(&cmd,
			      "mkdir -p " IMPORT_DIR " && chmod 0700 " IMPORT_DIR " && rm -f ");
		strbuf_add_sh_quoted(&cmd, path);
		if (runner_job_exec(job, PHASE_NONE, NULL, cmd.buf, NULL, 0,
				    nc->node->ssh.command_timeout * 1000, &res, &err) < 0 ||
		    res.exit_status != 0 ||
		    oci_archive_write(o->artifact_cache, &imgs[i], IMPORT_CHUNK, upload_chunk, &u,
				      &err) != 0) {
			result = STEP_FAILED;
			strbuf_addf(&detail, "cannot send %s to the node: %s", imgs[i].ref,
				    err.msg[0] ? err.msg : "the node refused the file");
			ret = err.code == TRANSPORT_ERR_LOST ? -1 : 1;
		} else {
			/* no unpack: containerd's CRI unpacks on the first container, as after a
			 * pull */
			strbuf_reset(&cmd);
			strbuf_addstr(&cmd, "ctr -n k8s.io images import --no-unpack ");
			strbuf_add_sh_quoted(&cmd, path);
			strbuf_addstr(&cmd, " >/dev/null && rm -f ");
			strbuf_add_sh_quoted(&cmd, path);
			strbuf_reset(&nc->tail);
			if (runner_job_exec(job, r->phase, "import", cmd.buf, NULL, 0,
					    nc->node->ssh.command_timeout * 1000, &res, &err) < 0) {
				result = STEP_FAILED;
				strbuf_addf(&detail, "ctr images import of %s: %s", imgs[i].ref,
					    err.msg);
				ret = -1;
			} else if (res.exit_status != 0) {
				char *why = plan_failure_text(nc, "ctr images import failed");
				result = STEP_FAILED;
				strbuf_addf(&detail, "%s (%s)", why, imgs[i].ref);
				free(why);
				ret = 1;
			} else {
				imported++;
				bytes += imgs[i].bytes;
			}
		}
		strbuf_release(&cmd);
		free(path);
	}
	if (ret == 0 && imported) {
		char b[32];
		result = STEP_CHANGED;
		pulls_bytes(b, sizeof(b), bytes);
		strbuf_addf(&detail, "imported %zu image%s (%s) from this machine's bundle",
			    imported, imported == 1 ? "" : "s", b);
	} else if (ret == 0) {
		strbuf_addf(&detail, "the %zu image%s of the bundle for it already there", nr,
			    nr == 1 ? " is" : "s are");
	}
	plan_post_step_end(job, r, "import", result, now_ms() - t0, 0,
			   detail.len ? detail.buf : NULL);
	plan_record(nc, r, "import", false, result, now_ms() - t0, detail.len ? detail.buf : NULL);
	if (result == STEP_FAILED)
		runner_job_fail(job, "%s › import: %s", r->name, detail.buf);
out:
	free(imgs);
	strbuf_release(&refs);
	strbuf_release(&have);
	strbuf_release(&detail);
	return ret;
}
