/*
 * Unit tests for preflight.c: the checks across nodes (cloned images share
 * a machine-id, product_uuid, MAC address or SSH host key), a node with a
 * unique identity passing, the host key fingerprint as OpenSSH prints it, and
 * the Kubernetes matrix's cgroup and containerd needs on recorded facts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "inventory.h"
#include "preflight.h"
#include "role.h"
#include "transport.h"
#include "util.h"

static const char inv_yaml[] = "cluster:\n"
			       "  name: t\n"
			       "  kubernetes_version: \"1.30.4\"\n"
			       "ssh:\n"
			       "  user: admin\n"
			       "jupyterhub:\n"
			       "  enabled: false\n"
			       "nodes:\n"
			       "  - name: cp\n"
			       "    address: 198.18.0.10\n"
			       "    roles: [control-plane]\n"
			       "  - name: w1\n"
			       "    address: 198.18.0.11\n"
			       "    roles: [worker]\n"
			       "  - name: w2\n"
			       "    address: 198.18.0.12\n"
			       "    roles: [worker]\n";

/* ssh-keygen -t ed25519; `ssh-keygen -lf` printed the fingerprint below. */
#define KEY_A "AAAAC3NzaC1lZDI1NTE5AAAAIAYycc3tuKKsXaE+1iVSk0B4mS3/Mbjf5xTUUlS1wBgx"
#define KEY_A_FP "SHA256:n19BIUrU4rbmQV02yjF1an5akYag5KCtxKSKgZSxm6A"
#define KEY_B "AAAAC3NzaC1lZDI1NTE5AAAAIHBhtkL0Yq0YQw3CvVnT7pZ3cfD7c1bq2QnM8c3qzvYs"

/* Facts of a healthy Debian 12 node with the given identity. */
static void node_facts(struct facts *f, unsigned id, const char *mac, const char *host_key)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};

	strbuf_addf(&sb,
		    "facts_version=1\nos_id=debian\nos_version=12\ncpus=4\nmem_kib=8000000\n"
		    "machine_id=%032x\nproduct_uuid=4c4c4544-0000-0000-0000-%012x\n"
		    "mac=eth0 %s phys\nhost_key=ssh-ed25519 %s\n",
		    id, id, mac, host_key);
	assert_int_equal(0, facts_parse(f, sb.buf, sb.len, &err));
	strbuf_release(&sb);
}

/* Every problem preflight found, "NODE: MSG" a line. */
static char *problems(const struct preflight *pf, const struct inventory *inv)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; i < pf->nr; i++)
		strbuf_addf(&sb, "%s: %s\n", inv->nodes[pf->items[i].node].name, pf->items[i].msg);
	return strbuf_detach(&sb, NULL);
}

/*
 * Preflight of the three nodes of the inventory YAML with the facts F
 * (released here): the problems, "NODE: MSG" a line; FAILED[i], where
 * FAILED is given, whether node i failed.
 */
static char *preflight_three(const char *yaml, struct facts f[3], bool failed[3])
{
	struct inventory *inv = NULL;
	struct diag_list dl;
	const struct facts *fp[3];
	const struct node *np[3];
	struct preflight pf = {0};
	char *text;
	size_t i;

	diag_list_init(&dl);
	assert_int_equal(0, inventory_load_buffer(&inv, "t.yaml", yaml, strlen(yaml), &dl));
	diag_list_release(&dl);
	for (i = 0; i < 3; i++) {
		fp[i] = &f[i];
		np[i] = &inv->nodes[i];
	}
	preflight_run(&pf, inv, NULL, np, fp, 3);
	text = problems(&pf, inv);
	for (i = 0; i < 3; i++) {
		if (failed)
			failed[i] = preflight_node_failed(&pf, i);
		facts_release(&f[i]);
	}
	preflight_release(&pf);
	inventory_free(inv);
	return text;
}

static void run(const char *macs[3], const unsigned ids[3], const char *keys[3], char **text,
		bool failed[3])
{
	struct facts f[3];
	size_t i;

	for (i = 0; i < 3; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		node_facts(&f[i], ids[i], macs[i], keys[i]);
	}
	*text = preflight_three(inv_yaml, f, failed);
}

static void test_unique_nodes_pass(void **state)
{
	const char *macs[3] = {"52:54:00:00:00:01", "52:54:00:00:00:02", "52:54:00:00:00:03"};
	const unsigned ids[3] = {1, 2, 3};
	const char *keys[3] = {KEY_A, KEY_B, KEY_B "x"};
	bool failed[3];
	char *text;

	(void)state;
	/* w1 and w2 differ in their key blobs by one trailing byte. */
	run(macs, ids, keys, &text, failed);
	assert_string_equal("", text);
	assert_false(failed[0] || failed[1] || failed[2]);
	free(text);
}

/* issue 19 finding 2: a fact with a CR is a fatal problem naming node and field */
static void test_unsafe_fact(void **state)
{
	const char *macs[3] = {"52:54:00:00:00:01", "52:54:00:00:00:02\rdcgmExporter: {}",
			       "52:54:00:00:00:03"};
	const unsigned ids[3] = {1, 2, 3};
	const char *keys[3] = {KEY_A, KEY_B, KEY_B "x"};
	bool failed[3];
	char *text;

	(void)state;
	run(macs, ids, keys, &text, failed);
	assert_non_null(strstr(text, "w1: node 'w1': facts field 'mac' carries control characters"));
	assert_false(failed[0] || failed[2]);
	assert_true(failed[1]);
	free(text);
}

static void test_cloned_host_key(void **state)
{
	const char *macs[3] = {"52:54:00:00:00:01", "52:54:00:00:00:02", "52:54:00:00:00:03"};
	const unsigned ids[3] = {1, 2, 3};
	const char *keys[3] = {KEY_B, KEY_A, KEY_A};
	bool failed[3];
	char *text;

	(void)state;
	run(macs, ids, keys, &text, failed);
	assert_non_null(strstr(text, "w1: SSH host key ssh-ed25519 " KEY_A_FP
					  " is the same as on node 'w2' (a cloned disk image?)\n"));
	assert_non_null(strstr(text, "w2: SSH host key ssh-ed25519 " KEY_A_FP
					  " is the same as on node 'w1'"));
	assert_null(strstr(text, "cp:"));
	assert_false(failed[0]);
	assert_true(failed[1] && failed[2]);
	free(text);
}

static void test_cloned_ids_and_mac(void **state)
{
	const char *macs[3] = {"52:54:00:00:00:01", "52:54:00:00:00:07", "52:54:00:00:00:07"};
	const unsigned ids[3] = {5, 9, 9};
	const char *keys[3] = {KEY_A, KEY_B, KEY_B "x"};
	bool failed[3];
	char *text;

	(void)state;
	run(macs, ids, keys, &text, failed);
	assert_non_null(strstr(text, "w1: machine-id '00000000000000000000000000000009' is the same as "
				     "on node 'w2'"));
	assert_non_null(strstr(text, "w2: product_uuid '4c4c4544-0000-0000-0000-000000000009' is the "
				     "same as on node 'w1'"));
	assert_non_null(strstr(text, "w1: MAC address 52:54:00:00:00:07 (eth0) is the same as on node "
				     "'w2'"));
	assert_null(strstr(text, "cp:"));
	assert_true(failed[1] && failed[2] && !failed[0]);
	free(text);
}

static void test_fingerprint(void **state)
{
	char fp[TRANSPORT_FINGERPRINT_LEN + 1];

	(void)state;
	assert_int_equal(0, transport_key_fingerprint(fp, KEY_A));
	assert_string_equal(KEY_A_FP, fp);
	assert_int_equal(-1, transport_key_fingerprint(fp, "not*base64"));
	assert_int_equal(-1, transport_key_fingerprint(fp, ""));
}

/*
 * The Kubernetes matrix (roles/kubernetes.yaml) against recorded facts
 * (tests/facts): the cgroup and containerd a minor needs, per OS.  One
 * worker node; its problems, "fatal: MSG" a line.
 */
static char *row_problems(const char *facts_file, const char *version, const struct kube_minor *row)
{
	static const char yaml_fmt[] = "cluster:\n  name: t\n  kubernetes_version: \"%s\"\n"
				       "ssh:\n  user: admin\njupyterhub:\n  enabled: false\n"
				       "nodes:\n  - name: w\n    address: 198.18.0.11\n"
				       "    roles: [control-plane, worker]\n";
	const char *dir = getenv("PROVISION_TEST_DATA");
	struct strbuf path = STRBUF_INIT, text = STRBUF_INIT, yaml = STRBUF_INIT, out = STRBUF_INIT;
	struct inventory *inv = NULL;
	struct error err = {0};
	struct diag_list dl;
	struct facts f;
	const struct facts *fp[1] = {&f};
	const struct node *np[1];
	struct preflight pf = {0};
	size_t i;

	strbuf_addf(&path, "%s/facts/%s", dir ? dir : "tests", facts_file);
	if (read_file(path.buf, &text) < 0)
		fail_msg("cannot read %s", path.buf);
	memset(&f, 0, sizeof(f));
	assert_int_equal(0, facts_parse(&f, text.buf, text.len, &err));
	strbuf_addf(&yaml, yaml_fmt, version);
	diag_list_init(&dl);
	assert_int_equal(0, inventory_load_buffer(&inv, "t.yaml", yaml.buf, yaml.len, &dl));
	diag_list_release(&dl);
	np[0] = &inv->nodes[0];
	preflight_run(&pf, inv, row, np, fp, 1);
	for (i = 0; i < pf.nr; i++)
		if (strstr(pf.items[i].msg, "cgroup") || strstr(pf.items[i].msg, "containerd") ||
		    strstr(pf.items[i].msg, "OS"))
			strbuf_addf(&out, "%s: %s (hint: %s)\n", pf.items[i].fatal ? "fatal" : "warning",
				    pf.items[i].msg, pf.items[i].hint ? pf.items[i].hint : "");
	preflight_release(&pf);
	inventory_free(inv);
	facts_release(&f);
	strbuf_release(&path);
	strbuf_release(&text);
	strbuf_release(&yaml);
	return strbuf_detach(&out, NULL);
}

/* The same with a row of only the cgroup and containerd_min columns. */
static char *matrix_problems(const char *facts_file, const char *version, const char *cgroup,
			     const char *containerd_min)
{
	char *keys[] = {"cgroup", "containerd_min", NULL}, *vals[] = {(char *)cgroup,
								      (char *)containerd_min, NULL};
	struct kube_minor row = {.minor = "1.x", .keys = keys, .vals = vals, .nr = 2};

	return row_problems(facts_file, version, &row);
}

/* The same with containerd_preferred too. */
static char *matrix_problems_pref(const char *facts_file, const char *version,
				  const char *cgroup, const char *containerd_min,
				  const char *containerd_preferred)
{
	char *keys[] = {"cgroup", "containerd_min", "containerd_preferred", NULL};
	char *vals[] = {(char *)cgroup, (char *)containerd_min, (char *)containerd_preferred, NULL};
	struct kube_minor row = {.minor = "1.x", .keys = keys, .vals = vals, .nr = 3};

	return row_problems(facts_file, version, &row);
}

/* 1.35's kubelet refuses cgroup v1: Ubuntu 20.04 (cgroup v1 by default) is refused, with
 * the kernel parameter; on 1.34 it is allowed.  Ubuntu 22.04 (cgroup v2) passes both. */
static void test_matrix_cgroup(void **state)
{
	char *s;

	(void)state;
	s = matrix_problems("rtx2060-rtx3060-ubuntu2004.facts", "1.35.2", "2", "1.6");
	assert_non_null(strstr(s, "fatal: the node runs cgroup v1, and the kubelet of Kubernetes "
				  "1.35.2 refuses to start on cgroup v1 (failCgroupV1)"));
	assert_non_null(strstr(s, "systemd.unified_cgroup_hierarchy=1"));
	assert_non_null(strstr(s, "Ubuntu 20.04 boots with cgroup v1"));
	free(s);
	s = matrix_problems("rtx2060-rtx3060-ubuntu2004.facts", "1.34.5", "1", "1.6");
	assert_string_equal("", s);
	free(s);
	s = matrix_problems("nogpu-ubuntu2204.facts", "1.35.2", "2", "1.6");
	assert_string_equal("", s);
	free(s);
	/* Debian 13 recorded in a chroot on this cgroup v1 host */
	s = matrix_problems("debian13-containerd17-cgroupv1.facts", "1.35.2", "2", "1.6");
	assert_non_null(strstr(s, "fatal: the node runs cgroup v1"));
	assert_non_null(strstr(s, "boot Debian 13 with cgroup v2"));
	assert_null(strstr(s, "unsupported OS"));
	free(s);
}

/*
 * A minor whose kubelet needs containerd 2.0 (none in the table yet: the docs name 1.38): the
 * installed 1.7.24 is refused, and so is a node without containerd whose distribution ships
 * 1.6 (Debian 12).  1.36 only prefers 2.0: a warning, not a refusal.
 */
static void test_matrix_containerd(void **state)
{
	char *s;

	(void)state;
	s = matrix_problems("debian13-containerd17-cgroupv1.facts", "1.38.0", "2", "2.0");
	assert_non_null(strstr(s, "fatal: containerd 1.7.24~ds1 is older than 2.0, the oldest "
				  "Kubernetes 1.38.0 runs on"));
	free(s);
	s = matrix_problems("debian12-host-nogpu.facts", "1.38.0", "1", "2.0");
	assert_non_null(strstr(s, "fatal: containerd 1.6 (the distribution's package) is older than "
				  "2.0, the oldest Kubernetes 1.38.0 runs on (hint: "));
	assert_null(strstr(s, "warning:"));
	free(s);
	s = matrix_problems("debian12-host-nogpu.facts", "1.35.8", "1", "1.6");
	assert_string_equal("", s);
	free(s);
	s = matrix_problems_pref("debian12-host-nogpu.facts", "1.36.4", "1", "1.6", "2.0");
	assert_string_equal("warning: containerd 1.6 (the distribution's package) is older than 2.0: "
			    "kubeadm 1.36.4 warns (preflight ContainerRuntimeVersion) (hint: "
			    "containerd 2.0 answers the kubelet's RuntimeConfig question (its cgroup "
			    "driver); containerd 1.6 does not, and the kubelet falls back to its own "
			    "setting, a fallback Kubernetes plans to drop in 1.38.  It works with 1.36.4; "
			    "to move to containerd 2.4.1 now, set 'containerd: release' under cluster in "
			    "the inventory)\n",
			    s);
	free(s);
	s = matrix_problems_pref("debian12-host-nogpu.facts", "1.36.4", "1", "1.6", "1.6");
	assert_string_equal("", s);
	free(s);
}

/*
 * Ubuntu nodes as documented (tests/facts/ubuntu*-documented.facts, written
 * from documentation: no Ubuntu machine ran here), per minor of
 * roles/kubernetes.yaml (its cgroup and containerd_min columns).  20.04
 * boots cgroup v1: refused from 1.35 with the kernel parameter, allowed
 * before.  22.04 and 24.04 boot cgroup v2 and their containerd package is
 * 2.2 (jammy-updates, noble-updates): 1.36 (containerd 2.0 or later) takes
 * them although they have no containerd yet; 20.04's is 1.7 and is refused.
 */
static void test_matrix_ubuntu(void **state)
{
	const char *dir = getenv("PROVISION_TEST_DATA");
	struct strbuf roles = STRBUF_INIT;
	struct role_set rs;
	struct diag_list dl;
	size_t i;
	char *s;

	(void)state;
	/* PROVISION_TEST_DATA is tests/: the roles are beside it */
	strbuf_addf(&roles, "%s/../roles", dir ? dir : "tests");
	diag_list_init(&dl);
	assert_int_equal(0, role_set_load(&rs, roles.buf, &dl));
	diag_list_release(&dl);
	assert_true(rs.kube.nr >= 9);
	for (i = 0; i < rs.kube.nr; i++) {
		const struct kube_minor *row = &rs.kube.rows[i];
		const char *version = kube_minor_get(row, "patch");
		bool v1_ok = !strcmp(kube_minor_get(row, "cgroup"), "1");
		bool needs_2 = !strcmp(kube_minor_get(row, "containerd_min"), "2.0");
		bool prefers_2 = !strcmp(kube_minor_get(row, "containerd_preferred"), "2.0");

		assert_non_null(version);
		s = row_problems("ubuntu2204-documented.facts", version, row);
		if (*s)
			fail_msg("Ubuntu 22.04 at %s: %s", version, s);
		free(s);
		s = row_problems("ubuntu2404-documented.facts", version, row);
		if (*s)
			fail_msg("Ubuntu 24.04 at %s: %s", version, s);
		free(s);
		s = row_problems("ubuntu2004-documented.facts", version, row);
		if (v1_ok && !needs_2 && *s)
			fail_msg("Ubuntu 20.04 at %s: %s", version, s);
		if (!v1_ok) {
			assert_non_null(strstr(s, "fatal: the node runs cgroup v1, and the kubelet of "
						  "Kubernetes"));
			assert_non_null(strstr(s, "(hint: boot Ubuntu 20.04 with cgroup v2: in "
						  "/etc/default/grub add systemd.unified_cgroup_hierarchy=1 "
						  "to GRUB_CMDLINE_LINUX"));
			assert_non_null(strstr(s, "run update-grub, reboot"));
			assert_non_null(strstr(s, "Ubuntu 20.04 boots with cgroup v1 unless told so"));
		}
		if (needs_2)
			assert_non_null(strstr(s, "fatal: containerd 1.7 (the distribution's package) is "
						  "older than 2.0"));
		else if (prefers_2)
			assert_non_null(strstr(s, "warning: containerd 1.7 (the distribution's package) "
						  "is older than 2.0: kubeadm"));
		else
			assert_null(strstr(s, "containerd"));
		free(s);
	}
	role_set_release(&rs);
	strbuf_release(&roles);
}

/*
 * Helm's version skew (roles/kubernetes.yaml, column helm): a Helm minor in
 * the row's ranges passes, one outside is refused on the control plane with
 * both versions and the fix; the worker gets nothing.
 */
static void test_helm_skew(void **state)
{
	static const char yaml[] =
	    "cluster:\n  name: t\n  kubernetes_version: \"1.37.1\"\n"
	    "ssh:\n  user: admin\njupyterhub:\n  enabled: false\n"
	    "nodes:\n  - name: cp\n    address: 198.18.0.10\n"
	    "    roles: [control-plane]\n  - name: w\n    address: 198.18.0.11\n"
	    "    roles: [worker]\n";
	char *keys[] = {"helm", NULL}, *vals[] = {"3.22-3.25, 4.3-4.6", NULL};
	struct kube_minor row = {.minor = "1.37", .keys = keys, .vals = vals, .nr = 1};
	struct inventory *inv = NULL;
	struct diag_list dl;
	struct facts f;
	const struct facts *fp[2] = {&f, &f};
	const struct node *np[2];
	struct preflight pf = {0};

	(void)state;
	assert_true(kube_helm_supported("3.22-3.25, 4.3-4.6", "4.3.0"));
	assert_true(kube_helm_supported("3.22-3.25, 4.3-4.6", "3.22.0"));
	assert_true(kube_helm_supported("3.16-3.19, 4.0", "4.0.1"));
	assert_false(kube_helm_supported("3.22-3.25, 4.3-4.6", "4.2.4"));
	assert_false(kube_helm_supported("3.22-3.25, 4.3-4.6", "3.18.4"));
	assert_false(kube_helm_supported("3.22-3.25, 4.3-4.6", "4.7.0"));
	assert_false(kube_helm_supported("3.15-3.18", "4.0.0"));
	assert_false(kube_helm_supported("3.15-3.18", "x"));
	assert_int_equal(0, kube_helm_skew("3.22-3.25, 4.3-4.6", "4.3.0"));
	assert_int_equal(-1, kube_helm_skew("3.22-3.25, 4.3-4.6", "4.2.4"));
	assert_int_equal(-1, kube_helm_skew("3.22-3.25, 4.3-4.6", "3.18.4"));
	assert_int_equal(1, kube_helm_skew("3.22-3.25, 4.3-4.6", "4.7.0"));
	assert_int_equal(1, kube_helm_skew("3.15-3.18", "4.3.0"));
	assert_int_equal(-1, kube_helm_skew("3.22-3.25, 4.3-4.6", "2.17.0"));
	assert_int_equal(-1, kube_helm_skew("3.15-3.18", "x"));
	memset(&f, 0, sizeof(f));
	diag_list_init(&dl);
	assert_int_equal(0, inventory_load_buffer(&inv, "t.yaml", yaml, strlen(yaml), &dl));
	diag_list_release(&dl);
	np[0] = &inv->nodes[0];
	np[1] = &inv->nodes[1];
	preflight_helm(&pf, inv, &row, "4.3.0", np, fp, 2);
	assert_int_equal(0, pf.nr);
	preflight_helm(&pf, inv, &row, NULL, np, fp, 2);
	assert_int_equal(0, pf.nr);
	preflight_helm(&pf, inv, &row, "4.2.4", np, fp, 2);
	assert_int_equal(1, pf.nr);
	assert_int_equal(0, pf.items[0].node);
	assert_true(pf.items[0].fatal);
	assert_string_equal("Helm 4.2.4, which drives the add-ons, does not support Kubernetes "
			    "1.37.1: its minor needs Helm 3.22-3.25, 4.3-4.6",
			    pf.items[0].msg);
	assert_non_null(strstr(pf.items[0].hint, "roles/artifacts.yaml"));
	preflight_release(&pf);
	/* a cluster older than the Helm's minors: refused too (issue 34) */
	memset(&pf, 0, sizeof(pf));
	preflight_helm(&pf, inv, &row, "4.7.0", np, fp, 2);
	assert_int_equal(1, pf.nr);
	assert_true(pf.items[0].fatal);
	assert_string_equal("Helm 4.7.0, which drives the add-ons, is newer than Kubernetes 1.37.1's "
			    "Helms (3.22-3.25, 4.3-4.6): it does not support this minor",
			    pf.items[0].msg);
	assert_non_null(strstr(pf.items[0].hint, "provision upgrade"));
	preflight_release(&pf);
	inventory_free(inv);
}

/* Three control planes behind a VIP (ha_problems, test_control_planes_one_run). */
static const char ha_yaml[] = "cluster:\n"
			      "  name: t\n"
			      "  kubernetes_version: \"1.30.4\"\n"
			      "  api_endpoint:\n"
			      "    vip: 198.18.0.50\n"
			      "jupyterhub:\n"
			      "  enabled: false\n"
			      "nodes:\n"
			      "  - name: cp-[1-3]\n"
			      "    address: 198.18.0.[11-13]\n"
			      "    roles: [control-plane, worker]\n";

/*
 * Three control planes with a VIP: facts EXTRA[i] added to each one's
 * healthy facts; the problems, "NODE: MSG" a line.
 */
static char *ha_problems(const char *extra[3])
{
	struct facts f[3];
	struct error err = {0};
	char mac[32];
	size_t i;

	for (i = 0; i < 3; i++) {
		struct strbuf sb = STRBUF_INIT;

		snprintf(mac, sizeof(mac), "52:54:00:00:00:%02zx", i + 1);
		strbuf_addf(&sb,
			    "facts_version=1\nos_id=debian\nos_version=12\ncpus=4\nmem_kib=8000000\n"
			    "machine_id=%032zx\nproduct_uuid=4c4c4544-0000-0000-0000-%012zx\n"
			    "mac=eth0 %s phys\n%s",
			    i + 1, i + 1, mac, extra[i]);
		memset(&f[i], 0, sizeof(f[i]));
		assert_int_equal(0, facts_parse(&f[i], sb.buf, sb.len, &err));
		strbuf_release(&sb);
	}
	return preflight_three(ha_yaml, f, NULL);
}

static void test_control_planes(void **state)
{
	const char *free_vip[3] = {
	    ("vip_route=link eth0\nvip_answer=none\nreach=198.18.0.12:2379 refused\n"
	     "reach=198.18.0.12:2380 refused\nreach=198.18.0.12:6443 open\n"),
	    "vip_route=link eth0\nvip_answer=none\n", "vip_route=link eth0\nvip_answer=none\n"};
	/* cp-1 holds it; cp-2 and cp-3 see cp-1's MAC answer: ours */
	const char *held[3] = {"vip_held=1\n", "vip_route=link eth0\nvip_answer=52:54:00:00:00:01\n",
			       "vip_route=link eth0\nvip_answer=52:54:00:00:00:01\n"};
	/* a stranger answers; cp-3 is on another subnet and cannot reach cp-1's etcd */
	const char *bad[3] = {"vip_route=link eth0\nvip_answer=aa:bb:cc:dd:ee:ff\n",
			      "vip_route=link eth0\nvip_answer=none\n",
			      ("vip_route=gateway\nvip_answer=none\nreach=198.18.0.11:2380 timeout\n"
			       "reach=198.18.0.11:6443 unreachable\nreach=198.18.0.11:2379 refused\n")};
	char *text;

	(void)state;
	text = ha_problems(free_vip);
	assert_string_equal(text, "");
	free(text);
	text = ha_problems(held);
	assert_string_equal(text, "");
	free(text);
	text = ha_problems(bad);
	assert_string_equal(
	    text,
	    "cp-1: the VIP 198.18.0.50 is in use: aa:bb:cc:dd:ee:ff answers for it, and no control "
	    "plane holds it\n"
	    "cp-3: the VIP 198.18.0.50 is not on the subnet of control plane 'cp-3' (it reaches it "
	    "through a gateway)\n"
	    "cp-3: control plane 'cp-3' cannot reach control plane 'cp-1' (198.18.0.11) on port "
	    "2380 (etcd's peers): no answer within 2 s\n"
	    "cp-3: control plane 'cp-3' cannot reach control plane 'cp-1' (198.18.0.11) on port "
	    "6443 (the API server): rejected or no route\n");
	free(text);
}

/*
 * upgrade and renew-certs run one control plane at a time: cp-2 alone sees
 * the VIP answered by cp-1's MAC, which this run does not know (cp-1's facts
 * are not gathered): not a stranger.  With every control plane in the run
 * an unknown MAC still is (test_control_planes).
 */
static void test_control_planes_one_run(void **state)
{
	static const char text[] = "facts_version=1\nos_id=debian\nos_version=12\ncpus=4\n"
				   "mem_kib=8000000\nmachine_id=00000000000000000000000000000002\n"
				   "product_uuid=4c4c4544-0000-0000-0000-000000000002\n"
				   "mac=eth0 52:54:00:00:00:02 phys\n"
				   "vip_route=link eth0\nvip_answer=52:54:00:00:00:01\n";
	struct inventory *inv = NULL;
	struct diag_list dl;
	struct facts f;
	struct error err = {0};
	const struct facts *fp[1] = {&f};
	const struct node *np[1];
	struct preflight pf = {0};
	char *out;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(0, inventory_load_buffer(&inv, "t.yaml", ha_yaml, strlen(ha_yaml), &dl));
	diag_list_release(&dl);
	memset(&f, 0, sizeof(f));
	assert_int_equal(0, facts_parse(&f, text, strlen(text), &err));
	np[0] = &inv->nodes[1];
	preflight_run(&pf, inv, NULL, np, fp, 1);
	out = problems(&pf, inv);
	assert_string_equal(out, "");
	free(out);
	facts_release(&f);
	preflight_release(&pf);
	inventory_free(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unique_nodes_pass),
	    cmocka_unit_test(test_control_planes_one_run),
	    cmocka_unit_test(test_unsafe_fact),
	    cmocka_unit_test(test_cloned_host_key),
	    cmocka_unit_test(test_cloned_ids_and_mac),
	    cmocka_unit_test(test_fingerprint),
	    cmocka_unit_test(test_matrix_cgroup),
	    cmocka_unit_test(test_matrix_containerd),
	    cmocka_unit_test(test_matrix_ubuntu),
	    cmocka_unit_test(test_helm_skew),
	    cmocka_unit_test(test_control_planes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
