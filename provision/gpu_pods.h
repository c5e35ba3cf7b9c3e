/*
 * gpu_pods: "a GPU pod sees its GPU".  For every GPU profile the hub
 * offers (profiles_generate() over the cluster's Nodes, as
 * plan_add_profiles() makes them) and every node it can land on, a pod with
 * that profile's spec -- runtimeClassName, the nvidia.com/gpu limit, the
 * profile's nodeSelector, plus kubernetes.io/hostname to pin it to the
 * node -- runs `nvidia-smi -L` in a CUDA image and must list the node's
 * model, once per GPU it asked for.  A pod that holds nvidia.com/gpu but
 * runs without the NVIDIA runtime finds no nvidia-smi: the failure the
 * allocatable count and the operator's own validator cannot see.  And a
 * pod of each profile without a GPU (CPU only: no limit, its
 * NVIDIA_VISIBLE_DEVICES) pinned to each GPU node must list none: nvidia is
 * those nodes' default runtime and the CUDA image asks for every GPU
 * (profiles.h, PROFILES_NO_GPU_DEVICES).
 *
 * Three pure steps, so that they are tested without a cluster:
 * gpu_pods_plan() (the pods, from `kubectl get nodes -o json`),
 * gpu_pods_script() (the POSIX sh that the control plane runs: create a
 * round of pods, one per node at a time, wait at most the timeout, print
 * each pod as JSON between markers, delete it) and gpu_pods_validate() (one
 * check `gpu-pod` per node from that output).
 *
 * Ownership: a struct gpu_pod_plan owns its pods; gpu_pods_release().
 */
#ifndef PROVISION_GPU_PODS_H
#define PROVISION_GPU_PODS_H

#include <stddef.h>

#include "inventory.h"
#include "util.h"
#include "validate.h"

#define GPU_PODS_NAMESPACE "default"
#define GPU_PODS_LABEL	   "provision.dev/check" /* = gpu-pod on every check pod */
/* The CUDA image of the GPU Operator v24.6.1's own workloads (operator.initContainer; v26.7.0 has no such value). */
#define GPU_PODS_IMAGE	   "nvcr.io/nvidia/cuda:12.5.1-base-ubi8"
#define GPU_PODS_TIMEOUT_S 90 /* per round: scheduling, image pull, the run */
#define GPU_PODS_BEGIN	   "=== provision gpu-pod "
#define GPU_PODS_END	   "=== end"

struct gpu_pod {
	char *name;	/* the pod's name */
	char *node;	/* the Node it is pinned to */
	size_t index;	/* into the inventory nodes given; (size_t)-1 when not there */
	char *profile;	/* the profile's display name */
	unsigned gpus;	/* its nvidia.com/gpu limit; 0: a profile without GPUs, must see none */
	char **models;	/* the node's GPU models (nvidia-smi's names), NULL-terminated */
	unsigned round; /* pods of one node run one after the other: 0, 1, ... */
	char *manifest; /* the Pod as JSON */
};

struct gpu_pod_plan {
	struct gpu_pod *pods;
	size_t nr;
	unsigned rounds;
	size_t *
	    unplaced; /* inventory indexes of GPU nodes no GPU profile lands on (not schedulable) */
	size_t nr_unplaced;
};

/*
 * The pods from `kubectl get nodes -o json` (the same Nodes and the same
 * add-on reserve plan_add_profiles() uses).  Returns 0 (a plan with no pod
 * when no node reports a GPU), or -1 with err set when the text is not a
 * NodeList.
 */
int gpu_pods_plan(struct gpu_pod_plan *plan, const char *nodes_json, size_t len,
		  const struct node *const *nodes, size_t nr, struct error *err);

/* The script for the control plane (kubectl with admin.conf); NULL when the plan has no pod. */
char *gpu_pods_script(const struct gpu_pod_plan *plan, unsigned timeout_s);

/*
 * One check `gpu-pod` per GPU node of the plan, from the script's output
 * (status: its exit status; 0 expected).  A node the plan could not place
 * a pod on is skipped, saying why.
 */
void gpu_pods_validate(struct validation *v, const struct gpu_pod_plan *plan, const char *out,
		       size_t len, int status, unsigned timeout_s);

void gpu_pods_release(struct gpu_pod_plan *plan);

#endif
