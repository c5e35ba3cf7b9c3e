/*
 * Unit tests for artifacts.c and the pure parts of http.c: the manifest
 * (entries, pending hashes, every error with its line), recording a hash in
 * place, the cache's re-verification, base64, and reading a kubeconfig's
 * server and credentials.  Downloads against a real server are tested by
 * tests/t0500-artifacts.sh.
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
#include "http.h"
#include "transport.h"
#include "util.h"

static char dir[64];

static int setup(void **unused)
{
	strcpy(dir, "/tmp/provision-test-artifacts-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **unused)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	int rc = system(cmd);

	free(cmd);
	return rc;
}

static char *write_tmp(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char sha_a[] = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

static void test_manifest(void **unused)
{
	char *path =
	    write_tmp("ok.yaml",
		      "# comment\n"
		      "hello:\n"
		      "  url: https://example.org/hello.txt\n"
		      "  sha256: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n"
		      "  description: the word\n"
		      "later.tgz:\n"
		      "  url: http://example.org/later.tgz\n"
		      "  sha256: pending\n");
	struct artifact_manifest m;
	struct diag_list dl;
	const struct artifact *a;

	diag_list_init(&dl);
	assert_int_equal(artifact_manifest_load(&m, path, &dl), 0);
	assert_int_equal(m.nr, 2);
	a = artifact_find(&m, "hello");
	assert_non_null(a);
	assert_string_equal(a->url, "https://example.org/hello.txt");
	assert_string_equal(a->sha256, sha_a);
	assert_string_equal(a->description, "the word");
	assert_int_equal(a->line, 2);
	a = artifact_find(&m, "later.tgz");
	assert_non_null(a);
	assert_null(a->sha256);
	assert_null(artifact_find(&m, "nothing"));
	artifact_manifest_release(&m);
	diag_list_release(&dl);
	free(path);

	/* A missing manifest is an empty one. */
	path = xasprintf("%s/none.yaml", dir);
	diag_list_init(&dl);
	assert_int_equal(artifact_manifest_load(&m, path, &dl), 0);
	assert_int_equal(m.nr, 0);
	artifact_manifest_release(&m);
	diag_list_release(&dl);
	free(path);
}

static void expect_manifest_error(const char *text, unsigned line, const char *msg)
{
	char *path = write_tmp("bad.yaml", text);
	struct artifact_manifest m;
	struct diag_list dl;
	char *got;

	diag_list_init(&dl);
	assert_int_equal(artifact_manifest_load(&m, path, &dl), -1);
	assert_true(dl.nr >= 1);
	got = diag_format(&dl.items[0]);
	if (!strstr(got, msg) || dl.items[0].line != line)
		fail_msg("want line %u '%s', got '%s'", line, msg, got);
	free(got);
	artifact_manifest_release(&m);
	diag_list_release(&dl);
	free(path);
}

static void test_manifest_errors(void **unused)
{
	expect_manifest_error("a:\n  url: https://x/a\n  sha256: 1234\n", 3,
			      "'sha256' of 'a' is not a SHA-256");
	expect_manifest_error("a:\n  url: https://x/a\n  sha256: "
			      "2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824\n",
			      3, "is not a SHA-256");
	expect_manifest_error("a:\n  url: ftp://x/a\n  sha256: pending\n", 2,
			      "'url' of 'a' must be an http:// or https:// URL");
	expect_manifest_error("a:\n  url: https://x/a\n  sha256: pending\n  md5: x\n", 4,
			      "unknown key 'md5' in artifact 'a'");
	expect_manifest_error("a:\n  sha256: pending\n", 1, "artifact 'a' has no 'url'");
	expect_manifest_error("a:\n  url: https://x/a\n", 1, "artifact 'a' has no 'sha256'");
	expect_manifest_error("a b:\n  url: https://x/a\n  sha256: pending\n", 1,
			      "bad artifact name 'a b'");
	expect_manifest_error("- a\n", 1, "must be a mapping of names to entries");
	expect_manifest_error("a: [1\n", 2, "");
	/* A key given twice: an error at the second (before, the second url won silently). */
	expect_manifest_error("a:\n  url: https://x/a\n  sha256: pending\n  url: https://x/b\n", 4,
			      "bad.yaml:4:3: error: duplicate key 'url' (first at 2:3)\n"
			      "  hint: remove one of them");
	expect_manifest_error("a:\n  url: https://x/a\n  sha256: pending\n---\nb: {}\n", 5,
			      "the artifact manifest has a second YAML document");
}

static void test_record(void **unused)
{
	const char *text = "# keep me\n"
			   "first:\n"
			   "  url: https://x/first\n"
			   "  sha256: pending   # fill in\n"
			   "second:\n"
			   "  url: https://x/second\n"
			   "  sha256: pending\n";
	char *path = write_tmp("rec.yaml", text);
	struct artifact_manifest m;
	struct diag_list dl;
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	const char *sha_b = "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7";

	diag_list_init(&dl);
	assert_int_equal(artifact_manifest_load(&m, path, &dl), 0);
	/* Two records in a row: the second finds its place in the file as it now is. */
	assert_int_equal(artifact_manifest_record(&m, artifact_find(&m, "first"), sha_a, &err), 0);
	assert_int_equal(artifact_manifest_record(&m, artifact_find(&m, "second"), sha_b, &err), 0);
	assert_int_equal(read_file(path, &sb), 0);
	assert_string_equal(
	    sb.buf, "# keep me\n"
		    "first:\n"
		    "  url: https://x/first\n"
		    "  sha256: 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824   "
		    "# fill in\n"
		    "second:\n"
		    "  url: https://x/second\n"
		    "  sha256: 486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7\n");
	artifact_manifest_release(&m);
	diag_list_release(&dl);
	strbuf_release(&sb);
	free(path);
}

static void test_cache_read(void **unused)
{
	struct artifact a = {.name = "hello", .url = "https://x/hello", .sha256 = (char *)sha_a};
	char *cache = xasprintf("%s/cache", dir), *sub = xasprintf("%s/sha256", cache);
	char *path = artifact_cache_path(cache, sha_a), hex[65];
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	FILE *f;

	assert_int_equal(artifact_read(cache, &a, &sb, &err), ARTIFACT_ERR);
	assert_non_null(strstr(err.msg, "artifact 'hello' is not in the cache"));
	mkdir(cache, 0700);
	mkdir(sub, 0700);
	f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	transport_sha256_hex(hex, "hello", 5);
	assert_string_equal(hex, sha_a);
	assert_int_equal(artifact_read(cache, &a, &sb, &err), 0);
	assert_string_equal(sb.buf, "hello");
	/* Changed on disk since it was fetched: refused and removed. */
	f = fopen(path, "w");
	fputs("hellO", f);
	fclose(f);
	assert_int_equal(artifact_read(cache, &a, &sb, &err), ARTIFACT_ERR_CHECKSUM);
	assert_non_null(strstr(err.msg, "changed on disk"));
	assert_int_equal(access(path, F_OK), -1);
	strbuf_release(&sb);
	free(cache);
	free(sub);
	free(path);
}

/* Issue 31 F6: without HOME the cache is never under /tmp (before: /tmp/.cache/...). */
static void test_cache_dir(void **unused)
{
	char *home = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL, *d;

	unsetenv("PROVISION_CACHE");
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/tester", 1);
	d = artifact_cache_dir(NULL);
	assert_string_equal(d, "/home/tester/.cache/provision/artifacts");
	free(d);
	d = artifact_cache_dir("/srv/cache");
	assert_string_equal(d, "/srv/cache");
	free(d);
	unsetenv("HOME");
	d = artifact_cache_dir(NULL);
	if (geteuid() == 0)
		assert_string_equal(d, "/var/cache/provision/artifacts");
	else
		assert_null(d);
	free(d);
	setenv("HOME", "relative", 1); /* not a folder to trust either */
	d = artifact_cache_dir(NULL);
	assert_true(!d || strncmp(d, "relative", 8));
	free(d);
	if (home)
		setenv("HOME", home, 1);
	free(home);
}

/* A cached artifact of several MiB reads and hashes whole (the hash is taken in pieces). */
static void test_cache_read_large(void **unused)
{
	size_t len = (5u << 20) + 12345, i;
	char *data = xmalloc(len), hex[65];
	char *cache = xasprintf("%s/cache-large", dir), *sub = xasprintf("%s/sha256", cache), *path;
	struct artifact a = {.name = "large", .url = "https://x/large"};
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	FILE *f;

	for (i = 0; i < len; i++)
		data[i] = (char)(i * 31 + (i >> 13));
	transport_sha256_hex(hex, data, len);
	a.sha256 = hex;
	path = artifact_cache_path(cache, hex);
	mkdir(cache, 0700);
	mkdir(sub, 0700);
	f = fopen(path, "w");
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
	assert_int_equal(artifact_read(cache, &a, &sb, &err), 0);
	assert_int_equal(sb.len, len);
	assert_memory_equal(sb.buf, data, len);
	strbuf_release(&sb);
	unlink(path);
	free(path);
	free(sub);
	free(cache);
	free(data);
}

/* Issue 31 F7: what of a fetched admin.conf may be kept and used here. */
static void test_kubeconfig_check(void **unused)
{
	static const char head[] =
	    "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0EK\n"
	    "    server: %s\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n"
	    "    user: kubernetes-admin\n  name: kubernetes-admin@kubernetes\n"
	    "current-context: kubernetes-admin@kubernetes\nkind: Config\npreferences: {}\n"
	    "users:\n- name: kubernetes-admin\n  user:\n%s";
	static const char cert[] =
	    "    client-certificate-data: Q0VSVAo=\n    client-key-data: S0VZCg==\n";
	static const struct {
		const char *server, *user, *extra, *why; /* why NULL: accepted */
	} cases[] = {
	    {"https://10.0.0.1:6443", cert, "", NULL},
	    {"https://10.0.0.1:6443", "    token: abc.def0123456789\n", "", NULL},
	    {"https://10.0.0.2:6443", cert, "", "its server is 'https://10.0.0.2:6443'"},
	    {"https://10.0.0.1:443", cert, "", "not the control plane's https://10.0.0.1:6443"},
	    {"http://10.0.0.1:6443", cert, "", "its server is"},
	    {"https://10.0.0.1:6443/x", cert, "", "its server is"},
	    {"https://10.0.0.1:6443", "    exec:\n      command: /bin/sh\n", "",
	     "'exec' in 'user'"},
	    {"https://10.0.0.1:6443", "    auth-provider:\n      name: oidc\n", "",
	     "'auth-provider' in 'user'"},
	    {"https://10.0.0.1:6443", "    client-certificate: /etc/passwd\n    client-key: /k\n",
	     "", "'client-certificate' in 'user'"},
	    {"https://10.0.0.1:6443", "    tokenFile: /t\n", "", "'tokenFile'"},
	    {"https://10.0.0.1:6443", "    username: a\n    password: b\n", "", "'username'"},
	    {"https://10.0.0.1:6443", "    {}\n", "", "without a client certificate"},
	    {"https://10.0.0.1:6443", "", "", "'user' of 'users' is not a mapping"},
	    {"https://10.0.0.1:6443", cert, "extensions: []\n", "'extensions' in the kubeconfig"},
	    {"https://10.0.0.1:6443", cert, "---\nkind: Config\n", "more than one YAML document"},
	    {"https://10.0.0.1:6443",
	     "    client-certificate-data: Q0VSVAo=\n    client-key-data: S0VZCg==\n"
	     "    client-key-data: S0VZCg==\n",
	     "", "twice"},
	};
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, head, cases[i].server, cases[i].user);
		strbuf_addstr(&sb, cases[i].extra);
		memset(&err, 0, sizeof(err));
		if (!cases[i].why) {
			if (http_kubeconfig_check(sb.buf, sb.len, "10.0.0.1", 6443, &err) < 0)
				fail_msg("case %zu refused: %s", i, err.msg);
		} else if (http_kubeconfig_check(sb.buf, sb.len, "10.0.0.1", 6443, &err) == 0) {
			fail_msg("case %zu accepted", i);
		} else if (!strstr(err.msg, cases[i].why)) {
			fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, cases[i].why);
		}
	}
	/* certificate-authority as a file, insecure-skip-tls-verify, proxy-url */
	strbuf_reset(&sb);
	strbuf_addf(&sb, head, "https://10.0.0.1:6443\n    insecure-skip-tls-verify: true", cert);
	assert_int_equal(http_kubeconfig_check(sb.buf, sb.len, "10.0.0.1", 6443, &err), -1);
	assert_non_null(strstr(err.msg, "'insecure-skip-tls-verify' in 'cluster'"));
	/* IPv6: the address in brackets */
	strbuf_reset(&sb);
	strbuf_addf(&sb, head, "https://[fd00::1]:6443", cert);
	assert_int_equal(http_kubeconfig_check(sb.buf, sb.len, "fd00::1", 6443, &err), 0);
	/* escapes in what is quoted back are cleaned */
	strbuf_reset(&sb);
	strbuf_addf(&sb, head, "\"https://x\\e]0;t\\a\"", cert);
	assert_int_equal(http_kubeconfig_check(sb.buf, sb.len, "10.0.0.1", 6443, &err), -1);
	assert_null(strchr(err.msg, '\033'));
	/* a key of two lines is quoted by its first: no line of the node's own on the screen */
	{
		static const char two_lines[] = "\"a\\nb\": 1\n"; /* the key is a, newline, b */
		assert_int_equal(
		    http_kubeconfig_check(two_lines, strlen(two_lines), "10.0.0.1", 6443, &err),
		    -1);
	}
	assert_string_equal(err.msg, "'a' in the kubeconfig is not accepted");
	strbuf_reset(&sb);
	strbuf_addf(&sb, head, "\"https://x\\nprovision: done\"", cert);
	assert_int_equal(http_kubeconfig_check(sb.buf, sb.len, "10.0.0.1", 6443, &err), -1);
	assert_string_equal(
	    err.msg, "its server is 'https://x', not the control plane's https://10.0.0.1:6443");
	assert_int_equal(http_kubeconfig_check("", 0, "10.0.0.1", 6443, &err), -1);
	assert_int_equal(http_kubeconfig_check("[", 1, "10.0.0.1", 6443, &err), -1);
	strbuf_release(&sb);
}

static void test_base64(void **unused)
{
	struct strbuf sb = STRBUF_INIT;

	assert_int_equal(http_base64_decode("aGVsbG8=", 8, &sb), 0);
	assert_string_equal(sb.buf, "hello");
	strbuf_reset(&sb);
	assert_int_equal(http_base64_decode("aGVs\nbG8h", 9, &sb), 0);
	assert_string_equal(sb.buf, "hello!");
	strbuf_reset(&sb);
	assert_int_equal(http_base64_decode("aGV*", 4, &sb), -1);
	strbuf_reset(&sb);
	assert_int_equal(http_base64_decode("aA==x", 5, &sb), -1);
	strbuf_release(&sb);
}

static void test_kubeconfig(void **unused)
{
	char *path =
	    write_tmp("admin.conf", "apiVersion: v1\n"
				    "clusters:\n"
				    "- cluster:\n"
				    "    certificate-authority-data: Q0E=\n"
				    "    server: https://10.0.0.1:6443\n"
				    "  name: other\n"
				    "- cluster:\n"
				    "    certificate-authority-data: Q0Ey\n"
				    "    server: https://198.18.0.10:6443\n"
				    "  name: kubernetes\n"
				    "contexts:\n"
				    "- context: {cluster: kubernetes, user: kubernetes-admin}\n"
				    "  name: kubernetes-admin@kubernetes\n"
				    "current-context: kubernetes-admin@kubernetes\n"
				    "users:\n"
				    "- name: kubernetes-admin\n"
				    "  user:\n"
				    "    client-certificate-data: Q0VSVA==\n"
				    "    client-key-data: S0VZ\n");
	struct http_tls tls;
	struct error err = {0};
	char *server = NULL;

	assert_int_equal(http_tls_from_kubeconfig(path, &server, &tls, &err), 0);
	assert_string_equal(server, "https://198.18.0.10:6443");
	assert_string_equal(tls.ca_pem, "CA2");
	assert_string_equal(tls.cert_pem, "CERT");
	assert_string_equal(tls.key_pem, "KEY");
	assert_int_equal(tls.key_len, 3);
	http_tls_release(&tls);
	free(server);
	free(path);
	path = write_tmp("empty.conf", "apiVersion: v1\n");
	assert_int_equal(http_tls_from_kubeconfig(path, &server, &tls, &err), HTTP_ERR);
	assert_non_null(strstr(err.msg, "names no server"));
	free(path);
	/* A key given twice: refused at its place (before, the first server was taken). */
	path = write_tmp("twice.conf", "apiVersion: v1\n"
				       "clusters:\n"
				       "- cluster:\n"
				       "    server: https://10.0.0.1:6443\n"
				       "    server: https://10.0.0.2:6443\n"
				       "  name: kubernetes\n"
				       "current-context: x\n");
	assert_int_equal(http_tls_from_kubeconfig(path, &server, &tls, &err), HTTP_ERR);
	if (!strstr(err.msg, "/twice.conf:5:5: duplicate key 'server' (first at 4:5); remove one "
			     "of them"))
		fail_msg("got '%s'", err.msg);
	assert_null(server);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_manifest),	     cmocka_unit_test(test_manifest_errors),
	    cmocka_unit_test(test_record),	     cmocka_unit_test(test_cache_read),
	    cmocka_unit_test(test_base64),	     cmocka_unit_test(test_kubeconfig),
	    cmocka_unit_test(test_cache_dir),	     cmocka_unit_test(test_cache_read_large),
	    cmocka_unit_test(test_kubeconfig_check),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
