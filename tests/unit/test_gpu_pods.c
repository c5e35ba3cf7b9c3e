/*
 * Unit tests for gpu_pods.c: the pods of "a GPU pod sees its GPU" from a
 * NodeList (each GPU profile on each node it lands on, one pod per node at
 * a time), the script (POSIX sh: `sh -n`), and the checks from its output
 * (listed GPUs pass; nvidia-smi missing, a rejected pod, a pod still
 * waiting, a wrong model fail; an unschedulable GPU node is skipped); the
 * CPU-only profile's pod on each GPU node, which must see no GPU.
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

#include "gpu_pods.h"
#include "profiles.h"

/* A Node as `kubectl get nodes -o json` shows it (the fields profiles.c reads). */
static void add_node(struct strbuf *sb, const char *name, const char *gpus, int count, bool ready,
		     bool tainted)
{
	strbuf_addf(
	    sb,
	    "%s{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"annotations\":{%s%s%s}},"
	    "\"spec\":{%s},\"status\":{\"allocatable\":{\"cpu\":\"16\",\"memory\":\"65000000Ki\""
	    "%s%d%s},\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	    sb->buf[sb->len - 1] == '[' ? "" : ",", name, gpus ? "\"provision.dev/gpus\":\"" : "",
	    gpus ? gpus : "", gpus ? "\"" : "",
	    tainted ? "\"taints\":[{\"key\":\"node-role.kubernetes.io/control-plane\","
		      "\"effect\":\"NoSchedule\"}]"
		    : "",
	    count ? ",\"nvidia.com/gpu\":\"" : ",\"x\":\"", count, "\"", ready ? "True" : "False");
}

static char *lab(size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":[");
	add_node(&sb, "cp", NULL, 0, true, true);
	add_node(&sb, "gpu-a", "NVIDIA GeForce RTX 3070:8192,NVIDIA GeForce RTX 3070:8192", 2, true,
		 false);
	add_node(&sb, "gpu-b", "NVIDIA GeForce GTX 1080 Ti:11264", 1, true, false);
	add_node(&sb, "gpu-down", "NVIDIA GeForce RTX 2080 Ti:11264", 1, false, false);
	add_node(&sb, "cpu-1", NULL, 0, true, false);
	strbuf_addstr(&sb, "]}");
	return strbuf_detach(&sb, len);
}

static struct node mk(const char *name)
{
	struct node n = {0};
	n.name = (char *)name;
	return n;
}

struct fixture {
	struct node n[5];
	const struct node *np[5];
	struct gpu_pod_plan plan;
};

static int setup(void **state)
{
	static const char *const names[] = {"cp", "gpu-a", "gpu-b", "gpu-down", "cpu-1"};
	struct fixture *f = calloc(1, sizeof(*f));
	struct error err = {0};
	size_t i, len;
	char *json = lab(&len);

	for (i = 0; i < 5; i++) {
		f->n[i] = mk(names[i]);
		f->np[i] = &f->n[i];
	}
	if (gpu_pods_plan(&f->plan, json, len, f->np, 5, &err) < 0)
		fail_msg("%s: %s", err.msg, json);
	free(json);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	gpu_pods_release(&f->plan);
	free(f);
	return 0;
}

static const struct gpu_pod *pod(const struct gpu_pod_plan *p, const char *node, unsigned gpus)
{
	size_t i;
	for (i = 0; i < p->nr; i++)
		if (!strcmp(p->pods[i].node, node) && p->pods[i].gpus == gpus)
			return &p->pods[i];
	fail_msg("no pod for %s x%u", node, gpus);
	return NULL;
}

static void test_plan(void **state)
{
	struct fixture *f = *state;
	const struct gpu_pod *a1 = pod(&f->plan, "gpu-a", 1), *a2 = pod(&f->plan, "gpu-a", 2);
	const struct gpu_pod *b1 = pod(&f->plan, "gpu-b", 1);
	const struct gpu_pod *a0 = pod(&f->plan, "gpu-a", 0), *b0 = pod(&f->plan, "gpu-b", 0);
	size_t i;

	/* 1× and 2× RTX 3070 on gpu-a, one after the other; 1× GTX 1080 Ti on gpu-b;
	 * then the CPU-only profile on each GPU node (not on cpu-1) */
	assert_int_equal(f->plan.nr, 5);
	assert_int_equal(f->plan.rounds, 3);
	assert_int_not_equal(a1->round, a2->round);
	assert_int_equal(b1->round, 0);
	assert_int_equal(a0->round, 2);
	assert_int_equal(b0->round, 1);
	for (i = 0; i < f->plan.nr; i++)
		assert_string_not_equal(f->plan.pods[i].node, "cpu-1");
	assert_string_equal(a0->name, "provision-gpu-pod-gpu-a-x0");
	assert_string_equal(a0->profile, "CPU only");
	/* its spec: no GPU limit, no runtime class, NVIDIA_VISIBLE_DEVICES=void */
	assert_null(strstr(a0->manifest, "nvidia.com/gpu\""));
	assert_null(strstr(a0->manifest, "runtimeClassName"));
	assert_non_null(strstr(a0->manifest, "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\","
					     "\"value\":\"" PROFILES_NO_GPU_DEVICES "\"}]"));
	assert_non_null(strstr(a0->manifest, "\"kubernetes.io/hostname\":\"gpu-a\""));
	assert_null(strstr(a2->manifest, "NVIDIA_VISIBLE_DEVICES"));
	assert_int_equal(a1->index, 1);
	assert_int_equal(b1->index, 2);
	assert_string_equal(a1->models[0], "NVIDIA GeForce RTX 3070");
	assert_string_equal(a2->profile, "2× GeForce RTX 3070 (8 GiB)");
	/* the profile's exact spec, pinned to the node */
	assert_non_null(strstr(a2->manifest, "\"runtimeClassName\":\"nvidia\""));
	assert_non_null(strstr(a2->manifest, "\"limits\":{\"nvidia.com/gpu\":\"2\"}"));
	assert_non_null(strstr(a2->manifest, "\"kubernetes.io/hostname\":\"gpu-a\""));
	assert_non_null(
	    strstr(a2->manifest, "\"nvidia.com/gpu.product\":\"NVIDIA-GeForce-RTX-3070\""));
	assert_non_null(strstr(a2->manifest, "\"restartPolicy\":\"Never\""));
	assert_non_null(strstr(a2->manifest, "\"image\":\"" GPU_PODS_IMAGE "\""));
	/* gpu-down: NotReady, no profile lands there */
	assert_int_equal(f->plan.nr_unplaced, 1);
	assert_int_equal(f->plan.unplaced[0], 3);
}

static void test_hub_profiles_have_the_runtime(void **state)
{
	struct profile_node n[2] = {{0}, {0}};
	struct hub_profile *p;
	size_t nr, i;

	(void)state;
	n[0].name = "g";
	n[0].cpu_milli = 16000;
	n[0].mem_mib = 64000;
	n[0].schedulable = true;
	n[0].gpus[0].model = "NVIDIA GeForce RTX 3070";
	n[0].gpus[0].memory_mib = 8192;
	n[0].nr_gpus = 1;
	n[1] = n[0];
	n[1].name = "c";
	n[1].nr_gpus = 0;
	profiles_generate(&p, &nr, n, 2);
	assert_int_equal(nr, 2);
	for (i = 0; i < nr; i++) {
		if (p[i].gpus) {
			assert_string_equal(p[i].runtime_class, PROFILES_GPU_RUNTIME_CLASS);
			assert_null(p[i].visible_devices);
		} else {
			assert_null(p[i].runtime_class);
			assert_string_equal(p[i].visible_devices, PROFILES_NO_GPU_DEVICES);
		}
	}
	profiles_free(p, nr);
}

static void test_script(void **state)
{
	struct fixture *f = *state;
	char *s = gpu_pods_script(&f->plan, 90), path[] = "/tmp/test_gpu_pods.XXXXXX";
	struct strbuf cmd = STRBUF_INIT;
	const char *p;
	int fd, finishes = 0;
	FILE *fp;

	assert_non_null(s);
	for (p = s; (p = strstr(p, "\ngp_finish\n")); p++)
		finishes++;
	assert_int_equal(finishes, 3);
	assert_non_null(strstr(s, "gp_create provision-gpu-pod-gpu-a-x1 n"));
	assert_non_null(strstr(s, "NS=default T=90"));
	/* the round of gpu-a x2 comes after the first gp_finish */
	assert_true(strstr(s, "gp_create provision-gpu-pod-gpu-a-x2") > strstr(s, "\ngp_finish\n"));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	fputs(s, fp);
	fclose(fp);
	strbuf_addf(&cmd, "sh -n %s", path);
	assert_int_equal(system(cmd.buf), 0);
	unlink(path);
	strbuf_release(&cmd);
	free(s);
}

/*
 * The script run against a stand-in kubectl whose pods on gpu-a are
 * scheduled but never start (its runtime is missing): gpu-a's later rounds
 * are not created, their results say why, and gpu-b's pods still run.
 */
static void test_script_stuck_node(void **state)
{
	struct fixture *f = *state;
	char dir[] = "/tmp/test_gpu_pods.d.XXXXXX", *s = gpu_pods_script(&f->plan, 1);
	struct strbuf path = STRBUF_INIT, cmd = STRBUF_INIT, out = STRBUF_INIT;
	struct validation v = {0};
	FILE *fp;
	char buf[4096];
	size_t n, i;
	int applies = 0;

	assert_non_null(s);
	assert_non_null(mkdtemp(dir));
	strbuf_addf(&path, "%s/kubectl", dir);
	fp = fopen(path.buf, "w");
	assert_non_null(fp);
	/* apply logs the pod; pods on gpu-a stay Pending (scheduled), gpu-b's succeed */
	fprintf(
	    fp,
	    "#!/bin/sh\n"
	    "case \"$*\" in\n"
	    "*' apply -f -'*) sed -n 's/.*\"name\":\"\\(provision-gpu-pod-[^\"]*\\)\".*/\\1/p' "
	    ">>'%s/applied'; exit 0 ;;\n"
	    "*'get pod provision-gpu-pod-gpu-a'*jsonpath*) echo Pending/gpu-a ;;\n"
	    "*'get pod provision-gpu-pod-gpu-a'*json*) echo '{\"status\":{\"phase\":\"Pending\","
	    "\"containerStatuses\":[{\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}"
	    "' ;;\n"
	    "*'get pod'*jsonpath*) echo Succeeded/gpu-b ;;\n"
	    "*'get pod'*json*) echo '{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{"
	    "\"state\":{\"terminated\":{\"exitCode\":0,\"message\":\"GPU 0: NVIDIA GeForce GTX "
	    "1080 "
	    "Ti (UUID: GPU-9)\"}}}]}}' ;;\n"
	    "esac\n",
	    dir);
	fclose(fp);
	chmod(path.buf, 0755);
	strbuf_addf(&path, ".sh");
	fp = fopen(path.buf, "w");
	fputs(s, fp);
	fclose(fp);
	strbuf_addf(&cmd, "PATH='%s':\"$PATH\" sh '%s'", dir, path.buf);
	fp = popen(cmd.buf, "r");
	assert_non_null(fp);
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		strbuf_add(&out, buf, n);
	assert_int_equal(pclose(fp), 0);
	/* gpu-a: only its first round's pod was created; gpu-b: both of its */
	strbuf_reset(&cmd);
	strbuf_addf(&cmd, "%s/applied", dir);
	fp = fopen(cmd.buf, "r");
	assert_non_null(fp);
	while (fgets(buf, sizeof(buf), fp)) {
		applies++;
		assert_true(strncmp(buf, "provision-gpu-pod-gpu-a", 23) || applies == 1 ||
			    !strcmp(buf, "provision-gpu-pod-gpu-a-x1\n"));
	}
	fclose(fp);
	for (i = 0, n = 0; i < f->plan.nr; i++)
		n += strcmp(f->plan.pods[i].node, "gpu-a") != 0 || f->plan.pods[i].round == 0;
	assert_int_equal(applies, (int)n);
	assert_non_null(strstr(out.buf, "--- skipped\n"));
	gpu_pods_validate(&v, &f->plan, out.buf, out.len, 0, 1);
	for (i = 0, n = 0; i < v.nr; i++)
		if (!strcmp(v.items[i].id, "gpu-pod") &&
		    strstr(v.items[i].observed, "still Pending after 1s")) {
			n++;
			assert_int_equal(v.items[i].status, CHECK_FAIL);
			assert_non_null(strstr(v.items[i].observed,
					       "not run: an earlier check pod on gpu-a did not "
					       "start within 1s"));
		}
	assert_int_equal(n, 1);
	validation_release(&v);
	strbuf_reset(&cmd);
	strbuf_addf(&cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd.buf), 0);
	strbuf_release(&cmd);
	strbuf_release(&path);
	strbuf_release(&out);
	free(s);
}

#define BEGIN GPU_PODS_BEGIN
static const char pod_ok_a1[] =
    "{\"kind\":\"Pod\",\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"state\":"
    "{\"terminated\":{\"exitCode\":0,\"message\":\"GPU 0: NVIDIA GeForce RTX 3070 (UUID: "
    "GPU-1)\\n\"}}}]}}\n";
static const char pod_ok_a2[] =
    "{\"kind\":\"Pod\",\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"state\":"
    "{\"terminated\":{\"exitCode\":0,\"message\":\"GPU 0: NVIDIA GeForce RTX 3070 (UUID: "
    "GPU-1)\\nGPU 1: NVIDIA GeForce RTX 3070 (UUID: GPU-2)\\n\"}}}]}}\n";
static const char pod_no_smi[] =
    "{\"kind\":\"Pod\",\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"state\":"
    "{\"terminated\":{\"exitCode\":127,\"message\":\"sh: 1: nvidia-smi: not found\\n\"}}}]}}\n";
static const char pod_waiting[] =
    "{\"kind\":\"Pod\",\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"state\":"
    "{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}\n";

static void test_validate_pass(void **state)
{
	struct fixture *f = *state;
	struct validation v = {0};
	struct strbuf out = STRBUF_INIT;

	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x1\n%s%s\n", BEGIN, pod_ok_a1, GPU_PODS_END);
	strbuf_addf(
	    &out, "%sprovision-gpu-pod-gpu-b-x1\n%s%s\n", BEGIN,
	    "{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"state\":{"
	    "\"terminated\":{\"exitCode\":0,\"message\":\"GPU 0: NVIDIA GeForce GTX 1080 Ti "
	    "(UUID: GPU-9)\"}}}]}}\n",
	    GPU_PODS_END);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x2\n%s%s\n", BEGIN, pod_ok_a2, GPU_PODS_END);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x0\n%s%s\n", BEGIN, pod_no_smi, GPU_PODS_END);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-b-x0\n%s%s\n", BEGIN, pod_no_smi, GPU_PODS_END);
	gpu_pods_validate(&v, &f->plan, out.buf, out.len, 0, 90);
	assert_int_equal(v.nr, 3);
	assert_string_equal(v.items[0].id, "gpu-pod");
	assert_int_equal(v.items[0].node, 1);
	assert_int_equal(v.items[0].status, CHECK_PASS);
	assert_string_equal(
	    v.items[0].observed,
	    "1× GeForce RTX 3070 (8 GiB): nvidia-smi -L lists 1× NVIDIA GeForce RTX "
	    "3070; 2× GeForce RTX 3070 (8 GiB): nvidia-smi -L lists 2× NVIDIA "
	    "GeForce RTX 3070; CPU only: no GPU listed (exit 127)");
	assert_int_equal(v.items[1].node, 2);
	if (v.items[1].status != CHECK_PASS)
		fail_msg("%s", v.items[1].observed);
	assert_int_equal(v.items[2].node, 3);
	assert_int_equal(v.items[2].status, CHECK_SKIP);
	assert_int_equal(validation_failures(&v), 0);
	validation_release(&v);
	strbuf_release(&out);
}

static void test_validate_failures(void **state)
{
	struct fixture *f = *state;
	struct validation v = {0};
	struct strbuf out = STRBUF_INIT;

	/* gpu-a: x1 ran without the runtime, x2 never left ContainerCreating */
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x1\n%s%s\n", BEGIN, pod_no_smi, GPU_PODS_END);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x2\n%s%s\n", BEGIN, pod_waiting, GPU_PODS_END);
	/* gpu-b: the API server refused the pod */
	strbuf_addf(
	    &out,
	    "%sprovision-gpu-pod-gpu-b-x1\n--- rejected\nError from server (Forbidden): "
	    "error when creating \"STDIN\": pods \"provision-gpu-pod-gpu-b-x1\" is forbidden: "
	    "pod rejected: RuntimeClass \"nvidia\" not found\n%s\n",
	    BEGIN, GPU_PODS_END);
	/* gpu-a's CPU-only pod got every GPU of the node (a CUDA image's
	 * NVIDIA_VISIBLE_DEVICES=all under the default nvidia runtime) */
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-a-x0\n%s%s\n", BEGIN, pod_ok_a2, GPU_PODS_END);
	gpu_pods_validate(&v, &f->plan, out.buf, out.len, 0, 90);
	assert_int_equal(validation_failures(&v), 2);
	assert_int_equal(v.items[0].status, CHECK_FAIL);
	assert_string_equal(
	    v.items[0].observed,
	    "1× GeForce RTX 3070 (8 GiB): exit 127, 0 GPU(s) listed: sh: 1: nvidia-smi: "
	    "not found; 2× GeForce RTX 3070 (8 GiB): still Pending after 90s: "
	    "ContainerCreating; CPU only: nvidia-smi -L lists 2 GPU(s) without a GPU request: "
	    "GPU 0: NVIDIA GeForce RTX 3070 (UUID: GPU-1)");
	assert_non_null(strstr(v.items[0].fix, "NVIDIA runtime"));
	assert_non_null(strstr(v.items[0].fix, "on gpu-a"));
	assert_int_equal(v.items[1].status, CHECK_FAIL);
	assert_non_null(strstr(v.items[1].observed, "not created: Error from server (Forbidden)"));
	assert_non_null(strstr(v.items[1].fix, "RuntimeClass nvidia"));
	validation_release(&v);

	/* a wrong model, and no output at all (the session was lost) */
	strbuf_reset(&out);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-b-x1\n%s%s\n", BEGIN, pod_ok_a1, GPU_PODS_END);
	gpu_pods_validate(&v, &f->plan, out.buf, out.len, 0, 90);
	assert_int_equal(validation_failures(&v), 2);
	assert_non_null(strstr(v.items[0].observed, "no result"));
	assert_non_null(
	    strstr(v.items[1].observed, "1 GPU(s) listed: GPU 0: NVIDIA GeForce RTX 3070"));
	validation_release(&v);
	gpu_pods_validate(&v, &f->plan, NULL, 0, -1, 90);
	assert_int_equal(validation_failures(&v), 2);
	validation_release(&v);
	strbuf_release(&out);
}

/* Only the CPU-only pod is wrong: it saw gpu-b's GPU without asking for one. */
static void test_validate_cpu_leak(void **state)
{
	struct fixture *f = *state;
	struct validation v = {0};
	struct strbuf out = STRBUF_INIT;
	static const char pod_1080[] =
	    "{\"status\":{\"phase\":\"Succeeded\",\"containerStatuses\":[{\"state\":{"
	    "\"terminated\":{\"exitCode\":0,\"message\":\"GPU 0: NVIDIA GeForce GTX 1080 Ti "
	    "(UUID: GPU-9)\"}}}]}}\n";

	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-b-x1\n%s%s\n", BEGIN, pod_1080, GPU_PODS_END);
	strbuf_addf(&out, "%sprovision-gpu-pod-gpu-b-x0\n%s%s\n", BEGIN, pod_1080, GPU_PODS_END);
	gpu_pods_validate(&v, &f->plan, out.buf, out.len, 0, 90);
	assert_int_equal(v.items[1].node, 2);
	assert_int_equal(v.items[1].status, CHECK_FAIL);
	assert_non_null(strstr(v.items[1].observed,
			       "1× GeForce GTX 1080 Ti (11 GiB): nvidia-smi "
			       "-L lists 1× NVIDIA GeForce GTX 1080 Ti; CPU only: "
			       "nvidia-smi -L lists 1 GPU(s) without a GPU request"));
	assert_non_null(strstr(v.items[1].fix, "NVIDIA_VISIBLE_DEVICES=" PROFILES_NO_GPU_DEVICES));
	assert_non_null(strstr(v.items[1].fix, "gpu-b"));
	validation_release(&v);
	strbuf_release(&out);
}

static void test_no_gpu_node(void **state)
{
	struct gpu_pod_plan plan;
	struct error err = {0};
	static const char json[] = "{\"kind\":\"NodeList\",\"items\":[]}";
	struct validation v = {0};

	(void)state;
	assert_int_equal(gpu_pods_plan(&plan, json, strlen(json), NULL, 0, &err), 0);
	assert_int_equal(plan.nr, 0);
	assert_null(gpu_pods_script(&plan, 90));
	gpu_pods_validate(&v, &plan, "", 0, 0, 90);
	assert_int_equal(v.nr, 0);
	gpu_pods_release(&plan);
	assert_int_equal(gpu_pods_plan(&plan, "{}", 2, NULL, 0, &err), -1);
	assert_non_null(strstr(err.msg, "NodeList"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_plan, setup, teardown),
	    cmocka_unit_test(test_hub_profiles_have_the_runtime),
	    cmocka_unit_test_setup_teardown(test_script, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_script_stuck_node, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_validate_pass, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_validate_failures, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_validate_cpu_leak, setup, teardown),
	    cmocka_unit_test(test_no_gpu_node),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
