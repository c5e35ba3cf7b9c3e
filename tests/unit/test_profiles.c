/*
 * Unit tests for profiles.c on the seed labs (REFERENCE.md §1): no profile
 * exceeds any node it can land on, every GPU model is offered, limits stay
 * within 1.5x the guarantees.  PROVISION_TEST_VERBOSE=1 prints the profiles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "util.h"

static struct profile_node node(const char *name, unsigned cpus, uint64_t mem_kib, bool sched)
{
	struct profile_node n = {0};

	n.name = name;
	profiles_allocatable(cpus, mem_kib, &n.cpu_milli, &n.mem_mib);
	n.schedulable = sched;
	return n;
}

static void gpu(struct profile_node *n, const char *model, unsigned mib)
{
	n->gpus[n->nr_gpus].model = model;
	n->gpus[n->nr_gpus].memory_mib = mib;
	n->nr_gpus++;
}

static const struct profile_node *find_node(const struct profile_node *nodes, size_t nr,
					    const char *name)
{
	size_t i;
	for (i = 0; i < nr; i++)
		if (!strcmp(nodes[i].name, name))
			return &nodes[i];
	fail_msg("profile names unknown node %s", name);
	return NULL;
}

/* The invariants every generated list must satisfy. */
static void check_invariants(const struct hub_profile *p, size_t nr, const struct profile_node *nodes,
			     size_t nr_nodes)
{
	size_t i, k, g;

	for (i = 0; i < nr; i++) {
		assert_true(p[i].nr_nodes > 0);
		assert_true(p[i].cpu_guarantee_milli > 0 && p[i].mem_guarantee_mib > 0);
		assert_true(p[i].cpu_limit_milli >= p[i].cpu_guarantee_milli);
		assert_true(p[i].mem_limit_mib >= p[i].mem_guarantee_mib);
		assert_true(p[i].cpu_limit_milli * 2 <= p[i].cpu_guarantee_milli * 3);
		assert_true(p[i].mem_limit_mib * 2 <= p[i].mem_guarantee_mib * 3);
		for (k = 0; k < p[i].nr_nodes; k++) {
			const struct profile_node *n = find_node(nodes, nr_nodes, p[i].nodes[k]);
			assert_true(n->schedulable);
			assert_true(p[i].cpu_limit_milli <= n->cpu_milli);
			assert_true(p[i].mem_limit_mib <= n->mem_mib);
			assert_true(p[i].gpus <= n->nr_gpus);
			/* Every GPU of the node in use at once: their limits fit the node. */
			if (p[i].gpus) {
				assert_true((uint64_t)p[i].cpu_limit_milli * n->nr_gpus / p[i].gpus <=
					    n->cpu_milli);
				assert_true(p[i].mem_limit_mib * n->nr_gpus / p[i].gpus <= n->mem_mib);
			}
		}
	}
	/* Every GPU model of a schedulable node is offered by some profile. */
	for (k = 0; k < nr_nodes; k++) {
		for (g = 0; g < nodes[k].nr_gpus && nodes[k].schedulable; g++) {
			bool offered = false;
			const char *m = nodes[k].gpus[g].model;
			const char *short_m = strncmp(m, "NVIDIA ", 7) ? m : m + 7;
			for (i = 0; i < nr; i++)
				offered = offered || (p[i].gpus && strstr(p[i].display_name, short_m));
			if (!offered)
				fail_msg("GPU model %s of %s is not offered", m, nodes[k].name);
		}
	}
}

static void print(const char *lab, const struct hub_profile *p, size_t nr)
{
	size_t i;
	const char *v = getenv("PROVISION_TEST_VERBOSE");

	if (!v || strcmp(v, "1"))
		return;
	printf("# %s\n", lab);
	for (i = 0; i < nr; i++)
		printf("#  %-34s gpu=%u cpu %u..%u m mem %llu..%llu MiB %s=%s\n#    %s\n#    %s\n",
		       p[i].display_name, p[i].gpus, p[i].cpu_guarantee_milli, p[i].cpu_limit_milli,
		       (unsigned long long)p[i].mem_guarantee_mib,
		       (unsigned long long)p[i].mem_limit_mib,
		       p[i].selector_key ? p[i].selector_key : "-",
		       p[i].selector_value ? p[i].selector_value : "-", p[i].description,
		       p[i].reasoning);
}

static const struct hub_profile *by_slug(const struct hub_profile *p, size_t nr, const char *slug)
{
	size_t i;
	for (i = 0; i < nr; i++)
		if (!strcmp(p[i].slug, slug))
			return &p[i];
	fail_msg("no profile %s", slug);
	return NULL;
}

static void test_lab_b(void **state)
{
	struct profile_node n[5] = {
		node("b-0", 10, 16314504, false), /* control plane: tainted */
		node("b-2", 16, 16314504, true),
		node("b-3", 12, 16314504, true),
		node("b-4", 16, 65729300, true),
		node("b-5", 16, 65729300, true), /* a second RTX 3070 node */
	};
	struct hub_profile *p;
	size_t nr;

	gpu(&n[1], "NVIDIA GeForce GTX 1080 Ti", 11264);
	gpu(&n[2], "NVIDIA GeForce RTX 2080 Ti", 11264);
	gpu(&n[3], "NVIDIA GeForce RTX 3070", 8192);
	gpu(&n[4], "NVIDIA GeForce RTX 3070", 8192);
	profiles_generate(&p, &nr, n, 5);
	print("lab B", p, nr);
	assert_int_equal(nr, 4);
	assert_string_equal(p[0].slug, "cpu");
	assert_int_equal(p[0].gpus, 0);
	assert_int_equal(p[0].nr_nodes, 4);
	assert_string_equal(by_slug(p, nr, "gpu-geforce-rtx-3070-x1")->display_name,
			    "1× GeForce RTX 3070 (8 GiB)");
	assert_string_equal(by_slug(p, nr, "gpu-geforce-rtx-3070-x1")->selector_value,
			    "NVIDIA-GeForce-RTX-3070");
	assert_int_equal(by_slug(p, nr, "gpu-geforce-rtx-3070-x1")->nr_nodes, 2);
	assert_string_equal(by_slug(p, nr, "gpu-geforce-gtx-1080-ti-x1")->display_name,
			    "1× GeForce GTX 1080 Ti (11 GiB)");
	/* b-3 has 12 CPUs: 12000 - 1000 reserved = 11000 m for its one GPU: limit
	 * 10900 (rounded down to 100 m), guarantee 2/3 of the share. */
	assert_int_equal(by_slug(p, nr, "gpu-geforce-rtx-2080-ti-x1")->cpu_guarantee_milli, 7300);
	assert_int_equal(by_slug(p, nr, "gpu-geforce-rtx-2080-ti-x1")->cpu_limit_milli, 10900);
	check_invariants(p, nr, n, 5);
	profiles_free(p, nr);
}

static void test_lab_a(void **state)
{
	struct profile_node n[3] = {
		node("a-01", 12, 16314504, false),
		node("a-2", 24, 49152000, true),
		node("a-3", 16, 16314504, true),
	};
	struct hub_profile *p;
	const struct hub_profile *mixed1, *mixed2;
	size_t nr;

	gpu(&n[1], "NVIDIA GeForce RTX 4080", 16376);
	gpu(&n[1], "NVIDIA A2", 15356);
	gpu(&n[2], "NVIDIA GeForce GTX 1080 Ti", 11264);
	profiles_generate(&p, &nr, n, 3);
	print("lab A", p, nr);
	/* cpu, 1080 Ti x1, a-2 x1 and x2 */
	assert_int_equal(nr, 4);
	mixed1 = by_slug(p, nr, "gpu-a-2-x1");
	mixed2 = by_slug(p, nr, "gpu-a-2-x2");
	assert_string_equal(mixed1->display_name, "1× GeForce RTX 4080 or A2 (15 GiB) on a-2");
	assert_string_equal(mixed1->selector_key, "kubernetes.io/hostname");
	assert_int_equal(mixed2->gpus, 2);
	/* Two 1-GPU notebooks fit a-2 together. */
	assert_true(mixed1->cpu_guarantee_milli * 2 <= n[1].cpu_milli);
	assert_true(mixed1->mem_guarantee_mib * 2 <= n[1].mem_mib);
	check_invariants(p, nr, n, 3);
	profiles_free(p, nr);
}

static void test_two_gpus_of_one_model(void **state)
{
	struct profile_node n[2] = {node("x", 8, 32000000, true), node("y", 32, 128000000, true)};
	struct hub_profile *p;
	size_t nr;

	gpu(&n[0], "NVIDIA GeForce RTX 3060", 12288);
	gpu(&n[1], "NVIDIA GeForce RTX 3060", 12288);
	gpu(&n[1], "NVIDIA GeForce RTX 3060", 12288);
	profiles_generate(&p, &nr, n, 2);
	assert_int_equal(nr, 3);
	/* 1x lands on both, sized by x (the smaller share); 2x only on y. */
	assert_int_equal(by_slug(p, nr, "gpu-geforce-rtx-3060-x1")->nr_nodes, 2);
	assert_int_equal(by_slug(p, nr, "gpu-geforce-rtx-3060-x2")->nr_nodes, 1);
	assert_string_equal(by_slug(p, nr, "gpu-geforce-rtx-3060-x2")->nodes[0], "y");
	check_invariants(p, nr, n, 2);
	profiles_free(p, nr);
}

static void test_tiny_and_empty(void **state)
{
	struct profile_node n[2] = {node("small", 2, 2 * 1024 * 1024 + 900000, true),
				    node("cp", 2, 4000000, false)};
	struct hub_profile *p;
	size_t nr;

	profiles_generate(&p, &nr, n, 2);
	assert_int_equal(nr, 1);
	check_invariants(p, nr, n, 2);
	profiles_free(p, nr);
	profiles_generate(&p, &nr, n + 1, 1);
	assert_int_equal(nr, 0);
	profiles_free(p, nr);
}

static void test_from_kubectl(void **state)
{
	struct strbuf text = STRBUF_INIT;
	struct profile_node *n;
	struct error err = {0};
	size_t nr;

	assert_int_equal(read_file("tests/validate/nodes-one-notready.json", &text), 0);
	assert_int_equal(profiles_nodes_from_json(&n, &nr, text.buf, text.len, &err), 0);
	assert_int_equal(nr, 3);
	assert_string_equal(n[0].name, "b-0");
	assert_false(n[0].schedulable); /* control-plane NoSchedule taint */
	assert_int_equal(n[0].cpu_milli, 10000);
	assert_int_equal(n[0].mem_mib, 16212104 / 1024);
	assert_true(n[1].schedulable);
	assert_int_equal(n[1].nr_gpus, 1);
	assert_string_equal(n[1].gpus[0].model, "NVIDIA GeForce GTX 1080 Ti");
	assert_false(n[2].schedulable); /* NotReady */
	profiles_nodes_free(n, nr);
	strbuf_release(&text);

	strbuf_addstr(&text,
		      "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"a-2\","
		      "\"annotations\":{\"provision.dev/gpus\":\"NVIDIA GeForce RTX 4080:16376,NVIDIA A2:15356\"}},"
		      "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"23500m\",\"memory\":\"47Gi\","
		      "\"nvidia.com/gpu\":\"2\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}");
	assert_int_equal(profiles_nodes_from_json(&n, &nr, text.buf, text.len, &err), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(n[0].cpu_milli, 23500);
	assert_int_equal(n[0].mem_mib, 47 * 1024);
	assert_int_equal(n[0].nr_gpus, 2);
	assert_string_equal(n[0].gpus[1].model, "NVIDIA A2");
	assert_int_equal(n[0].gpus[1].memory_mib, 15356);
	assert_true(n[0].schedulable);
	profiles_nodes_free(n, nr);
	strbuf_release(&text);

	/* Before GPU feature discovery: node-labels' provision.dev labels, no memory known. */
	strbuf_addstr(&text,
		      "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"b-5\",\"labels\":{"
		      "\"provision.dev/gpu-model\":\"NVIDIA-GeForce-RTX-4080\",\"provision.dev/gpu-count\":\"1\"}},"
		      "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"16Gi\"},"
		      "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}");
	assert_int_equal(profiles_nodes_from_json(&n, &nr, text.buf, text.len, &err), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(n[0].nr_gpus, 1);
	assert_string_equal(n[0].gpus[0].model, "NVIDIA GeForce RTX 4080");
	assert_int_equal(n[0].gpus[0].memory_mib, 0);
	{
		struct hub_profile *p;
		size_t np;
		profiles_generate(&p, &np, n, nr);
		assert_int_equal(np, 2);
		assert_string_equal(p[1].display_name, "1× GeForce RTX 4080");
		profiles_free(p, np);
	}
	profiles_nodes_free(n, nr);
	strbuf_release(&text);

	assert_int_equal(profiles_nodes_from_json(&n, &nr, "[]", 2, &err), -1);
	/* The kind named in the message was read after the JSON was freed
	 * (found by tests/fuzz/fuzz_profiles under ASan). */
	assert_int_equal(profiles_nodes_from_json(&n, &nr, "{\"kind\":\"PodList\"}", 18, &err), -1);
	assert_string_equal(err.msg, "expected a NodeList with items, got 'PodList'");
}

/*
 * Shared GPUs (time-slicing, the inventory's gpu_sharing): b-4's RTX 3070
 * shared by 4, b-5's RTX 3070 whole.  The shared node is its own group,
 * offered one share (nvidia.com/gpu: 1), selected by GPU feature
 * discovery's product label with "-SHARED", sized for all 4 notebooks
 * at once, and labelled with what a user gets; the whole-GPU profile does
 * not land on it.
 */
static void test_shared_gpu(void **state)
{
	struct profile_node n[3] = {
		node("b-0", 10, 16314504, false),
		node("b-4", 16, 65729300, true),
		node("b-5", 16, 65729300, true),
	};
	const struct hub_profile *sh, *whole;
	struct hub_profile *p;
	size_t nr, i;

	gpu(&n[1], "NVIDIA GeForce RTX 3070", 8192);
	gpu(&n[2], "NVIDIA GeForce RTX 3070", 8192);
	n[1].sharing = 4;
	n[2].sharing = 1;
	profiles_generate(&p, &nr, n, 3);
	print("shared RTX 3070", p, nr);
	assert_int_equal(nr, 3);
	sh = by_slug(p, nr, "gpu-geforce-rtx-3070-shared-by-4");
	whole = by_slug(p, nr, "gpu-geforce-rtx-3070-x1");
	assert_int_equal(sh->gpus, 1);
	assert_int_equal(sh->nr_nodes, 1);
	assert_string_equal(sh->nodes[0], "b-4");
	assert_int_equal(whole->nr_nodes, 1);
	assert_string_equal(whole->nodes[0], "b-5");
	assert_string_equal(sh->selector_key, "nvidia.com/gpu.product");
	assert_string_equal(sh->selector_value, "NVIDIA-GeForce-RTX-3070-SHARED");
	assert_string_equal(sh->display_name, "GeForce RTX 3070 shared by up to 4 (8 GiB, not isolated)");
	assert_non_null(strstr(sh->description,
			       "RTX 3070 shared by up to 4 — expect about 1/4 of the GPU when all are busy; "
			       "GPU memory is not isolated: the 8 GiB are for all of them"));
	/* 4 notebooks at their limits fit b-4: its share is a quarter of it */
	assert_true((uint64_t)sh->cpu_limit_milli * 4 <= n[1].cpu_milli);
	assert_true(sh->mem_limit_mib * 4 <= n[1].mem_mib);
	for (i = 0; i < nr; i++)
		assert_true(p[i].gpus <= 1 || strcmp(p[i].nodes[0], "b-4"));
	check_invariants(p, nr, n, 3);
	profiles_free(p, nr);
}

/* The sharing a node's labels say (GPU feature discovery), bounded by what the plugin advertises. */
static void test_shared_from_kubectl(void **state)
{
	struct strbuf text = STRBUF_INIT;
	struct profile_node *n;
	struct error err = {0};
	size_t nr;

	strbuf_addstr(&text,
		      "{\"kind\":\"List\",\"items\":["
		      "{\"metadata\":{\"name\":\"b-4\",\"labels\":{"
		      "\"nvidia.com/gpu.product\":\"NVIDIA-GeForce-RTX-3070-SHARED\",\"nvidia.com/gpu.count\":\"1\","
		      "\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\","
		      "\"nvidia.com/gpu.memory\":\"8192\"}},"
		      "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"62Gi\","
		      "\"nvidia.com/gpu\":\"4\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
		      /* the label says 4, the plugin still advertises 1: not yet shared, no GPU to offer */
		      "{\"metadata\":{\"name\":\"b-6\",\"labels\":{"
		      "\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\"},"
		      "\"annotations\":{\"provision.dev/gpus\":\"NVIDIA GeForce RTX 3070:8192\"}},"
		      "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"62Gi\","
		      "\"nvidia.com/gpu\":\"1\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
		      /* what a node says is bounded: 1000 replicas is not sharing */
		      "{\"metadata\":{\"name\":\"b-7\",\"labels\":{"
		      "\"nvidia.com/gpu.replicas\":\"1000\",\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\"},"
		      "\"annotations\":{\"provision.dev/gpus\":\"NVIDIA GeForce RTX 3070:8192\"}},"
		      "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"62Gi\","
		      "\"nvidia.com/gpu\":\"1000\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}]}");
	assert_int_equal(profiles_nodes_from_json(&n, &nr, text.buf, text.len, &err), 0);
	assert_int_equal(nr, 3);
	assert_int_equal(n[0].sharing, 4);
	assert_int_equal(n[0].nr_gpus, 1);
	assert_string_equal(n[0].gpus[0].model, "NVIDIA GeForce RTX 3070");
	assert_int_equal(n[0].gpus[0].memory_mib, 8192);
	assert_int_equal(n[1].sharing, 4);
	assert_int_equal(n[1].nr_gpus, 0);
	assert_int_equal(n[2].sharing, 1);
	assert_int_equal(n[2].nr_gpus, 1);
	profiles_nodes_free(n, nr);
	strbuf_release(&text);
}

static void test_quantities(void **state)
{
	unsigned c;
	uint64_t m;

	assert_int_equal(profiles_parse_cpu("16", &c), 0);
	assert_int_equal(c, 16000);
	assert_int_equal(profiles_parse_cpu("15500m", &c), 0);
	assert_int_equal(c, 15500);
	assert_int_equal(profiles_parse_cpu("1.5", &c), 0);
	assert_int_equal(c, 1500);
	assert_int_equal(profiles_parse_cpu("x", &c), -1);
	/* what a node reports is untrusted: beyond an unsigned in millicores, or NaN, is refused
	 * (fuzz_profiles found 6.57611e+09 converted to unsigned: undefined behaviour) */
	assert_int_equal(profiles_parse_cpu("6576110", &c), -1);
	assert_int_equal(profiles_parse_cpu("5000000000m", &c), -1);
	assert_int_equal(profiles_parse_cpu("nan", &c), -1);
	assert_int_equal(profiles_parse_cpu("999999", &c), 0);
	assert_int_equal(c, 999999000u);
	assert_int_equal(profiles_parse_mem("1e18Ti", &m), -1);
	assert_int_equal(profiles_parse_mem("nan", &m), -1);
	assert_int_equal(profiles_parse_mem("16212104Ki", &m), 0);
	assert_int_equal(m, 15832);
	assert_int_equal(profiles_parse_mem("64Gi", &m), 0);
	assert_int_equal(m, 65536);
	assert_int_equal(profiles_parse_mem("1073741824", &m), 0);
	assert_int_equal(m, 1024);
	assert_int_equal(profiles_parse_mem("5Qi", &m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lab_b),
		cmocka_unit_test(test_lab_a),
		cmocka_unit_test(test_two_gpus_of_one_model),
		cmocka_unit_test(test_tiny_and_empty),
		cmocka_unit_test(test_from_kubectl),
		cmocka_unit_test(test_quantities),
		cmocka_unit_test(test_shared_gpu),
		cmocka_unit_test(test_shared_from_kubectl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
