/*
 * plan_int: what the rooms of the plan module share (private: only
 * provision/plan*.c and exchange.c include it).  plan.h has the theory of
 * operation; each room's file says what it holds:
 *
 *   plan.c           the executor: facts pass, preflight, pipeline passes,
 *                    barriers between nodes, events to the views
 *   plan_values.c    template values (plan_values, gpu values, profiles)
 *   plan_env.c       the environment a step runs in
 *   plan_step.c      one step: check/apply/check, the protocol on its
 *                    output, its result recorded and posted
 *   plan_files.c     templates, artifacts and ::fetch'ed files
 *   exchange.c       values handed between steps, roles and nodes
 *   plan_validate.c  the validation checks at the end of up and check
 *
 * Ownership: struct run lives on plan_execute()'s stack for one run; a
 * struct node_ctx on a worker's stack for one pass of one node.  Fields of
 * struct run written by workers (barriers, published) are guarded by
 * run->lock; the rest is written only by the main thread between passes.
 */
#ifndef PROVISION_PLAN_INT_H
#define PROVISION_PLAN_INT_H

#include <pthread.h>

#include "exchange.h"
#include "plan.h"
#include "template.h"
#include "util.h"

#define TAIL_MAX 4096	    /* output kept for a failure message */
#define CAPTURE_MAX (256 << 10) /* a file's diff in provision plan */
/* Pulls at once per node (PROVISION_IMAGE_PULLS), and no byte for this long fails one. */
#define PLAN_PULLS_PER_NODE 3
#define PLAN_PULL_STALL_S   60
#define PLAN_STR_(x)	    #x
#define PLAN_STR(x)	    PLAN_STR_(x)

struct barrier {
	size_t expected, done, failed;
	/* of `failed`: those where the role did not run at all (skipped), and why, on which node
	 * (the first) */
	size_t skipped;
	char *skip_why, *skip_node;
};

struct run {
	const struct plan_opts *o;
	struct plan_result *res;
	size_t *map; /* pass-local index -> index into o->nodes */
	bool pass2;
	size_t seg_begin, seg_end; /* the roles of the current pipeline pass */
	bool *seen_running;	   /* per node: NODE_RUNNING already shown */
	bool validating;	   /* nodes have their final state: passes only add to it */
	bool *role_done;	   /* [node * nr_roles + role] */
	bool *role_skipped;	   /* [node * nr_roles + role]: did not run there (a wait) */
	struct kube_query *queries; /* the validation pass */
	struct certs_query *certs;  /* the certificates pass (plan_certs.c), per node */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct barrier *barriers; /* per role */
	bool *applies;		  /* [node * nr_roles + role] */
	/*
	 * [node * nr_roles + role]: plan_node_roles() of each node, made with
	 * its facts (facts_fn) and posted as EVENT_ROLES; NULL when the run
	 * has no roles to run.  `applies` is it for the nodes that passed
	 * preflight.
	 */
	bool *node_roles;
	struct exchange *exchange; /* values handed between steps, roles and nodes */
	/*
	 * plan_run_gpu_values() of the pipeline, made once before its first pass and
	 * read-only from then on: steps and templates run only in the pipeline,
	 * and facts do not change during it (making it per step read every
	 * left-out node's recorded facts again).
	 */
	struct tval *gpu;
	/*
	 * Which node runs which image (plan_images()), made with `gpu` when a
	 * role of the run pulls (role.yaml `pulls`): the pull steps' list
	 * ($PROVISION_IMAGES) and what their ::progress may name.
	 */
	struct images_plan images;
	bool have_images;
	struct bench_pass *bench; /* the bench pass (plan_bench.c) */
};

struct kube_query; /* plan_validate.c */

struct node_ctx {
	struct run *run;
	size_t index; /* into o->nodes */
	const struct node *node;
	const struct role *role; /* the role at work on the node; NULL: none (facts) */
	const char *step;	 /* the step whose output this is; NULL: not a step */
	bool *role_done;
	struct strbuf tail, capture;
	bool capturing;
	bool capture_stdout; /* only standard output goes into capture */
	bool swallow;	 /* capture without posting (fetched files: they may hold keys) */
	char **fetches;	 /* "PATH\nNAME" asked for with ::fetch by the current step */
	size_t nr_fetches;
	char *skip_reason, *hint, *note;
	char *protocol_error;
	bool in_cut_protocol; /* the pieces of a protocol line too long to read go unseen */
	/* ::progress lines posted, per image: when last (at most one a second each) */
	char **progress_refs;
	uint64_t *progress_ms;
	size_t nr_progress;
};

/* ---- plan.c ---- */

/* Apply ev to node idx's status and hand it to the views (main thread). */
void plan_forward(struct run *run, const struct event *ev, size_t idx);

/* ---- plan_values.c ---- */

/* plan_gpu_values() for every inventory node (recorded facts for those not in the run). */
void plan_run_gpu_values(struct tval *v, const struct run *run);
/* The template values of nc's node, with the handed values it may read under `set`. */
struct tval *plan_node_values(struct node_ctx *nc);

/* ---- plan_env.c ---- */

/* Append `export NAME='VALUE'` (NULL: empty). */
void plan_env_export(struct strbuf *sb, const char *name, const char *value);
/*
 * The environment of a step on nc's node (roles/README.md), as sh lines;
 * the handed secrets it may read go to secrets instead, as lines that
 * write each to its file (plan_step_input() puts them in place).
 */
void plan_env_build(struct strbuf *sb, struct node_ctx *nc, struct strbuf *secrets);
/*
 * What a step's shell reads on its standard input: the environment, the
 * handed secrets written to a private folder removed when the step ends
 * (roles/README.md, "Secrets on the node"), lib.sh and the step.
 */
void plan_step_input(struct strbuf *input, struct node_ctx *nc, const char *lib, size_t lib_len,
		     const char *script, size_t len);

/* ---- plan_images.c ---- */

/*
 * When a role of the run pulls images: run->images for the run's nodes;
 * what could not be resolved is said once, as a message on the control
 * plane's row (those images are left to the kubelet).
 */
void plan_run_images(struct run *run);
/*
 * Before a pull role's steps: the images of the node's share that this
 * machine's bundle (provision fetch --images) holds for its architecture
 * and the node lacks are sent and imported (`ctr images import`), as a
 * step "import" of the role (only when the bundle has some).  Returns as
 * plan_run_step().
 */
int plan_import_images(struct node_ctx *nc, struct runner_job *job, const struct role *r);
/* The images of the roles r pulls that node idx runs: $PROVISION_IMAGES and the pull settings. */
void plan_env_images(struct strbuf *sb, struct node_ctx *nc, const struct role *r);

/* ---- plan_step.c ---- */

/* The runner's line filter while a node_ctx is active: the step protocol. */
bool plan_step_filter(void *ctx, struct runner_job *job, int stream, const char *line, size_t len,
		      unsigned flags);
void plan_post_step(struct runner_job *job, enum event_kind kind, const struct role *r,
		    const char *step, enum step_result result, uint64_t ms, const char *text);
/* A step's end, with the time its first check took (the record keeps it for the ETA). */
void plan_post_step_end(struct runner_job *job, const struct role *r, const char *step,
			enum step_result result, uint64_t ms, uint64_t check_ms, const char *text);
/* Append a step result to nc's node (detail redacted). */
void plan_record(struct node_ctx *nc, const struct role *r, const char *step, bool is_file,
		 enum step_result result, uint64_t ms, const char *detail);
/* What a file step deployed (or compared), on the step just recorded. */
void plan_record_file(struct node_ctx *nc, const char *sha, unsigned mode, const char *owner,
		      const char *source, bool artifact, const struct strbuf *content,
		      char *drift);
/* "WHAT: last output line (hint: ...)", a new string. */
char *plan_failure_text(struct node_ctx *nc, const char *what);
/* 0 when the node may go on, 1 when the step failed, -1 when the session was lost. */
int plan_run_step(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		  const struct role_step *s);

/* ---- plan_files.c ---- */

void plan_clear_fetches(struct node_ctx *nc);
/* What a node's job kept in nc: its tail, reasons, hint, protocol error, fetches
 * (not nc->capture, which the callers hand on). */
void plan_node_ctx_release(struct node_ctx *nc);
/* Copy the files the step asked for into the state folder; 0, or 1 with *detail set. */
int plan_do_fetches(struct node_ctx *nc, struct runner_job *job, char **detail);
/* Render, compare and upload one template; returns as plan_run_step(). */
int plan_deploy_file(struct node_ctx *nc, struct runner_job *job, const struct role *r,
		     const struct role_template *t);
/* One artifact from the cache to the node; returns as plan_run_step(). */
int plan_deploy_artifact(struct node_ctx *nc, struct runner_job *job, const struct role *r,
			 const struct role_artifact *ra);

/* ---- plan_certs.c ---- */

/*
 * The certificate checks (certs.h) of the selected nodes that are in the
 * cluster: kubeadm's list on the control plane cp, the kubelet's client
 * certificate on each; a pass of its own over the kept sessions.
 */
void plan_run_certs(struct run *run, struct runner_opts *ro, struct transport **sessions,
		    size_t cp);

/* ---- plan_validate.c ---- */

/* The validation checks (o->validate), on the control plane and from this machine. */
void plan_run_validation(struct run *run, struct runner_opts *ro, struct transport **sessions);
/* The checks v->items[from..] as events (phase "validate"); cluster checks on row cluster_row. */
void plan_post_checks(struct run *run, size_t from, size_t cluster_row);
/* The bench pass (plan_bench.c): every node with facts; its checks posted. */
void plan_run_bench(struct run *run, struct runner_opts *ro, struct transport **sessions);
/* provision check (plan_opts.drift): one "drift" check per step up would change, or a pass per node. */
void plan_drift_checks(struct run *run);

#endif
