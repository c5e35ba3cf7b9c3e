/*
 * preflight: the inventory against the facts, before anything is changed.
 *
 * A pure function: the problems it finds, one per node and problem, each
 * with the fix.  A node with a fatal problem is left out of the rest of the
 * run (it fails alone); the other nodes go on.
 */
#ifndef PROVISION_PREFLIGHT_H
#define PROVISION_PREFLIGHT_H

/* flanneld --healthz-port of roles/flannel (Flannel v0.28.9: 8081), on every node. */
#define FLANNEL_HEALTHZ_PORT 8081

#include <stdbool.h>
#include <stddef.h>

#include "facts.h"
#include "inventory.h"
#include "role.h"

struct preflight_problem {
	size_t node; /* index into the nodes given */
	bool fatal;
	char *msg;
	char *hint;
};

struct preflight {
	struct preflight_problem *items;
	size_t nr;
};

/*
 * Check nodes[i] against facts[i] (NULL when the node gave no facts: it is
 * skipped), and the nodes that run a kubelet against kube, the row of
 * roles/kubernetes.yaml for the cluster's minor (NULL: not checked).
 * Problems are appended to pf in node order.
 */
void preflight_run(struct preflight *pf, const struct inventory *inv, const struct kube_minor *kube,
		   const struct node *const *nodes, const struct facts *const *facts, size_t nr);
/*
 * The Helm that drives the add-ons (helm_version, roles/helm's archive)
 * against the cluster's minor (kube's helm column, Helm's version skew
 * policy): older than the minor's Helms (built against an older
 * Kubernetes), a fatal problem on the control plane among nodes; newer (a
 * cluster older than the Helm's four minors), a warning there
 * (helm_version or kube NULL: not checked).
 */
void preflight_helm(struct preflight *pf, const struct inventory *inv, const struct kube_minor *kube,
		    const char *helm_version, const struct node *const *nodes,
		    const struct facts *const *facts, size_t nr);
void preflight_release(struct preflight *pf);
/* Whether node i has a fatal problem. */
bool preflight_node_failed(const struct preflight *pf, size_t i);

/* Whether the node has an NVIDIA GPU (facts when known, else the inventory). */
bool node_has_gpu(const struct node *n, const struct facts *f);

#endif
