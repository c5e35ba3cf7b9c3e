/*
 * provision-bench: the fixed workload of `provision bench`, run on a node's
 * host and inside containers that the node's containerd starts.
 *
 * Built here as a static binary per architecture (no library, no image, no
 * registry on the node: the container's root file system is this one file)
 * and uploaded by provision.  Its inputs are fixed so that figures compare
 * across nodes and across time; only the thread count (the node's CPUs, the
 * same in every variant on one node) and the measuring time are given.
 *
 *   provision-bench THREADS MILLISECONDS
 *
 * prints one line of key=value words:
 *
 *   v=1 threads=T ms=M cpu_mops=F mem_mbs=F cpu_max=Q/P|max|unknown
 *
 * cpu_mops: millions of iterations per second of a compute kernel (an
 *   xorshift64 step and a floating-point multiply-add, a dependent chain in
 *   registers), summed over the T threads;
 * mem_mbs: a STREAM-like triad a[i] = b[i] + s*c[i] over three arrays of
 *   4 Mi doubles (32 MiB each: larger than the last-level caches of the
 *   lab's CPUs), counted as STREAM counts it (24 bytes an element), in
 *   10^6 bytes per second, the T threads each on their share;
 * cpu_max: the CFS quota of the cgroup it runs in, as the kernel says it
 *   (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us/cpu.cfs_period_us).
 *
 * Exit status 0, or 2 with a message on stderr on bad arguments or when
 * memory or threads cannot be had.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARRAY_ELEMS (4u << 20)
#define THREADS_MAX 1024
#define MS_MIN	    100
#define MS_MAX	    60000
#define CPU_CHUNK   65536u

static double *arr_a, *arr_b, *arr_c;
static unsigned nr_threads;
static uint64_t run_ns;
static pthread_barrier_t start_line;

struct worker {
	pthread_t tid;
	unsigned index;
	uint64_t cpu_iters, mem_elems;
	uint64_t cpu_ns, mem_ns;
	double sink;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_kernel(struct worker *w)
{
	uint64_t x = 0x9e3779b97f4a7c15u ^ (w->index + 1), t0, now, n = 0;
	double acc = 1.0;
	unsigned i;

	pthread_barrier_wait(&start_line);
	t0 = mono_ns();
	do {
		for (i = 0; i < CPU_CHUNK; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			acc = acc * 0.9999999 + (double)(x & 0xffff) * 1e-6;
		}
		n += CPU_CHUNK;
		now = mono_ns();
	} while (now - t0 < run_ns);
	w->cpu_iters = n;
	w->cpu_ns = now - t0;
	w->sink += acc;
}

static void mem_kernel(struct worker *w)
{
	size_t share = ARRAY_ELEMS / nr_threads, lo = share * w->index,
	       hi = w->index + 1 == nr_threads ? ARRAY_ELEMS : lo + share, i;
	const double s = 3.0;
	uint64_t t0, now, n = 0;

	/* Each thread first touches its own share: page faults happen here, not timed. */
	for (i = lo; i < hi; i++) {
		arr_a[i] = 0.0;
		arr_b[i] = 1.0;
		arr_c[i] = 2.0;
	}
	pthread_barrier_wait(&start_line);
	t0 = mono_ns();
	do {
		for (i = lo; i < hi; i++)
			arr_a[i] = arr_b[i] + s * arr_c[i];
		n += hi - lo;
		now = mono_ns();
	} while (now - t0 < run_ns);
	w->mem_elems = n;
	w->mem_ns = now - t0;
	w->sink += arr_a[lo];
}

static void *worker_main(void *p)
{
	struct worker *w = p;

	cpu_kernel(w);
	mem_kernel(w);
	return NULL;
}

/* The first line of a small file, without its newline; 0 when read. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* The CFS quota of this process's cgroup as "Q/P", "max" or "unknown". */
static void cfs_quota(char *out, size_t size)
{
	char line[512], path[1024], q[64], p[64];
	FILE *f = fopen("/proc/self/cgroup", "r");
	const char *v2 = NULL, *v1 = NULL;
	static char v2buf[512], v1buf[512];

	snprintf(out, size, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3)) {
			snprintf(v2buf, sizeof(v2buf), "%s", line + 3);
			v2 = v2buf;
		} else {
			char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (c1 && c2 &&
			    (!strncmp(c1 + 1, "cpu,", 4) || !strncmp(c1 + 1, "cpu:", 4) ||
			     strstr(c1 + 1, ",cpu,") || strstr(c1 + 1, ",cpu:"))) {
				snprintf(v1buf, sizeof(v1buf), "%s", c2 + 1);
				v1 = v1buf;
			}
		}
	}
	fclose(f);
	if (v2) {
		/* In a cgroup namespace the path is "/": the file is at the root of the mount. */
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", strcmp(v2, "/") ? v2 : "");
		if ((!read_line(path, line, sizeof(line)) ||
		     !read_line("/sys/fs/cgroup/cpu.max", line, sizeof(line))) &&
		    sscanf(line, "%63s %63s", q, p) == 2) {
			if (!strcmp(q, "max"))
				snprintf(out, size, "max");
			else
				snprintf(out, size, "%s/%s", q, p);
			return;
		}
		/* A hybrid hierarchy has a "0::" line too: the v1 cpu controller tells. */
	}
	if (v1) {
		static const char *const dirs[] = {"/sys/fs/cgroup/cpu,cpuacct",
						   "/sys/fs/cgroup/cpu"};
		size_t k;
		for (k = 0; k < 2; k++) {
			char pp[1024];
			snprintf(path, sizeof(path), "%s%s/cpu.cfs_quota_us", dirs[k], v1);
			snprintf(pp, sizeof(pp), "%s%s/cpu.cfs_period_us", dirs[k], v1);
			if (read_line(path, q, sizeof(q)) || read_line(pp, p, sizeof(p))) {
				snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", dirs[k]);
				snprintf(pp, sizeof(pp), "%s/cpu.cfs_period_us", dirs[k]);
				if (read_line(path, q, sizeof(q)) || read_line(pp, p, sizeof(p)))
					continue;
			}
			if (!strcmp(q, "-1"))
				snprintf(out, size, "max");
			else
				snprintf(out, size, "%s/%s", q, p);
			return;
		}
	}
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct worker *w;
	unsigned ms, i;
	double mops = 0, mbs = 0, sink = 0;
	char quota[160];

	if (argc != 3 || parse_uint(argv[1], 1, THREADS_MAX, &nr_threads) ||
	    parse_uint(argv[2], MS_MIN, MS_MAX, &ms)) {
		fprintf(stderr, "usage: provision-bench THREADS(1-%d) MILLISECONDS(%d-%d)\n",
			THREADS_MAX, MS_MIN, MS_MAX);
		return 2;
	}
	run_ns = (uint64_t)ms * 1000000u;
	arr_a = malloc(ARRAY_ELEMS * sizeof(double));
	arr_b = malloc(ARRAY_ELEMS * sizeof(double));
	arr_c = malloc(ARRAY_ELEMS * sizeof(double));
	w = calloc(nr_threads, sizeof(*w));
	if (!arr_a || !arr_b || !arr_c || !w) {
		fprintf(stderr, "provision-bench: out of memory (needs %u MiB)\n",
			(unsigned)(3 * ARRAY_ELEMS * sizeof(double) >> 20));
		return 2;
	}
	/* The barrier is met twice per thread (before each kernel), by the threads alone. */
	pthread_barrier_init(&start_line, NULL, nr_threads);
	for (i = 0; i < nr_threads; i++) {
		w[i].index = i;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i])) {
			fprintf(stderr, "provision-bench: cannot start thread %u\n", i);
			return 2;
		}
	}
	for (i = 0; i < nr_threads; i++) {
		pthread_join(w[i].tid, NULL);
		mops += (double)w[i].cpu_iters / ((double)w[i].cpu_ns / 1e9) / 1e6;
		mbs += (double)w[i].mem_elems * 24.0 / ((double)w[i].mem_ns / 1e9) / 1e6;
		sink += w[i].sink;
	}
	cfs_quota(quota, sizeof(quota));
	/* sink keeps the kernels' results alive; it is never printed. */
	if (sink == -1.0)
		fputs("", stderr);
	printf("v=1 threads=%u ms=%u cpu_mops=%.1f mem_mbs=%.1f cpu_max=%s\n", nr_threads, ms, mops,
	       mbs, quota);
	return 0;
}
