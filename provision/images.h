/*
 * images: the container images each node of a cluster will run, derived
 * from what is pinned -- roles/kubernetes.yaml, the chart archives of
 * roles/artifacts.yaml as they sit in this machine's artifact cache, the
 * manifests and values provision renders -- never from a list typed by
 * hand.  The pull phase (roles images-init and images-addons: the node's
 * share, as $PROVISION_IMAGES) and `provision fetch --images` (the offline
 * bundle) both read it.
 *
 * What a role's workloads run is declared in its role.yaml (`images:`,
 * roles/README.md), as templates over the values the role's own files are
 * rendered from:
 *
 *   chart: {artifact: gpu-operator-chart, values: values.yaml.tmpl}
 *   images:
 *     - {ref: "{{ values.devicePlugin.repository }}/...:{{ ... }}", on: gpu}
 *     - {manifest: kube-flannel.yml.tmpl, on: cluster}
 *
 * With `chart:`, `values` is the archive's values.yaml (each subchart's
 * under its name, Helm's coalescing: the parent's values for it over its
 * own) with the values template rendered for the control plane merged
 * over it (a null deletes a key, as in Helm), `chart` the archive's
 * Chart.yaml and `subcharts.NAME` each subchart's.  A `ref` is rendered
 * once per node it may run on (`on`: cluster, control-plane, workers, gpu),
 * with that node's values; an empty result means no image there.  A
 * `manifest` is every `image:` of the rendered file.  References are
 * normalised as containerd's CRI does (`traefik:v2.11.0` ->
 * `docker.io/library/traefik:v2.11.0`).
 *
 * Pure apart from reading chart archives: values come from a callback, so
 * the unit tests need no node.  Ownership: a struct images_plan owns
 * everything in it; images_plan_release() frees it.  Not thread-safe while
 * being built; read-only afterwards.
 */
#ifndef PROVISION_IMAGES_H
#define PROVISION_IMAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory.h"
#include "role.h"
#include "template.h"
#include "util.h"

/* A reference longer than this is refused (a node prints them back to us). */
#define IMAGES_REF_MAX 512

struct images_input {
	const struct inventory *inv;
	const struct role_set *roles;
	const char *artifact_cache; /* where the chart archives are (artifacts.h) */
	/* The nodes to compute for (every control-plane and worker node of the run). */
	const struct node *const *nodes;
	size_t nr;
	/* Whether nodes[i] has a GPU (facts, else the inventory's gpus). */
	const bool *gpu;
	/*
	 * The template values of nodes[i] (the roles' templates' values:
	 * node, facts, cluster, kube, gpu, hub, nfs, an empty `set` and
	 * `profiles`); a new tree the caller's callback makes, images frees.
	 */
	struct tval *(*values)(void *ctx, size_t i);
	void *ctx;
};

struct images_entry {
	char *ref;		 /* normalised */
	const struct role *role; /* whose workload runs it */
	bool *on;		 /* per input node: it runs there */
};

struct images_plan {
	size_t nr_nodes;
	struct images_entry *items; /* one per (ref, role), in role order */
	size_t nr, alloc;
	/* What could not be resolved: "role 'x': why", one per problem. */
	char **unresolved;
	size_t nr_unresolved;
};

/*
 * Work out which node runs which image.  Returns 0 (what could not be
 * resolved is in plan->unresolved: a chart archive not in the cache, a
 * value the chart does not have), or -1 with err set on a programming
 * or input error that makes the whole list meaningless.
 */
int images_plan_make(struct images_plan *plan, const struct images_input *in, struct error *err);
void images_plan_release(struct images_plan *plan);

/*
 * The refs node i needs from the roles named in `roles` (NULL-terminated;
 * NULL: every role), each once, appended to `out` space-separated.
 * Returns how many.
 */
size_t images_node_refs(const struct images_plan *plan, size_t i, const char *const *roles,
			struct strbuf *out);

/* Whether `ref` is among the refs node i needs from `roles` (as above). */
bool images_node_needs(const struct images_plan *plan, size_t i, const char *const *roles,
		       const char *ref, size_t len);

/*
 * Normalise an image reference as the CRI does (docker.io default
 * registry, library/ for a one-part Docker Hub name, :latest when neither
 * tag nor digest): 0 with the result in out, -1 with why in err when it is
 * not a reference (characters, lengths, an empty part).
 */
int images_normalize(const char *ref, size_t len, struct strbuf *out, struct error *err);

/* The registry host of a normalised reference ("registry.k8s.io"), appended to out. */
void images_registry(const char *ref, struct strbuf *out);

/*
 * A chart archive (.tgz, as `helm package` writes it): its values.yaml and
 * Chart.yaml, and those of its subcharts (folders or nested archives under
 * charts/), as template values: `values` (the subcharts' coalesced under
 * their names), `chart`, `subcharts.NAME`.  Sizes are bounded.  Returns 0,
 * or -1 with err set (not gzip, not tar, no Chart.yaml, bad YAML).
 */
int images_chart_load(struct tval **out, const void *tgz, size_t len, struct error *err);

/*
 * Merge the YAML text `yaml` over the map `into` as Helm coalesces user
 * values over a chart's: maps merge key by key, anything else replaces,
 * a null removes the key.  0, or -1 with err set.
 */
int images_values_merge(struct tval *into, const char *name, const char *yaml, size_t len,
			struct error *err);

/* Every `image:` value of the YAML documents in `yaml`, normalised, appended to refs (strv). */
int images_manifest_refs(char ***refs, size_t *nr, const char *name, const char *yaml, size_t len,
			 struct error *err);

#endif
