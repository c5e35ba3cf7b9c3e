/*
 * plan: the phases of `provision up` (and `plan`, its read-only twin) run
 * on the selected nodes.
 *
 * Theory of operation
 * -------------------
 * 1. facts: one runner pass runs facts.sh on every node (sessions are kept
 *    open for the next pass).
 * 2. preflight (main thread): the inventory against every node's facts; a
 *    node with a fatal problem fails alone and is left out.
 * 3. the pipeline: runner passes in which each node, on its own worker
 *    and session, goes through every role that applies to it, in role
 *    order (phase, dependencies, name): render and upload the role's
 *    templates, then for each step `check`, `apply` when needed, and
 *    `check` again.  Nodes do not wait for each other, except where a role
 *    says `wait_for` or `after`: the role list is cut into segments before
 *    each role that waits for (or comes after) a role of its own segment,
 *    and each segment is one pass over the nodes, so such a role starts
 *    only when those roles have finished on every node.  (Waiting inside a
 *    pass would deadlock a window smaller than the node count: the nodes
 *    holding the slots would wait for nodes that never get one.)  A failed
 *    step stops its node; roles it did not reach count as failed, and a
 *    role that waits for a role that failed anywhere is skipped with the
 *    reason; a role that only comes `after` it runs all the same.
 *    Sessions stay open from pass to pass.
 *
 * In check-only mode (`provision plan`) only `check` runs and rendered
 * files are compared (diff on the node) instead of uploaded: nothing on a
 * node changes.
 *
 * Values handed with ::set/::secret go through the run's exchange
 * (exchange.h): kept with their sender node, role and name when the role
 * declares them (role.yaml `hands`), read by the steps and templates they
 * are for once the sender finished its role; anything else in protocol
 * form fails the step as a protocol violation.  Declared secrets are
 * registered with the run's `struct secrets` before the line that carried
 * them could reach any view.
 *
 * Everything the views see arrives as events on the main thread, with the
 * run-wide status record of the node (struct node_status).
 *
 * Rooms: plan.c is the executor above (passes, barriers, events); the work
 * it drives lives beside it -- template values (plan_values.c), a step's
 * environment (plan_env.c), a step and its protocol (plan_step.c), files
 * and artifacts (plan_files.c), handed values (exchange.c), validation
 * (plan_validate.c) -- sharing the private plan_int.h.
 */
#ifndef PROVISION_PLAN_H
#define PROVISION_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "bench.h"
#include "facts.h"
#include "images.h"
#include "inventory.h"
#include "preflight.h"
#include "role.h"
#include "runner.h"
#include "secrets.h"
#include "validate.h"

struct plan_opts {
	const struct inventory *inv;
	const struct role_set *roles;
	const struct node *const *nodes; /* the selected nodes, inventory order */
	size_t nr;
	unsigned phases;  /* bit i: role_phases[i] runs; 0: facts and preflight only */
	/*
	 * Per node (in `nodes` order), the phases it takes part in, within
	 * `phases`; NULL: every node takes part in all of them.  add-node uses
	 * it: the new nodes go through everything, the control plane only
	 * through what joins them and refreshes the hub.
	 */
	const unsigned *node_phases;
	bool check_only;  /* provision plan */
	/*
	 * provision check: with check_only and no phases, every step of up's
	 * phases is checked as plan checks it, and each one that `up` would
	 * change becomes a "drift" check of the validation (plan_drift.c).
	 */
	bool drift;
	/*
	 * reset, remove-node, upgrade: no preflight (it judges whether a
	 * machine can become a node; these act on nodes that already are one).
	 */
	bool skip_preflight;
	/* More environment for every step: "NAME=VALUE", NULL-terminated; may be NULL. */
	const char *const *env;
	bool validate;	  /* end with the validation checks (up, check) */
	/*
	 * provision bench, check --bench: after the validation, the bench
	 * (bench.h) on every node with facts: bench-cpu, bench-memory,
	 * bench-gpu checks, and each node's figures in res->bench.
	 */
	bool bench;
	unsigned bench_repeat;	    /* runs of each variant; 0: BENCH_REPEAT */
	unsigned bench_limit_milli; /* the limited container's CPU; 0: smallest profile's guarantee */
	const char *bench_dir;	    /* the workloads, provision-bench-ARCH, on this machine */
	int forks;
	const char *sudo_password;
	const char *identity_passphrase; /* of the inventory's ssh.identity */
	bool per_command_channels;
	struct secrets *secrets;
	/*
	 * This cluster's state folder on this machine; files a step asks for
	 * with `::fetch PATH NAME` land in STATE/private/NAME (mode 0600).
	 */
	const char *state_dir;
	/*
	 * The hub's GitHub OAuth client secret (already registered with
	 * `secrets`), handed to the control plane alone as
	 * hub_github_client_secret (roles/jupyterhub); NULL: none.
	 */
	const char *hub_github_secret;
	/*
	 * The registries' credentials (cluster.registries), each
	 * "registry_auth_R_M=Basic BASE64" (R: the registry's place in the
	 * inventory from 1; M: 0 for its upstream, else the mirror's place
	 * from 1; plan_registry_auth_name()), registered with `secrets`,
	 * handed to every node (roles/containerd 15-registries); NULL: none.
	 */
	char *const *registry_auth;
	/* The artifact cache (artifacts.h): roles' artifacts are read from it. */
	const char *artifact_cache;
	const struct transport_ops *ops; /* NULL: the SSH transport */
	/* The views of the run's events, in order (runner.h): the live view or the lines, then
	 * the record. */
	struct event_consumers consumers;
	/*
	 * When non-NULL (one slot per node of `nodes`): the nodes' sessions
	 * are taken from here when open and left here, open, at the end (a
	 * command's later runs reuse them: cli/session.h); NULL: the run
	 * opens and closes its own.
	 */
	struct transport **sessions;
};

/* What happened to one step on one node; kept for the summary and `plan`. */
struct plan_step_result {
	const struct role *role;
	const char *step; /* the step's name, or the template's dest for a file */
	bool is_file;
	enum step_result result;
	uint64_t duration_ms;
	char *detail; /* skip reason, failure output, or the diff of a file (plan) */
	/* Files (is_file): what was deployed or compared, for the run record. */
	bool is_artifact;	/* from the artifact manifest (content not kept) */
	char sha256[65];	/* of the content; "" when it was never rendered */
	unsigned mode;
	const char *owner, *source; /* the role's template src, or the artifact's name */
	char *content;		    /* a rendered template (may hold secrets: wiped on release) */
	size_t content_len;
	char *drift; /* up: how the node's copy differed before it was replaced (a diff) */
};

struct plan_node {
	struct facts facts;
	bool have_facts;
	bool preflight_failed;
	struct plan_step_result *steps;
	size_t nr_steps, alloc_steps;
	unsigned changed, unchanged, failed, skipped;
};

struct plan_result {
	size_t nr;
	struct plan_node *nodes;
	struct node_status *status; /* run-wide, per node */
	struct preflight preflight;
	struct validation validation; /* when o->validate */
	struct bench_node *bench;     /* per node when o->bench (bench.h); else NULL */
	bool interrupted;
	uint64_t elapsed_ms;
	size_t ok, failed, unreachable, cancelled;
};

/* Parse "prep,nfs" into phase bits; returns -1 (message in err) on an unknown phase. */
int plan_parse_phases(const char *list, unsigned *out, struct error *err);
/* Every phase bit. */
unsigned plan_all_phases(void);

/*
 * The roles node n takes part in (out: rs->nr flags, role set order): those
 * of `phases` that apply to it, with a GPU when its facts f show one (f
 * NULL: as the inventory says).  The plan runs them and tells the views
 * (EVENT_ROLES).
 */
void plan_node_roles(const struct role_set *rs, const struct inventory *inv, const struct node *n,
		     const struct facts *f, unsigned phases, bool *out);

/* The end (exclusive) of the segment of roles that starts at `begin`. */
size_t plan_segment_end(const struct role_set *rs, size_t begin);

/*
 * Run facts, preflight and the selected phases.  Returns 0 when the run took
 * place (node results in *res; release with plan_result_release()).
 */
int plan_execute(const struct plan_opts *o, struct plan_result *res);
void plan_result_release(struct plan_result *res);

/*
 * The template values for a node: node.*, facts.*, cluster.*, nodes (every
 * inventory node), nfs.*, hub.* -- a new tree the caller frees.
 */
/*
 * containerd's NO_PROXY (roles/containerd's proxy drop-in, the steps'
 * PROVISION_CONTAINERD_NO_PROXY): localhost, 127.0.0.1, ::1, every node's
 * address (the API server's among them), the pod and service networks,
 * .svc, .cluster.local, then the inventory's no_proxy; comma-separated,
 * each once.  Replaces sb's content.
 */
void plan_containerd_no_proxy(const struct inventory *inv, struct strbuf *sb);
struct tval *plan_values(const struct inventory *inv, const struct node *n, const struct facts *f,
			 const struct kube_minor *kube);

/*
 * `profiles` in template values: when a step handed the cluster's Nodes
 * (set.hub_nodes = N and set.hub_node_1..N, each `kubectl get node -o json`
 * on one line; roles/jupyterhub 20-capacity), the hub's profile list from
 * profiles_generate() as a list of maps (slug, display_name, description,
 * reasoning, gpus, node_selector, cpu_guarantee, cpu_limit in cores,
 * mem_guarantee, mem_limit as "NM", nodes, default on the first).  No
 * hub_nodes (no cluster yet): an empty list.  Returns -1 with err set on
 * handed text that is not what kubectl gives.
 */
int plan_add_profiles(struct tval *values, struct error *err);

/*
 * The cluster's GPUs as the selected nodes' facts show them, added to v as
 * `gpu`: gpu.node_count, gpu.count (GPUs in all), gpu.host_driver ("true"
 * when there are GPU nodes and nvidia-smi works on every one of them: the
 * GPU Operator then needs no driver container), gpu.names (space-separated
 * names of the GPU nodes), gpu.driver_nodes (those of them whose host
 * driver does not answer: the only ones the operator's driver container
 * may run on; roles/node-labels labels every other GPU node
 * nvidia.com/gpu.deploy.driver=false), gpu.nodes (list: name, count, model,
 * memory_mib, driver -- empty when the host driver does not answer --,
 * sharing: the node's gpu_sharing or ""), gpu.sharing ("NODE:GPUS:N" for
 * each shared GPU node, space-separated) and gpu.sharing_factors (the
 * distinct N, ascending).
 * facts[i] may be NULL (no facts: the node is left out).
 */
void plan_gpu_values(struct tval *v, const struct node *const *nodes,
		     const struct facts *const *facts, size_t nr);

/*
 * Which node runs which image (images.h): the roles' `images`, rendered
 * with the values their templates get on each node before any step handed
 * one (no `set`, no `profiles`).  facts[i] may be NULL (the inventory
 * alone: `provision fetch --images`); gpu: a map holding plan_gpu_values()
 * over the inventory, or NULL (made from these nodes' facts).  The chart
 * archives are read from the artifact cache `cache`.
 */
int plan_images(struct images_plan *out, const struct inventory *inv, const struct role_set *rs,
		const char *cache, const struct node *const *nodes,
		const struct facts *const *facts, size_t nr, const struct tval *gpu,
		struct error *err);

#endif
