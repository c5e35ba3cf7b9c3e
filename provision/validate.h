/*
 * validate: is the cluster what the inventory says?  Structured results
 * (id, node, expected, observed, how to fix) from the nodes' facts and from
 * what the control plane reports (`kubectl get nodes -o json`, `kubectl get
 * pods -A -o json`, `/readyz`).
 *
 * The parsers are pure functions of the text they are given (recorded real
 * outputs in tests/validate/, fuzzed), so validation is tested without a
 * cluster; plan.c runs the commands and feeds them in.
 *
 * Ownership: a struct validation owns its checks; validation_release().
 */
#ifndef PROVISION_VALIDATE_H
#define PROVISION_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>

#include "facts.h"
#include "inventory.h"
#include "util.h"

#define CHECK_CLUSTER ((size_t)-1) /* a check about the cluster, not one node */

enum check_status {
	CHECK_PASS,
	CHECK_FAIL,
	CHECK_SKIP,
	CHECK_WARN, /* passes now, but will not for long (a certificate close to expiry) */
};

struct check {
	char *id;	/* "node-ready", "swap-off", ... */
	size_t node;	/* index into the nodes given, or CHECK_CLUSTER */
	enum check_status status;
	char *expected; /* what it should be */
	char *observed; /* what it is */
	char *fix;	/* how to fix it (failures) or why skipped */
};

struct validation {
	struct check *items;
	size_t nr, alloc;
};

/* Add a check; its texts are copied and cleaned (util.h text_make_safe): node text. */
void validation_add(struct validation *v, const char *id, size_t node, enum check_status status,
		    const char *expected, const char *observed, const char *fix);
void validation_release(struct validation *v);
size_t validation_failures(const struct validation *v);

/* Checks from each node's fresh facts: swap off, containerd active with SystemdCgroup. */
void validate_facts(struct validation *v, const struct node *const *nodes,
		    const struct facts *const *facts, size_t nr, unsigned phases_ran);

/*
 * `kubectl get nodes -o json`: every inventory node that is a control plane
 * or a worker is a Ready Node (an NFS server alone is no Node).
 * Returns 0, or -1 with err set when the text is not a NodeList.
 */
int validate_kube_nodes(struct validation *v, const char *json, size_t len,
			const struct node *const *nodes, size_t nr, struct error *err);

/*
 * `kubectl get pods -A -o json`: CoreDNS Running, and a Running Flannel pod
 * on every inventory node that is a control plane or a worker.  Returns 0, or -1 with err set on bad input.
 */
int validate_kube_pods(struct validation *v, const char *json, size_t len,
		       const struct node *const *nodes, size_t nr, struct error *err);

/*
 * The hub's /hub/health through the proxy's NodePort (url): 200 passes;
 * status 0 means no HTTP answer came (why in `error`).
 */
void validate_hub_health(struct validation *v, const char *url, long status, const char *error);

/*
 * The GPU nodes (nodes with an NVIDIA GPU in their facts; facts[i] may be
 * NULL) against `kubectl get nodes -o json` and `kubectl get pods -A -o
 * json`: allocatable nvidia.com/gpu equals the GPUs the facts found, times
 * the node's gpu_sharing when the inventory shares them (gpu-allocatable:
 * the device plugin took its time-slicing configuration), and the GPU Operator's nvidia-operator-validator pod
 * on the node is Running with its validations (init containers) completed
 * (gpu-operator-validated).  Returns 0, or -1 with err set on bad input.
 */
int validate_gpus(struct validation *v, const char *nodes_json, size_t nodes_len,
		  const char *pods_json, size_t pods_len, const struct node *const *nodes,
		  const struct facts *const *facts, size_t nr, struct error *err);

/*
 * Dynamic NFS storage, from `kubectl get storageclasses -o json`, `kubectl
 * get pvc -A -o json` and the trial record of roles/nfs-provisioner
 * (/var/lib/provision/helm/nfs-trial; NULL when missing): StorageClass
 * `nfs` is the only default (default-storageclass), and a claim binds
 * (nfs-claim-binds: the trial claim bound, and no claim of class nfs is
 * left Pending).  Returns 0, or -1 with err set on bad input.
 */
int validate_storage(struct validation *v, const char *sc_json, size_t sc_len,
		     const char *pvc_json, size_t pvc_len, const char *trial, struct error *err);

/*
 * Several control planes behind one address (the inventory has an
 * api_endpoint; nothing otherwise), from the control planes' fresh facts
 * (facts[i] NULL: unreachable; etcd_members, etcd_status, apiserver_readyz
 * and vip_held, facts.sh): per control plane etcd-member (its member
 * started and voting, a leader known) and apiserver-ready (its own API
 * server's /readyz); for the cluster etcd-cluster (a member per control
 * plane of the inventory and no other, every answering member listing the
 * same members and leader, a lost member named) and, with a vip,
 * vip-holder (exactly one control plane holds it, named).  nodes are the
 * selected nodes, inv says which control planes there are.
 */
void validate_control_planes(struct validation *v, const struct inventory *inv,
			     const struct node *const *nodes, const struct facts *const *facts,
			     size_t nr);

/* The body of /readyz ("ok") and whether it could be fetched. */
void validate_readyz(struct validation *v, bool fetched, const char *body);

const char *check_status_name(enum check_status s);

#endif
