/*
 * profiles: JupyterHub profiles generated from what the nodes really have.
 *
 * The seed lab's hub offered profiles no node could run; the spawn then
 * failed minutes later with no useful message.  Here no such profile can be
 * made: profiles_generate() is a pure function from the nodes' measured
 * capacity to the profile list, and every profile's limits fit every node it
 * can be scheduled on.
 *
 * Groups and profiles:
 *   - nodes whose GPUs are all one model form that model's group; the
 *     profile "1× MODEL (N GiB)" selects the group with the label GPU
 *     feature discovery sets (nvidia.com/gpu.product) and asks for
 *     nvidia.com/gpu: 1; a "K× MODEL" profile is added for every K up to
 *     the largest count one node of the group has (it lands only there);
 *   - a node with GPUs of several models is its own group, selected by
 *     hostname (the device plugin may hand out any of its GPUs, so the
 *     profile says "A or B" and promises the smaller memory);
 *   - one CPU-only profile for any schedulable node;
 *   - nodes whose GPUs are time-sliced (the inventory's gpu_sharing: the
 *     device plugin advertises each GPU N times) form their own group per
 *     model and N, offered one share: "MODEL shared by up to N", one
 *     nvidia.com/gpu, selected by the product label GPU feature discovery
 *     gives a time-sliced GPU (MODEL-SHARED, so that the whole-GPU profile
 *     of the model never lands there), its description saying what a user
 *     gets: about 1/N of the GPU when all are busy (the seed lab measured
 *     that containers sharing a GPU each slow in proportion to how many
 *     share it, REFERENCE.md §1), and GPU memory not isolated.  Its CPU and
 *     memory are sized as for GPUs x N notebooks on the node.
 * Sizes: a node's GPU share is its allocatable CPU and memory divided by
 * its GPU count, times the GPUs a profile asks for (the smallest share of
 * the group counts).  A GPU notebook's limits are that share and its
 * guarantees 2/3 of it, so limits are 1.5× the guarantees (REFERENCE.md §1:
 * the seed lab's 1–1.5× rule), all GPU notebooks of a node together never
 * exceed the node, and a third of the node stays guaranteed-free for CPU
 * notebooks.  A CPU-only notebook guarantees 1 CPU and 2 GiB (less on a
 * smaller node), limits 1.5× that.
 *
 * Allocatable: the kubelet's, when the cluster reports it, else capacity
 * minus the reserve provision configures on every kubelet
 * (PROFILES_RESERVED_*) minus room for the add-ons' pods on every node.
 *
 * Ownership: the caller frees the list with profiles_free().  No globals.
 */
#ifndef PROVISION_PROFILES_H
#define PROVISION_PROFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What provision's kubelet configuration reserves (systemReserved + eviction). */
#define PROFILES_RESERVED_CPU_MILLI 500
#define PROFILES_RESERVED_MEM_MIB (1024 + 100)
/* Room left on every node for DaemonSet pods (Flannel, GPU Operator, DCGM...). */
#define PROFILES_ADDONS_CPU_MILLI 500
#define PROFILES_ADDONS_MEM_MIB 1024


#define PROFILES_MAX_GPUS 16
/* The most notebooks per GPU believed from a node's labels (the inventory's gpu_sharing bound). */
#define PROFILES_MAX_SHARING 16

/*
 * The RuntimeClass of GPU notebooks: the GPU Operator makes it (handler
 * nvidia, the runtime roles/containerd configures); the device plugin's
 * GPUs reach a container only under that runtime.
 */
#define PROFILES_GPU_RUNTIME_CLASS "nvidia"

/*
 * NVIDIA_VISIBLE_DEVICES of a notebook without a GPU.  nvidia is the
 * default runtime of GPU nodes (roles/gpu-runtime), and CUDA images --
 * the hub's pytorch-notebook:cuda12 among them -- set
 * NVIDIA_VISIBLE_DEVICES=all in their environment: a CPU notebook landing
 * on a GPU node would get every GPU of the node behind the scheduler's
 * back.  "void" makes the NVIDIA runtime act as plain runc (the toolkit's
 * documented value); the device plugin sets the variable itself for a
 * container that was given GPUs.
 */
#define PROFILES_NO_GPU_DEVICES "void"

struct profile_gpu {
	const char *model; /* as nvidia-smi names it: "NVIDIA GeForce RTX 3070" */
	unsigned memory_mib;
};

struct profile_node {
	const char *name;
	unsigned cpu_milli;  /* allocatable CPU */
	uint64_t mem_mib;    /* allocatable memory */
	struct profile_gpu gpus[PROFILES_MAX_GPUS];
	size_t nr_gpus;
	bool schedulable;    /* a worker without NoSchedule taints */
	unsigned sharing;    /* notebooks per GPU (time-slicing replicas); 0 or 1: not shared */
	void *owned;	     /* strings owned by profiles_nodes_from_json() */
};

struct hub_profile {
	char *slug;	    /* "gpu-geforce-rtx-3070-x1" */
	char *display_name; /* "1× GeForce RTX 3070 (8 GiB)" */
	char *description;  /* what it guarantees and where it runs */
	unsigned gpus;	    /* nvidia.com/gpu limit; 0 for CPU-only */
	char *selector_key, *selector_value; /* nodeSelector; NULL for none */
	char *runtime_class; /* runtimeClassName (PROFILES_GPU_RUNTIME_CLASS for GPU profiles); NULL for none */
	const char *visible_devices; /* NVIDIA_VISIBLE_DEVICES to set (PROFILES_NO_GPU_DEVICES without GPUs); NULL for none */
	unsigned cpu_guarantee_milli, cpu_limit_milli;
	uint64_t mem_guarantee_mib, mem_limit_mib;
	char **nodes;	    /* the nodes it can land on, NULL-terminated */
	size_t nr_nodes;
	char *reasoning;    /* why these numbers: the smallest node and its share */
};

/*
 * The profile nodes from `kubectl get nodes -o json`: allocatable CPU and
 * memory as the kubelets report them, GPUs from provision's annotation
 * provision.dev/gpus ("MODEL:MIB,MODEL:MIB", set by the node-labels role
 * from nvidia-smi), else GPU feature discovery's labels (nvidia.com/gpu.product,
 * .count, .memory), else node-labels' provision.dev/gpu-model and
 * provision.dev/gpu-count; sharing from GPU feature discovery's
 * nvidia.com/gpu.replicas with nvidia.com/gpu.sharing-strategy
 * time-slicing (2 to PROFILES_MAX_SHARING, else not shared); never more
 * GPUs than allocatable nvidia.com/gpu (divided by the sharing) when the
 * device plugin reports it; schedulable = Ready, not cordoned, no
 * NoSchedule taint.
 * Strings point into storage the caller frees with profiles_nodes_free().
 * Returns 0, or -1 with err set when the text is not a node list.
 */
struct error;
int profiles_nodes_from_json(struct profile_node **out, size_t *nr, const char *json, size_t len,
			     struct error *err);
void profiles_nodes_free(struct profile_node *nodes, size_t nr);

/* Parse Kubernetes quantities: CPU ("16", "15500m") and memory ("16212104Ki", "64Gi"). */
int profiles_parse_cpu(const char *q, unsigned *milli);
int profiles_parse_mem(const char *q, uint64_t *mib);

/* Allocatable resources of a node from its facts, when the kubelet's are not known. */
void profiles_allocatable(unsigned cpus, uint64_t mem_kib, unsigned *cpu_milli, uint64_t *mem_mib);

/* The label value GPU feature discovery gives a model: spaces become '-'. */
char *profiles_gpu_label(const char *model);

/*
 * Generate the profiles (CPU-only first, then GPU groups by model name).
 * Returns the count in *nr; never fails (a cluster without schedulable
 * nodes gets no profile at all).
 */
void profiles_generate(struct hub_profile **out, size_t *nr, const struct profile_node *nodes,
		       size_t nr_nodes);
void profiles_free(struct hub_profile *p, size_t nr);

/*
 * Keep room for the add-ons' DaemonSet pods on every node: the kubelet's
 * allocatable leaves them out.  Takes PROFILES_ADDONS_* off each node (not
 * below 0); plan_add_profiles() and the GPU-pod check both call it.
 */
void profiles_reserve_addons(struct profile_node *nodes, size_t nr);

#endif
