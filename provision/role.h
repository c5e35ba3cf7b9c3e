/*
 * role: the roles/ folder loaded and validated (format: roles/README.md).
 *
 * role_set_load() reads every roles/NAME/role.yaml, the step scripts and
 * the templates, parses the templates, and checks everything that can be
 * checked without a node: unknown keys, missing files, unknown phases,
 * dependencies on roles that do not exist or that form a cycle, template
 * syntax, and template values that the role does not declare in `vars`.
 * Every problem goes to the diag_list with its file:line:col, so a broken
 * role stops a run before any connection is opened.
 *
 * Ownership: the role_set owns its roles and everything in them; release
 * with role_set_release().  Read-only after loading; shared by all workers.
 */
#ifndef PROVISION_ROLE_H
#define PROVISION_ROLE_H

#include <stdbool.h>
#include <stddef.h>

#include "artifacts.h"
#include "inventory.h"
#include "phase.h"
#include "template.h"

enum role_when {
	ROLE_WHEN_GPU = 1u << 0,
	ROLE_WHEN_NO_GPU = 1u << 1,
	ROLE_WHEN_NFS = 1u << 2,
	ROLE_WHEN_NOT_NFS_SERVER = 1u << 3,
	ROLE_WHEN_HUB = 1u << 4, /* the inventory's jupyterhub is enabled */
	ROLE_WHEN_CONTAINERD_RELEASE = 1u << 5, /* cluster.containerd: release */
	ROLE_WHEN_API_VIP = 1u << 6, /* cluster.api_endpoint.vip: provision's keepalived + HAProxy */
	/* the first control plane of the inventory (the only one, with one) */
	ROLE_WHEN_FIRST_CONTROL_PLANE = 1u << 7,
	/* a control plane that is not the first: it joins with --control-plane */
	ROLE_WHEN_OTHER_CONTROL_PLANE = 1u << 8,
	ROLE_WHEN_API_ENDPOINT = 1u << 9, /* cluster.api_endpoint (a vip or an address) */
	/* the control plane that runs the hub and holds its database (inventory_hub_node) */
	ROLE_WHEN_HUB_NODE = 1u << 10,
};

struct role_template {
	char *src;  /* relative to the role's templates/ */
	char *path; /* on this machine */
	char *dest; /* absolute path on the node */
	unsigned mode;
	char *owner;  /* "root:root" */
	char *before; /* step name it must be in place for; NULL: the first */
	struct template *tmpl;
};

/* A file from the artifact manifest (roles/artifacts.yaml) put on the node as is. */
struct role_artifact {
	char *name; /* its name in the manifest */
	char *dest; /* absolute path on the node */
	unsigned mode;
	char *owner;
	char *before; /* as for templates */
	char *arch;   /* "amd64" or "arm64": only nodes of that arch get it; NULL: every node */
	int helm;     /* 3 or 4: only with the inventory's cluster.helm of that major; 0: always */
	/*
	 * `kube: "1.A-1.B"` (or "1.A"): only for a cluster whose Kubernetes
	 * minor is in that range, as MAJOR*1000+MINOR; 0, 0: every minor.
	 */
	unsigned kube_lo, kube_hi;
	/*
	 * The chart release the artifact is (`chart_version: X.Y.Z`): it reaches
	 * the nodes when the inventory's jupyterhub.chart_version is that, and,
	 * with `default: true`, when the inventory pins none.  NULL: always.
	 */
	char *chart_version;
	bool chart_default;
};

/*
 * Whether node N gets artifact A (its arch, the inventory's Helm major, the
 * cluster's Kubernetes minor and the hub's chart version).
 */
bool role_artifact_for(const struct role_artifact *a, const struct inventory *inv,
		       const struct node *n);

/* Whom a handed value reaches (role.yaml `hands`, `to:`). */
enum role_hand_to {
	ROLE_TO_SELF = 1,      /* the node that handed it */
	ROLE_TO_CONTROL_PLANE, /* nodes with the control-plane role */
	ROLE_TO_NODE,	       /* the node named in the key: NAME@NODE */
};

/*
 * A value the role's steps may hand with ::set or ::secret (role.yaml
 * `hands`; roles/README.md, "Handing values").  Nothing else a step prints
 * in protocol form is accepted.
 */
struct role_hand {
	char *name;  /* literal, or with one {self} or {n} (see role_hand_match()) */
	bool secret; /* handed with ::secret (and only so), registered for redaction */
	enum role_hand_to to;
	bool about_self; /* `about: self`: the value's first word is the sender's name */
	/*
	 * `labels: [KEY, ...]`: the value's words (after the sender's name with
	 * about: self) are Kubernetes label changes of these keys only,
	 * KEY=VALUE (a label value) or KEY- (removed); NULL-terminated, NULL
	 * when not declared (any value).
	 */
	char **labels;
};

/* A file the role's steps may ask for with ::fetch (role.yaml `fetches`). */
struct role_fetch {
	char *name; /* STATE/private/NAME */
	char *path; /* the only path on the node it may come from */
};

/* Where an image of role.yaml `images` runs (images.h). */
enum role_image_on {
	ROLE_IMAGE_ON_CLUSTER = 1, /* every control-plane and worker node */
	ROLE_IMAGE_ON_CONTROL_PLANE,
	ROLE_IMAGE_ON_WORKERS, /* nodes ordinary pods (and notebooks) land on */
	ROLE_IMAGE_ON_GPU,     /* nodes with an NVIDIA GPU */
};

/*
 * A container image the role's workloads run (role.yaml `images`): a
 * reference template, or every image of one of its rendered templates.
 */
struct role_image {
	char *ref;	       /* the template text; NULL for a manifest */
	struct template *tmpl; /* ref, parsed */
	char *manifest;	       /* the src of one of the role's templates; NULL for a ref */
	enum role_image_on on;
	unsigned line; /* in role.yaml */
};

struct role_step {
	char *name; /* "10-modules" (the file name without .sh) */
	char *path;
	char *script;
	size_t len;
};

struct role {
	char *name;
	char *dir;
	char *description;
	enum phase phase;    /* PHASE_NONE: none read (an error was reported) */
	unsigned applies_to; /* enum node_role bits; 0: every node */
	unsigned when;	     /* enum role_when bits */
	char **depends_on;   /* NULL-terminated */
	char **wait_for;     /* roles that must have succeeded on every node first */
	char **after;	     /* roles that must have finished on every node first (order only) */
	char **vars;
	struct role_template *templates;
	size_t nr_templates;
	struct role_artifact *artifacts; /* uploaded before the templates of the same step */
	size_t nr_artifacts;
	struct role_hand *hands;
	size_t nr_hands;
	struct role_fetch *fetches;
	size_t nr_fetches;
	struct role_step *steps; /* sorted by name */
	size_t nr_steps;
	struct role_image *images; /* what its workloads run (images.h) */
	size_t nr_images;
	/* `chart:` the artifact (a chart archive) and the template its values come from */
	char *chart_artifact, *chart_values;
	/* `pulls:` the roles whose images this role's steps pull (the pull phase); NULL-terminated
	 */
	char **pulls;
};

/*
 * roles/kubernetes.yaml: what follows from the cluster's Kubernetes minor,
 * one row per minor ("1.30"), one column per value (pause_image: kubeadm's
 * pause image of that minor).  Templates see a row as kube.COLUMN, steps as
 * PROVISION_KUBE_COLUMN (upper case).  The columns are role.c's
 * kube_columns: pause_image, apt_key_fingerprint, kubeadm_api,
 * containerd_min, containerd_preferred, cgroup, patch, end_of_life, helm.
 */
struct kube_minor {
	char *minor;
	char **keys; /* NULL-terminated, parallel to vals */
	char **vals;
	size_t nr;
};

struct kube_matrix {
	char *path;
	char *default_version; /* `default:`, the version the examples use; NULL when absent */
	struct kube_minor *rows;
	size_t nr;
};

/* The row of VERSION's minor ("1.30.4" -> "1.30"), or NULL. */
const struct kube_minor *kube_matrix_find(const struct kube_matrix *m, const char *version);
/* Column NAME of a row, or NULL (row NULL too). */
const char *kube_minor_get(const struct kube_minor *row, const char *name);
/* The minors of the table, ", "-separated; caller frees. */
char *kube_matrix_minors(const struct kube_matrix *m);
/* Whether Helm HELM_VERSION (X.Y[.Z]) is in RANGES, a row's helm column ("3.19-3.22, 4.0-4.3"). */
bool kube_helm_supported(const char *ranges, const char *helm_version);
/*
 * Where Helm HELM_VERSION stands against RANGES: 0 in them; -1 older than
 * its major's range (built against a Kubernetes older than the minor, or a
 * major before every listed one), or not a version; 1 newer (the minor is
 * older than the Helm's supported four, or the major comes after every
 * listed one).
 */
int kube_helm_skew(const char *ranges, const char *helm_version);

struct role_set {
	char *dir;
	struct role *roles; /* in run order: by phase, then dependencies, then name */
	size_t nr;
	char *lib;	    /* roles/lib.sh, sent in front of every step */
	size_t lib_len;
	struct artifact_manifest artifacts; /* roles/artifacts.yaml */
	struct kube_matrix kube;	    /* roles/kubernetes.yaml (empty when absent) */
};

/* The phases of `provision up`, in order; NULL-terminated. */
#define ROLE_PHASE_LIST "prep, kube-packages, nfs, init, cni, join, addons, validate"
/* How many of role_phases are up's; the others run only from their own commands. */
#define ROLE_UP_PHASES 8
#define ROLE_LIFECYCLE_PHASE_LIST                                                          \
	"remove (provision remove-node), reset, reset-prep, reset-verify (provision reset), "  \
	"upgrade, upgrade-workers (provision upgrade), backup (provision backup), "               \
	"restore (provision restore)"
/* The phases (enum phase, role_phases, phase_name): phase.h. */

/*
 * Load every role under dir.  Returns 0, or -1 with every problem in dl
 * (the set is then released).
 */
int role_set_load(struct role_set *rs, const char *dir, struct diag_list *dl);
void role_set_release(struct role_set *rs);
const struct role *role_set_find(const struct role_set *rs, const char *name);
/*
 * The Helm version roles/helm installs on node N (the control plane): the
 * X.Y.Z of its archive's URL (.../helm-vX.Y.Z-linux-ARCH.tar.gz) in the
 * artifact manifest; NULL when there is none.  Caller frees.
 */
char *role_set_helm_version(const struct role_set *rs, const struct inventory *inv,
			    const struct node *n);

/*
 * Whether a role applies to a node, given what is known: the inventory and
 * whether the node has a GPU (facts, or the inventory's gpus when facts are
 * not known yet).
 */
/*
 * Whether NAME (len bytes, the key of a ::set/::secret line without its
 * @NODE) is h's name handed by node `sender`: `{self}` stands for the
 * sender's name with every character but letters, digits and `_` as `_`
 * (node-1 -> node_1), `{n}` for one or more decimal digits.
 */
bool role_hand_match(const struct role_hand *h, const char *name, size_t len, const char *sender);

/* Whether role r reads what role p hands: p is r, or r depends on, waits for or comes after p. */
bool role_reads_from(const struct role *r, const struct role *p);

bool role_applies(const struct role *r, const struct inventory *inv, const struct node *n,
		  bool has_gpu);

/* Whether role R may apply to node N before its facts say whether it has a GPU. */
bool role_may_apply(const struct role *r, const struct inventory *inv, const struct node *n);

/*
 * The chart artifact role r installs for inventory inv: among r's artifacts
 * with a chart_version and the dest of its `chart:` artifact, the one the
 * inventory picks (role_artifact_for); else r->chart_artifact.
 */
const char *role_chart_artifact(const struct role *r, const struct inventory *inv);

/*
 * The chart release of the hub the roles install for inventory inv, into
 * inv->hub.chart_resolved (the jupyterhub values read it: hub.chart_version,
 * hub.chart_major): the inventory's jupyterhub.chart_version, or the
 * version of the role's `default: true` chart artifact.  An inventory
 * version no role artifact offers is an error in dl at its position
 * (file:line:col), naming the versions offered; -1 then.
 */
int role_set_resolve_hub_chart(const struct role_set *rs, struct inventory *inv,
			       struct diag_list *dl);

/*
 * The Helm major roles/helm installs for inventory inv, into
 * inv->cluster.helm_major: the inventory's cluster.helm, or, when it gives
 * none (helm_auto), 4 when a role pins a Helm 4 artifact (`helm: 4`) for
 * the cluster's Kubernetes minor (the artifacts' `kube:` ranges), else 3
 * when one pins a Helm 3, else 4.  A major with no artifact for that minor
 * is an error in dl at cluster.helm (or at kubernetes_version when the
 * inventory names no major), naming the Helms pinned and the minors each
 * serves; -1 then.  No artifact pinned per major: 0.
 */
int role_set_resolve_helm(const struct role_set *rs, struct inventory *inv, struct diag_list *dl);

#endif
