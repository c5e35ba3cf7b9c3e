/*
 * bench: `provision bench` (and `check --bench`), the judging half.  A
 * fixed workload (provision/bench/workload.c, a static binary) runs on a
 * node's host, inside a container its containerd starts (ctr, runc, the
 * node's cgroup driver), and inside one with a CPU limit the size of the
 * smallest hub profile's guarantee; provision/bench.sh drives it there and
 * prints one line per run.  This module parses those lines (a node is
 * untrusted input: bounded, strict, a malformed line fails the node), takes
 * each variant's median, judges the ratios into validation checks, and
 * writes and compares the figures of the run record.  Pure functions of
 * their input: no I/O, no threads.
 *
 * Variants, each run `repeat` times interleaved (host, container, capped,
 * host-1) so that a slow spell of the node hits all of them alike:
 *   host       THREADS threads (the node's CPUs) on the host;
 *   container  the same in a container (`ctr run --rootfs`, only the binary);
 *   capped     the same with --cpu-quota limit*100000 --cpu-period 100000;
 *   host-1     one thread on the host: what the limit predicts from.
 * Expected: container/host >= BENCH_RATIO_MIN (else a problem, with its
 * likely cause); capped about min(limit, THREADS) x host-1 (a multi-thread
 * kernel under a quota of half a CPU gets half of one CPU's throughput).
 *
 * Ownership: struct bench_node owns its strings; bench_node_release().
 */
#ifndef PROVISION_BENCH_H
#define PROVISION_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"
#include "validate.h"

#define BENCH_RATIO_MIN 0.95
/* capped against its prediction: outside [1 - this, 1 + this] is a warning */
#define BENCH_CAP_TOLERANCE    0.30
#define BENCH_MS	       1000 /* measuring time of each kernel in each run */
#define BENCH_REPEAT	       3    /* runs of each variant (the median is kept) */
#define BENCH_REPEAT_MAX       9
#define BENCH_OUTPUT_MAX       (64u << 10) /* what a node may print; more fails it */
#define BENCH_LINE_MAX	       512
#define BENCH_WORKLOAD_VERSION 1
/* Where the workload lives on a node (uploaded; re-sent only when it changed). */
#define BENCH_NODE_DIR "/var/lib/provision/bench"
/* The containerd namespace of the bench's containers. */
#define BENCH_NAMESPACE "provision-bench"

enum bench_variant { BENCH_HOST, BENCH_CONTAINER, BENCH_CAPPED, BENCH_HOST1, BENCH_NR_VARIANTS };

struct bench_node {
	bool ran;	  /* the script ran and its output parsed */
	char *error;	  /* why the node's bench failed as a whole (cleaned text) */
	unsigned threads; /* the workload's threads in the multi-thread variants */
	unsigned ms, repeat;
	double limit_cpus; /* the capped variant's quota, in CPUs */
	/* Per variant: the runs' figures and their medians (0 when none). */
	double cpu[BENCH_NR_VARIANTS][BENCH_REPEAT_MAX], mem[BENCH_NR_VARIANTS][BENCH_REPEAT_MAX];
	unsigned runs[BENCH_NR_VARIANTS];
	double cpu_med[BENCH_NR_VARIANTS], mem_med[BENCH_NR_VARIANTS];
	char cpu_max[BENCH_NR_VARIANTS][48]; /* the cgroup's quota the workload saw */
	char *fail[BENCH_NR_VARIANTS];	     /* why a variant could not run */
	char *ctr_version;		     /* of the ctr that started the containers */
	/* GPU nodes: the nvidia-smi figure (not a CUDA kernel). */
	bool gpu;
	double gpu_ms;
	unsigned gpu_count;
	char *gpu_fail;
};

void bench_node_release(struct bench_node *b);

/* provision/bench.sh, embedded (tools/embed.sh): what runs on the node. */
extern const char bench_script[];
extern const size_t bench_script_len;

/* "host", "container", "capped", "host-1". */
const char *bench_variant_name(enum bench_variant v);

/*
 * Parse what bench.sh printed on a node run with these threads, ms and
 * repeat, into b (released first; b->limit_cpus kept).  Returns 0, or -1
 * with err set (and b->error) on the first line that is not exactly of the
 * protocol: the whole node's bench fails then.
 */
int bench_parse(struct bench_node *b, const char *text, size_t len, unsigned threads, unsigned ms,
		unsigned repeat, struct error *err);

/*
 * The checks of node `node` into v: bench-cpu and bench-memory (container
 * against host, capped against its prediction), bench-gpu on GPU nodes
 * (expected_gpus: what the facts found).
 */
void bench_judge(struct validation *v, size_t node, const struct bench_node *b,
		 unsigned expected_gpus);

/*
 * The smallest CPU guarantee of the hub profiles that these nodes' facts
 * would give (profiles.h: capacity minus provision's reserve), in
 * millicores; without a worker among them, a CPU-only notebook's 1 CPU.
 */
struct facts;
struct node;
unsigned bench_limit_milli(const struct node *const *nodes, const struct facts *const *facts,
			   size_t nr);

/*
 * The smallest `cpu_guarantee: CORES` of the hub's rendered values
 * (roles/jupyterhub's values.yaml: one a profile), in millicores; 0 when
 * there is none of at least 0.05.
 */
unsigned bench_values_limit_milli(const char *values_yaml);

/* The record's nodes/NODE/bench: "KEY VALUE" lines, figures with one decimal. */
void bench_record(struct strbuf *out, const struct bench_node *b);

/*
 * Two records' bench files compared (a: before, b: after): per figure the
 * change in percent, "!" before a change of 5 % or more; a line when the
 * workload differs (then figures are not compared).  Appends to out, each
 * line prefixed with `indent`; nothing when neither has figures.
 */
void bench_diff(struct strbuf *out, const char *a, const char *b, const char *indent);

#endif
