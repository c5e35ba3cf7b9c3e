/*
 * Unit tests for images.c: references normalised as the CRI does, Helm's
 * coalescing of values, the images of a manifest, chart archives (subchart
 * folders and archives, bad archives), and the image list of a cluster
 * from the project's own roles: the stand-in charts of tests/fakes/charts
 * (always), and the real charts of ../shared/upstream/charts when that
 * folder is there (skipped, saying so, when it is not).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts.h"
#include "images.h"
#include "inventory.h"
#include "plan.h"
#include "role.h"
#include "transport.h"
#include "util.h"

static char dir[64];

static int setup(void **unused)
{
	strcpy(dir, "/tmp/provision-test-images-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **unused)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	int rc = system(cmd);

	free(cmd);
	return rc;
}

static void norm_ok(const char *in, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};

	if (images_normalize(in, strlen(in), &sb, &err) < 0)
		fail_msg("'%s': %s", in, err.msg);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void norm_bad(const char *in)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};

	if (images_normalize(in, strlen(in), &sb, &err) == 0)
		fail_msg("'%s' accepted as '%s'", in, sb.buf);
	assert_non_null(err.msg);
	strbuf_release(&sb);
}

static void test_normalize(void **unused)
{
	norm_ok("traefik:v2.11.0", "docker.io/library/traefik:v2.11.0");
	norm_ok("traefik", "docker.io/library/traefik:latest");
	norm_ok("flannel/flannel:v0.25.6", "docker.io/flannel/flannel:v0.25.6");
	norm_ok("index.docker.io/library/busybox:1", "docker.io/library/busybox:1");
	norm_ok("registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10.2");
	norm_ok("quay.io/jupyterhub/k8s-hub:3.3.8", "quay.io/jupyterhub/k8s-hub:3.3.8");
	norm_ok("localhost:5000/x", "localhost:5000/x:latest");
	norm_ok("198.18.0.1:5000/lab/big:v1", "198.18.0.1:5000/lab/big:v1");
	norm_ok("registry.k8s.io/coredns/coredns:v1.13.1",
		"registry.k8s.io/coredns/coredns:v1.13.1");
	norm_ok("nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
		"nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless");
	norm_ok("quay.io/a/b@sha256:"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"quay.io/a/b@sha256:"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	norm_bad("");
	norm_bad("reg.io/Upper:1");
	norm_bad("a b:1");
	norm_bad("x:");
	norm_bad(":tag");
	norm_bad("reg.io/x@sha256:abc");
	norm_bad("reg.io//x");
	norm_bad("reg.io/x/:1");
	norm_bad("reg.io/-x");
	norm_bad("x:a/b");
	norm_bad("reg.io:/x");
	norm_bad("x\x1b[31m:1");
}

static void test_registry(void **unused)
{
	struct strbuf sb = STRBUF_INIT;

	images_registry("registry.k8s.io/pause:3.9", &sb);
	assert_string_equal(sb.buf, "registry.k8s.io");
	strbuf_reset(&sb);
	images_registry("docker.io/library/traefik:v2", &sb);
	assert_string_equal(sb.buf, "docker.io");
	strbuf_release(&sb);
}

static const char *str_at(const struct tval *root, const char *dotted)
{
	const struct tval *v = tval_lookup(root, dotted);
	return v && v->kind == TVAL_STR ? v->str : NULL;
}

static void test_values_merge(void **unused)
{
	struct tval *v = tval_new_map();
	struct error err = {0};
	const char *defaults = "image:\n  repository: r/x\n  tag: v1\nlist: [a, b]\n"
			       "drop: {a: 1}\nkeep: 1\n";
	const char *user = "image:\n  tag: v2\nlist: [c]\ndrop: ~\nnew: {deep: {er: yes}}\n";

	assert_int_equal(images_values_merge(v, "defaults", defaults, strlen(defaults), &err), 0);
	assert_int_equal(images_values_merge(v, "user", user, strlen(user), &err), 0);
	assert_string_equal(str_at(v, "image.repository"), "r/x"); /* maps merge */
	assert_string_equal(str_at(v, "image.tag"), "v2");
	assert_int_equal(tval_lookup(v, "list")->nr, 1); /* lists replace */
	assert_string_equal(str_at(v, "list.0"), "c");
	assert_null(tval_lookup(v, "drop")); /* a null removes */
	assert_string_equal(str_at(v, "keep"), "1");
	assert_string_equal(str_at(v, "new.deep.er"), "yes");
	/* errors name the file and position */
	assert_int_equal(images_values_merge(v, "bad.yaml", "a: [", 4, &err), -1);
	assert_non_null(strstr(err.msg, "bad.yaml:"));
	assert_int_equal(images_values_merge(v, "list.yaml", "- a\n", 4, &err), -1);
	/* aliases that multiply are bounded */
	{
		struct strbuf bomb = STRBUF_INIT;
		int i;
		strbuf_addstr(&bomb, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
		for (i = 1; i < 9; i++)
			strbuf_addf(&bomb,
				    "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n",
				    i, i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
		assert_int_equal(images_values_merge(v, "bomb", bomb.buf, bomb.len, &err), -1);
		assert_non_null(strstr(err.msg, "too deep"));
		strbuf_release(&bomb);
	}
	tval_free(v);
}

static void test_manifest(void **unused)
{
	const char *y =
	    "kind: Namespace\n---\nkind: DaemonSet\nspec:\n  template:\n    spec:\n"
	    "      initContainers:\n      - image: ghcr.io/flannel-io/flannel-cni-plugin:v1\n"
	    "      containers:\n      - image: ghcr.io/flannel-io/flannel:v0.28.9\n"
	    "      - image: busybox\n---\n# image: not.this/one\n"
	    "kind: Pod\nspec:\n  containers:\n  - image: ghcr.io/flannel-io/flannel:v0.28.9\n";
	char **refs = NULL;
	size_t nr = 0, i;
	struct error err = {0};

	assert_int_equal(images_manifest_refs(&refs, &nr, "m.yml", y, strlen(y), &err), 0);
	assert_int_equal(nr, 3);
	assert_string_equal(refs[0], "ghcr.io/flannel-io/flannel-cni-plugin:v1");
	assert_string_equal(refs[1], "ghcr.io/flannel-io/flannel:v0.28.9");
	assert_string_equal(refs[2], "docker.io/library/busybox:latest");
	for (i = 0; i < nr; i++)
		free(refs[i]);
	free(refs);
	refs = NULL;
	nr = 0;
	assert_int_equal(images_manifest_refs(&refs, &nr, "m.yml", "image: 'a b'\n", 13, &err), -1);
	for (i = 0; i < nr; i++)
		free(refs[i]);
	free(refs);
}

/* tar -czf of `what` (relative to `from`) into a buffer. */
static void tgz_of(struct strbuf *out, const char *from, const char *what)
{
	char *cmd = xasprintf("tar -C '%s' -czf - %s", from, what);
	FILE *p = popen(cmd, "r");
	char buf[8192];
	size_t n;

	assert_non_null(p);
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		strbuf_add(out, buf, n);
	assert_int_equal(pclose(p), 0);
	free(cmd);
}

/* Write text to path (which it frees). */
static void write_file(char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(path);
}

static void test_chart(void **unused)
{
	char *top = xasprintf("%s/c", dir), *cmd;
	struct strbuf tgz = STRBUF_INIT, sub = STRBUF_INIT;
	struct tval *v = NULL;
	struct error err = {0};

	/* parent, a subchart as a folder, another as a nested archive */
	cmd = xasprintf("mkdir -p '%s/parent/charts/nfd' '%s/s2/sub2'", top, top);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	write_file(xasprintf("%s/parent/Chart.yaml", top), "name: parent\nappVersion: v9\n");
	write_file(xasprintf("%s/parent/values.yaml", top),
		   "op:\n  image: x\nnfd:\n  image:\n    tag: mine\n");
	write_file(xasprintf("%s/parent/charts/nfd/Chart.yaml", top),
		   "name: nfd\nappVersion: v0.19\n");
	write_file(xasprintf("%s/parent/charts/nfd/values.yaml", top),
		   "image:\n  repository: registry.k8s.io/nfd\n  tag: ~\n");
	write_file(xasprintf("%s/s2/sub2/Chart.yaml", top), "name: sub2\nappVersion: '2'\n");
	write_file(xasprintf("%s/s2/sub2/values.yaml", top), "image: s2\n");
	cmd = xasprintf("%s/s2", top);
	tgz_of(&sub, cmd, "sub2");
	free(cmd);
	{
		char *p = xasprintf("%s/parent/charts/sub2-1.0.tgz", top);
		FILE *f = fopen(p, "w");
		fwrite(sub.buf, 1, sub.len, f);
		fclose(f);
		free(p);
	}
	tgz_of(&tgz, top, "parent");
	if (images_chart_load(&v, tgz.buf, tgz.len, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(str_at(v, "chart.appVersion"), "v9");
	assert_string_equal(str_at(v, "values.op.image"), "x");
	/* the parent's values for a subchart over its own */
	assert_string_equal(str_at(v, "values.nfd.image.repository"), "registry.k8s.io/nfd");
	assert_string_equal(str_at(v, "values.nfd.image.tag"), "mine");
	assert_string_equal(str_at(v, "subcharts.nfd.appVersion"), "v0.19");
	assert_string_equal(str_at(v, "values.sub2.image"), "s2");
	assert_string_equal(str_at(v, "subcharts.sub2.appVersion"), "2");
	tval_free(v);
	/* not an archive, no Chart.yaml, cut short */
	assert_int_equal(images_chart_load(&v, "hello", 5, &err), -1);
	assert_non_null(strstr(err.msg, "gzip"));
	strbuf_reset(&sub);
	cmd = xasprintf("%s/parent", top);
	tgz_of(&sub, cmd, "values.yaml");
	free(cmd);
	assert_int_equal(images_chart_load(&v, sub.buf, sub.len, &err), -1);
	assert_non_null(strstr(err.msg, "Chart.yaml"));
	assert_int_equal(images_chart_load(&v, tgz.buf, tgz.len / 2, &err), -1);
	strbuf_release(&tgz);
	strbuf_release(&sub);
	free(top);
}

/* ---- the cluster's list, from the project's roles ---- */

static const char *lab = "cluster:\n"
			 "  name: lab\n"
			 "  kubernetes_version: \"1.36.4\"\n"
			 "ssh:\n"
			 "  user: admin\n"
			 "storage:\n"
			 "  nfs:\n"
			 "    server: nfs\n"
			 "jupyterhub:\n"
			 "  image: quay.io/jupyter/pytorch-notebook:cuda12-python-3.11\n"
			 "  admin_users: [a]\n"
			 "nodes:\n"
			 "  - name: cp\n"
			 "    address: 198.18.0.10\n"
			 "    roles: [control-plane]\n"
			 "  - name: nfs\n"
			 "    address: 198.18.0.11\n"
			 "    roles: [nfs-server]\n"
			 "  - name: gpu\n"
			 "    address: 198.18.0.12\n"
			 "    roles: [worker]\n"
			 "    gpus: 1\n"
			 "  - name: cpu\n"
			 "    address: 198.18.0.13\n"
			 "    roles: [worker]\n";

/* Put chart archive `tgz` in the cache as artifact `name` (pinned to its own hash here). */
static void cache_chart(struct role_set *rs, const char *cache, const char *name,
			const struct strbuf *tgz)
{
	size_t i;
	char hex[65], *path, *d = xasprintf("%s/sha256", cache);
	FILE *f;

	transport_sha256_hex(hex, tgz->buf, tgz->len);
	mkdir(cache, 0700);
	mkdir(d, 0700);
	path = xasprintf("%s/%s", d, hex);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(tgz->buf, 1, tgz->len, f);
	fclose(f);
	for (i = 0; i < rs->artifacts.nr; i++)
		if (!strcmp(rs->artifacts.items[i].name, name)) {
			free(rs->artifacts.items[i].sha256);
			rs->artifacts.items[i].sha256 = xstrdup(hex);
		}
	free(path);
	free(d);
}

struct cluster {
	struct inventory *inv;
	struct role_set rs;
	const struct node *nodes[4];
	struct facts facts[4];
	const struct facts *fp[4];
	struct images_plan plan;
};

/* The inventory cluster_load reads: lab, or another version of it. */
static const char *lab_text;

static void cluster_load(struct cluster *c)
{
	const char *text = lab_text ? lab_text : lab;
	struct diag_list dl;
	size_t i;

	memset(c, 0, sizeof(*c));
	diag_list_init(&dl);
	if (inventory_load_buffer(&c->inv, "lab.yaml", text, strlen(text), &dl) < 0)
		fail_msg("inventory: %s", dl.nr ? dl.items[0].msg : "?");
	if (role_set_load(&c->rs, "roles", &dl) < 0) {
		for (i = 0; i < dl.nr; i++)
			print_error("%s\n", diag_format(&dl.items[i]));
		fail_msg("roles/ does not load");
	}
	diag_list_release(&dl);
	for (i = 0; i < 4; i++) {
		c->nodes[i] = &c->inv->nodes[i];
		c->facts[i].os_id = xstrdup("debian");
		c->facts[i].os_version = xstrdup("12");
		c->fp[i] = &c->facts[i];
	}
	/* node "gpu": an NVIDIA card on its PCI bus, no driver answering */
	c->facts[2].nvidia_pci = xcalloc(2, sizeof(char *));
	c->facts[2].nvidia_pci[0] = xstrdup("0000:01:00.0 0x2484");
	c->facts[2].nr_nvidia_pci = 1;
}

static void cluster_release(struct cluster *c)
{
	size_t i;

	images_plan_release(&c->plan);
	for (i = 0; i < 4; i++)
		facts_release(&c->facts[i]);
	role_set_release(&c->rs);
	inventory_free(c->inv);
}

/* Node i's refs (every role) as one string. */
static char *refs_of(struct cluster *c, size_t i, const char *role)
{
	struct strbuf sb = STRBUF_INIT;
	const char *roles[] = {role, NULL};

	images_node_refs(&c->plan, i, role ? roles : NULL, &sb);
	return strbuf_detach(&sb, NULL);
}

static void expect_has(const char *refs, const char *ref, bool want)
{
	char *pad = xasprintf(" %s ", refs), *needle = xasprintf(" %s ", ref);
	bool has = strstr(pad, needle) != NULL;

	if (has != want)
		fail_msg("%s %s in '%s'", ref, want ? "missing" : "unexpected", refs);
	free(pad);
	free(needle);
}

static void test_plan_stand_ins(void **unused)
{
	struct cluster c;
	struct strbuf tgz = STRBUF_INIT;
	struct error err = {0};
	char *cache = xasprintf("%s/cache", dir), *r;
	static const char *const charts[][2] = {
	    {"gpu-operator-chart", "gpu-operator"},
	    {"nfs-subdir-external-provisioner-chart", "nfs-subdir-external-provisioner"},
	    {"jupyterhub-chart", "jupyterhub"},
	};
	size_t k;

	cluster_load(&c);
	for (k = 0; k < 3; k++) {
		strbuf_reset(&tgz);
		tgz_of(&tgz, "tests/fakes/charts", charts[k][1]);
		cache_chart(&c.rs, cache, charts[k][0], &tgz);
	}
	if (plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	for (k = 0; k < c.plan.nr_unresolved; k++)
		print_error("unresolved: %s\n", c.plan.unresolved[k]);
	assert_int_equal(c.plan.nr_unresolved, 0);

	/* control plane: kubeadm's list, Flannel's, the hub, the operator */
	r = refs_of(&c, 0, NULL);
	expect_has(r, "registry.k8s.io/kube-apiserver:v1.36.4", true);
	expect_has(r, "registry.k8s.io/kube-controller-manager:v1.36.4", true);
	expect_has(r, "registry.k8s.io/kube-scheduler:v1.36.4", true);
	expect_has(r, "registry.k8s.io/kube-proxy:v1.36.4", true);
	expect_has(r, "registry.k8s.io/pause:3.10.2", true);
	expect_has(r, "registry.k8s.io/etcd:3.6.8-0", true);
	expect_has(r, "registry.k8s.io/coredns/coredns:v1.13.1", true);
	expect_has(r, "ghcr.io/flannel-io/flannel:v0.28.9", true);
	expect_has(r, "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3", true);
	expect_has(r, "quay.io/jupyterhub/k8s-hub:3.3.8", true);
	expect_has(r, "nvcr.io/nvidia/gpu-operator:v26.7.0", true);
	/* no notebook and no GPU operand on a control plane that is not a worker */
	expect_has(r, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", false);
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", false);
	free(r);
	/* the NFS server is not a Kubernetes node: nothing */
	r = refs_of(&c, 1, NULL);
	assert_string_equal(r, "");
	free(r);
	/* the GPU worker: the operands (the host driver does not answer: the driver container, for
	 * its OS) */
	r = refs_of(&c, 2, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", true);
	expect_has(r, "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0", true);
	expect_has(r, "nvcr.io/nvidia/gpu-operator:v26.7.0", true); /* the validator */
	expect_has(r, "nvcr.io/nvidia/driver:595.91.07-debian12", true);
	free(r);
	r = refs_of(&c, 2, NULL);
	expect_has(r, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", true);
	expect_has(r, "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2", true);
	expect_has(r, "quay.io/jupyterhub/configurable-http-proxy:4.6.1", true);
	expect_has(r, "registry.k8s.io/kube-apiserver:v1.36.4", false);
	free(r);
	/* the CPU worker: no operand, the notebook image */
	r = refs_of(&c, 3, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", false);
	free(r);
	r = refs_of(&c, 3, "jupyterhub");
	expect_has(r, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", true);
	free(r);
	/* what the pull step may report */
	assert_true(images_node_needs(&c.plan, 3, NULL, "registry.k8s.io/pause:3.10.2", 28));
	assert_false(images_node_needs(&c.plan, 3, NULL, "registry.k8s.io/pause:3.10", 26));
	cluster_release(&c);
	strbuf_release(&tgz);
	free(cache);
}

/*
 * The GPU Operator's driver container only on the GPU nodes whose own host
 * driver does not answer (issue 31 F10: roles/node-labels labels the others
 * nvidia.com/gpu.deploy.driver=false): a second GPU worker whose nvidia-smi
 * answers gets the operands but not the driver image.
 */
static void test_plan_driver_nodes(void **unused)
{
	struct cluster c;
	struct strbuf tgz = STRBUF_INIT;
	struct error err = {0};
	char *cache = xasprintf("%s/cache-driver", dir), *r;

	cluster_load(&c);
	c.facts[3].nvidia_smi = true;
	c.facts[3].nvidia_smi_rc = 0;
	c.facts[3].gpus = xcalloc(1, sizeof(*c.facts[3].gpus));
	c.facts[3].gpus[0].model = xstrdup("NVIDIA GeForce RTX 3070");
	c.facts[3].gpus[0].driver = xstrdup("580.95.05");
	c.facts[3].nr_gpus = 1;
	tgz_of(&tgz, "tests/fakes/charts", "gpu-operator");
	cache_chart(&c.rs, cache, "gpu-operator-chart", &tgz);
	if (plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	r = refs_of(&c, 2, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/driver:595.91.07-debian12", true);
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", true);
	free(r);
	r = refs_of(&c, 3, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/driver:595.91.07-debian12", false);
	expect_has(r, "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0", false);
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", true);
	free(r);
	cluster_release(&c);
	strbuf_release(&tgz);
	free(cache);
}

/* No GPU node: the GPU Operator's steps skip, and none of its images is listed (NFD neither). */
static void test_plan_no_gpu(void **unused)
{
	struct cluster c;
	struct strbuf tgz = STRBUF_INIT;
	struct error err = {0};
	char *cache = xasprintf("%s/cache-nogpu", dir), *r;
	size_t i;

	cluster_load(&c);
	free(c.facts[2].nvidia_pci[0]); /* no GPU on its bus now */
	c.facts[2].nr_nvidia_pci = 0;
	tgz_of(&tgz, "tests/fakes/charts", "gpu-operator");
	cache_chart(&c.rs, cache, "gpu-operator-chart", &tgz);
	if (plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	for (i = 0; i < c.plan.nr_unresolved; i++) /* the other charts are not in this cache */
		assert_null(strstr(c.plan.unresolved[i], "gpu-operator"));
	for (i = 0; i < 4; i++) {
		r = refs_of(&c, i, "gpu-operator");
		assert_string_equal(r, "");
		free(r);
	}
	cluster_release(&c);
	strbuf_release(&tgz);
	free(cache);
}

/*
 * Before the first up (fetch --images for an offline lab) no node's facts
 * are known: the inventory's `gpus:` makes the GPU worker a GPU node, and
 * the GPU Operator's cluster-wide images (the operator, NFD) are listed with
 * its operands.  Before, gpu.names came from facts only: the operands were
 * listed, the operator and NFD not, and such a bundle's up failed pulling them.
 */
/* The hub's chart: the default, the inventory's pin, a pin no role offers. */
static void test_hub_chart_pick(void **unused)
{
	struct cluster c;
	struct diag_list dl;
	const struct role *r;
	const struct role_artifact *a3 = NULL, *a4 = NULL;
	struct tval *v;
	size_t i;

	(void)unused;
	cluster_load(&c);
	r = role_set_find(&c.rs, "jupyterhub");
	assert_non_null(r);
	for (i = 0; i < r->nr_artifacts; i++) {
		if (!strcmp(r->artifacts[i].name, "jupyterhub-chart"))
			a3 = &r->artifacts[i];
		if (!strcmp(r->artifacts[i].name, "jupyterhub-chart-4"))
			a4 = &r->artifacts[i];
	}
	assert_non_null(a3);
	assert_non_null(a4);
	diag_list_init(&dl);
	assert_int_equal(0, role_set_resolve_hub_chart(&c.rs, c.inv, &dl));
	assert_string_equal("3.3.8", c.inv->hub.chart_resolved);
	assert_string_equal("jupyterhub-chart", role_chart_artifact(r, c.inv));
	assert_true(role_artifact_for(a3, c.inv, c.nodes[0]));
	assert_false(role_artifact_for(a4, c.inv, c.nodes[0]));
	v = plan_values(c.inv, c.nodes[0], NULL, NULL);
	assert_string_equal("3", tval_lookup(v, "hub.chart_major")->str);
	tval_free(v);

	c.inv->hub.chart_version = xstrdup("4.4.0");
	assert_int_equal(0, role_set_resolve_hub_chart(&c.rs, c.inv, &dl));
	assert_string_equal("4.4.0", c.inv->hub.chart_resolved);
	assert_string_equal("jupyterhub-chart-4", role_chart_artifact(r, c.inv));
	assert_false(role_artifact_for(a3, c.inv, c.nodes[0]));
	assert_true(role_artifact_for(a4, c.inv, c.nodes[0]));
	v = plan_values(c.inv, c.nodes[0], NULL, NULL);
	assert_string_equal("4", tval_lookup(v, "hub.chart_major")->str);
	assert_string_equal("4.4.0", tval_lookup(v, "hub.chart_version")->str);
	tval_free(v);
	assert_int_equal(0, dl.errors);

	free(c.inv->hub.chart_version);
	c.inv->hub.chart_version = xstrdup("4.3.0");
	assert_int_equal(-1, role_set_resolve_hub_chart(&c.rs, c.inv, &dl));
	assert_int_equal(1, dl.errors);
	assert_non_null(strstr(dl.items[0].msg, "jupyterhub.chart_version 4.3.0: no chart of that "
						"version is offered (offered: 3.3.8 (the default), 4.4.0)"));
	assert_false(role_artifact_for(a3, c.inv, c.nodes[0]));
	assert_false(role_artifact_for(a4, c.inv, c.nodes[0]));
	diag_list_release(&dl);
	cluster_release(&c);
}

/*
 * The Helm of the cluster's minor (issue 34): the newest pinned of the
 * inventory's major, Helm 4 where one is pinned when the inventory names
 * none; a major with no Helm for that minor refused at cluster.helm.
 * Before, one Helm per major served every minor (4.3.0 on 1.30: outside
 * its skew, a warning only).
 */
static void test_helm_pick(void **unused)
{
	static const struct {
		const char *kube;
		int major; /* the inventory's cluster.helm; 0: not given */
		const char *want;
	} cases[] = {
	    {"1.37.1", 0, "4.3.0"}, {"1.34.11", 0, "4.3.0"}, {"1.34.11", 3, "3.22.0"},
	    {"1.33.9", 0, "4.2.4"}, {"1.33.9", 3, "3.18.4"}, {"1.32.10", 0, "4.1.4"},
	    {"1.31.14", 0, "4.0.5"}, {"1.31.14", 3, "3.18.4"}, {"1.30.4", 0, "3.18.4"},
	    {"1.29.15", 0, "3.17.4"}, {"1.28.15", 0, "3.16.4"},
	};
	struct cluster c;
	struct diag_list dl;
	char *v;
	size_t i;

	(void)unused;
	cluster_load(&c);
	diag_list_init(&dl);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		free(c.inv->cluster.kubernetes_version);
		c.inv->cluster.kubernetes_version = xstrdup(cases[i].kube);
		c.inv->cluster.helm_major = cases[i].major;
		c.inv->cluster.helm_auto = false;
		assert_int_equal(0, role_set_resolve_helm(&c.rs, c.inv, &dl));
		v = role_set_helm_version(&c.rs, c.inv, c.nodes[0]);
		if (!v || strcmp(v, cases[i].want))
			fail_msg("Kubernetes %s, helm %d: Helm %s, want %s", cases[i].kube,
				 cases[i].major, v ? v : "(none)", cases[i].want);
		free(v);
		/* a second resolve (another pass of the same command) picks again */
		assert_int_equal(0, role_set_resolve_helm(&c.rs, c.inv, &dl));
	}
	/* auto on 1.30 then an upgrade's pass at 1.31: Helm 4 again */
	free(c.inv->cluster.kubernetes_version);
	c.inv->cluster.kubernetes_version = xstrdup("1.31.14");
	assert_int_equal(0, role_set_resolve_helm(&c.rs, c.inv, &dl));
	assert_int_equal(4, c.inv->cluster.helm_major);
	assert_int_equal(0, dl.errors);

	/* helm: 4 on 1.30: no Helm 4 supports it */
	free(c.inv->cluster.kubernetes_version);
	c.inv->cluster.kubernetes_version = xstrdup("1.30.4");
	c.inv->cluster.helm_major = 4;
	c.inv->cluster.helm_auto = false;
	c.inv->cluster.helm_pos.line = 7;
	c.inv->cluster.helm_pos.col = 9;
	assert_int_equal(-1, role_set_resolve_helm(&c.rs, c.inv, &dl));
	assert_int_equal(1, dl.errors);
	assert_int_equal(7, dl.items[0].line);
	assert_int_equal(9, dl.items[0].col);
	assert_string_equal("cluster.helm 4: no Helm 4 is pinned for Kubernetes 1.30.4 (roles/helm: "
			    "Helm 4.3.0 for 1.34-1.37, Helm 4.2.4 for 1.33, Helm 4.1.4 for 1.32, "
			    "Helm 4.0.5 for 1.31, Helm 3.22.0 for 1.34-1.37, Helm 3.18.4 for "
			    "1.30-1.33, Helm 3.17.4 for 1.29, Helm 3.16.4 for 1.28)",
			    dl.items[0].msg);
	assert_non_null(strstr(dl.items[0].hint, "remove the key"));
	assert_null(role_set_helm_version(&c.rs, c.inv, c.nodes[0]));
	diag_list_release(&dl);

	/* a minor no pinned Helm supports, no major given: at kubernetes_version */
	diag_list_init(&dl);
	free(c.inv->cluster.kubernetes_version);
	c.inv->cluster.kubernetes_version = xstrdup("1.27.16");
	c.inv->cluster.helm_major = 0;
	assert_int_equal(-1, role_set_resolve_helm(&c.rs, c.inv, &dl));
	assert_int_equal(1, dl.errors);
	assert_non_null(strstr(dl.items[0].msg, "cluster.kubernetes_version 1.27.16: no pinned Helm "
						"supports its minor"));
	diag_list_release(&dl);
	cluster_release(&c);
}

static void test_plan_no_facts(void **unused)
{
	struct cluster c;
	struct strbuf tgz = STRBUF_INIT;
	struct error err = {0};
	char *cache = xasprintf("%s/cache-nofacts", dir), *r;
	size_t i;

	cluster_load(&c);
	for (i = 0; i < 4; i++)
		c.fp[i] = NULL;
	tgz_of(&tgz, "tests/fakes/charts", "gpu-operator");
	cache_chart(&c.rs, cache, "gpu-operator-chart", &tgz);
	if (plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	r = refs_of(&c, 0, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/gpu-operator:v26.7.0", true);
	expect_has(r, "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", true);
	free(r);
	r = refs_of(&c, 2, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", true);
	expect_has(r, "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", true);
	free(r);
	r = refs_of(&c, 3, "gpu-operator");
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", false);
	free(r);
	cluster_release(&c);
	strbuf_release(&tgz);
	free(cache);
}

/* Without the chart archives in the cache: said, not guessed. */
static void test_plan_unresolved(void **unused)
{
	struct cluster c;
	struct error err = {0};
	char *cache = xasprintf("%s/empty", dir), *r;
	size_t k;
	bool said = false;

	cluster_load(&c);
	assert_int_equal(plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err),
			 0);
	for (k = 0; k < c.plan.nr_unresolved; k++)
		said = said || (strstr(c.plan.unresolved[k], "role 'jupyterhub'") &&
				strstr(c.plan.unresolved[k], "provision fetch"));
	assert_true(said);
	/* kubeadm's and Flannel's need no chart */
	r = refs_of(&c, 3, NULL);
	expect_has(r, "registry.k8s.io/kube-proxy:v1.36.4", true);
	expect_has(r, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", false);
	free(r);
	cluster_release(&c);
	free(cache);
}

/* Kubernetes 1.37.1 (the default): its kubeadm's etcd, CoreDNS and pause, from its row. */
static void test_plan_kube_137(void **unused)
{
	struct cluster c;
	struct error err = {0};
	struct strbuf sb = STRBUF_INIT;
	const char *at = strstr(lab, "1.36.4");
	char *cache = xasprintf("%s/empty-137", dir), *r;

	strbuf_add(&sb, lab, (size_t)(at - lab));
	strbuf_addstr(&sb, "1.37.1");
	strbuf_addstr(&sb, at + strlen("1.36.4"));
	lab_text = sb.buf;
	cluster_load(&c);
	lab_text = NULL;
	assert_int_equal(plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err),
			 0);
	r = refs_of(&c, 0, NULL);
	expect_has(r, "registry.k8s.io/kube-apiserver:v1.37.1", true);
	expect_has(r, "registry.k8s.io/kube-proxy:v1.37.1", true);
	expect_has(r, "registry.k8s.io/etcd:3.7.0-0", true);
	expect_has(r, "registry.k8s.io/coredns/coredns:v1.14.6", true);
	expect_has(r, "registry.k8s.io/pause:3.10.2", true);
	expect_has(r, "registry.k8s.io/etcd:3.6.8-0", false);
	free(r);
	r = refs_of(&c, 3, NULL);
	expect_has(r, "registry.k8s.io/kube-proxy:v1.37.1", true);
	expect_has(r, "registry.k8s.io/etcd:3.7.0-0", false);
	free(r);
	cluster_release(&c);
	strbuf_release(&sb);
	free(cache);
}

/* The real charts (../shared/upstream/charts): what the real values.yaml say. */
static void test_plan_real_charts(void **unused)
{
	static const char *const real[][2] = {
	    {"gpu-operator-chart", "../shared/upstream/charts/gpu-operator-v26.7.0.tgz"},
	    {"nfs-subdir-external-provisioner-chart",
	     "../shared/upstream/charts/nfs-subdir-external-provisioner-4.0.18.tgz"},
	    {"jupyterhub-chart", "../shared/upstream/charts/jupyterhub-3.3.8.tgz"},
	};
	struct cluster c;
	struct error err = {0};
	char *cache = xasprintf("%s/real", dir), *r;
	size_t k;

	for (k = 0; k < 3; k++)
		if (access(real[k][1], R_OK) < 0) {
			print_message("skipped: %s is not there (../shared/upstream)\n",
				      real[k][1]);
			skip();
		}
	cluster_load(&c);
	for (k = 0; k < 3; k++) {
		struct strbuf tgz = STRBUF_INIT;
		assert_int_equal(read_file(real[k][1], &tgz), 0);
		cache_chart(&c.rs, cache, real[k][0], &tgz);
		strbuf_release(&tgz);
	}
	assert_int_equal(plan_images(&c.plan, c.inv, &c.rs, cache, c.nodes, c.fp, 4, NULL, &err),
			 0);
	for (k = 0; k < c.plan.nr_unresolved; k++)
		print_error("unresolved: %s\n", c.plan.unresolved[k]);
	assert_int_equal(c.plan.nr_unresolved, 0);
	r = refs_of(&c, 2, NULL);
	/* GPU operator v26.7.0's values.yaml, NFD 0.19.0 (subchart appVersion) */
	expect_has(r, "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", true);
	expect_has(r, "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0", true);
	expect_has(r, "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless", true);
	expect_has(r, "nvcr.io/nvidia/gpu-operator:v26.7.0", true);
	expect_has(r, "nvcr.io/nvidia/driver:595.91.07-debian12", true);
	expect_has(r, "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0", true);
	expect_has(r, "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", true);
	/* z2jh 3.3.8 with provision's values: the hook off, the continuous puller
	 * on, no user-scheduler (its kube-scheduler image is not pulled) */
	expect_has(r, "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11", true);
	expect_has(r, "quay.io/jupyterhub/k8s-network-tools:3.3.8", true);
	expect_has(r, "registry.k8s.io/kube-scheduler:v1.26.15", false);
	expect_has(r, "registry.k8s.io/pause:3.9", true);
	expect_has(r, "quay.io/jupyterhub/k8s-image-awaiter:3.3.8", false);
	expect_has(r, "docker.io/library/traefik:v2.11.0", false);
	expect_has(r, "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2", true);
	free(r);
	r = refs_of(&c, 0, NULL);
	expect_has(r, "quay.io/jupyterhub/k8s-hub:3.3.8", true);
	expect_has(r, "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", true);
	free(r);
	cluster_release(&c);
	free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_normalize),
	    cmocka_unit_test(test_registry),
	    cmocka_unit_test(test_values_merge),
	    cmocka_unit_test(test_manifest),
	    cmocka_unit_test(test_chart),
	    cmocka_unit_test(test_plan_stand_ins),
	    cmocka_unit_test(test_plan_unresolved),
	    cmocka_unit_test(test_plan_kube_137),
	    cmocka_unit_test(test_plan_real_charts),
	    cmocka_unit_test(test_plan_driver_nodes),
	    cmocka_unit_test(test_plan_no_gpu),
	    cmocka_unit_test(test_plan_no_facts),
	    cmocka_unit_test(test_hub_chart_pick),
	    cmocka_unit_test(test_helm_pick),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
