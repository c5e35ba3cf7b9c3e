/* plan_images: which node runs which image (images.h), with the values the roles render. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preflight.h"

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
		own = tval_new_map();
		plan_gpu_values(own, nodes, facts, nr);
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
	plan_env_export(sb, "PROVISION_IMAGES", refs.buf);
	plan_env_export(sb, "PROVISION_IMAGE_PULLS", "3");
	plan_env_export(sb, "PROVISION_IMAGE_PULL_TIMEOUT", PLAN_STR(PLAN_PULL_TIMEOUT_S));
	plan_env_export(sb, "PROVISION_IMAGE_STALL_TIMEOUT", "60");
	plan_env_export(sb, "PROVISION_IMAGE_SOURCE", "auto");
	strbuf_release(&refs);
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
		ev->phase = xstrdup("init");
		ev->role = xstrdup("images");
		ev->result = STEP_WARNED;
		ev->text = xasprintf("the image list: %s; the kubelet pulls on its own", err.msg);
		plan_forward(run, ev, cp);
		event_free(ev);
		free(facts);
		return;
	}
	run->have_images = true;
	for (i = 0; i < run->images.nr_unresolved; i++) {
		struct event *ev = event_new(EVENT_MESSAGE, cp);
		ev->phase = xstrdup("init");
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
