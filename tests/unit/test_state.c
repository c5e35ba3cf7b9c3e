/*
 * Unit tests for state.c: runs committed into a real git repository in a
 * temporary folder (libgit2), read back, numbered, resolved and compared;
 * the lock against a live holder and a dead one; the scrubber.
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
#include <sys/wait.h>
#include <unistd.h>

#include "record_files.h"
#include "state.h"
#include "util.h"

#include "state_fixture.h"

static void expect_file(struct state *s, const char *id, const char *path, const char *want)
{
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};

	if (state_read(s, id, path, &sb, &err) < 0)
		fail_msg("read %s: %s", path, err.msg);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void test_commit_overlay_and_read(void **unused)
{
	char *dir = tmp_dir(), id1[41], id2[41], id[41];
	struct state *s = NULL;
	struct state_files f = {0};
	struct state_run *runs = NULL;
	struct strbuf sb = STRBUF_INIT;
	struct error err = {0};
	char **paths = NULL;
	size_t nr = 0, i;
	char *path;

	assert_int_equal(state_open(&s, dir, false, &err), STATE_ERR_EMPTY);
	assert_int_equal(state_open(&s, dir, true, &err), 0);
	state_files_add(&f, "nodes/a/facts", "kernel=6.1\n", 11);
	state_files_add(&f, "nodes/b/facts", "kernel=6.1\n", 11);
	state_files_addf(&f, "summary", "command: %s\n", "up");
	commit(s, &f, "up lab: 2 nodes, 2 changed, 0 failed, 1.0s\n\na: done\n", id1);
	/* The second run only ran node a: b keeps what it had. */
	state_files_add(&f, "nodes/a/facts", "kernel=6.2\n", 11);
	state_files_addf(&f, "summary", "command: %s\n", "check");
	commit(s, &f, "check lab: 1 node, 0 changed, 0 failed, 0.5s\n", id2);

	expect_file(s, id1, "nodes/a/facts", "kernel=6.1\n");
	expect_file(s, id2, "nodes/a/facts", "kernel=6.2\n");
	expect_file(s, id2, "nodes/b/facts", "kernel=6.1\n");
	assert_int_equal(state_read(s, id2, "nodes/c/facts", &sb, &err), STATE_ERR_NOTFOUND);

	/* The folder shows the last run, and ignores private/ and the lock. */
	path = xasprintf("%s/nodes/a/facts", dir);
	assert_int_equal(read_file(path, &sb), 0);
	assert_string_equal(sb.buf, "kernel=6.2\n");
	free(path);
	strbuf_reset(&sb);
	path = xasprintf("%s/.gitignore", dir);
	assert_int_equal(read_file(path, &sb), 0);
	assert_non_null(strstr(sb.buf, "/private/"));
	assert_non_null(strstr(sb.buf, "/lock"));
	free(path);

	assert_int_equal(state_runs(s, &runs, &nr, &err), 0);
	assert_int_equal(nr, 2);
	assert_int_equal(runs[0].number, 2);
	assert_string_equal(runs[0].id, id2);
	assert_string_equal(runs[0].subject, "check lab: 1 node, 0 changed, 0 failed, 0.5s");
	assert_string_equal(runs[1].body, "a: done"); /* libgit2 trims the end */
	state_runs_free(runs, nr);

	assert_int_equal(state_resolve(s, "1", id, &err), 0);
	assert_string_equal(id, id1);
	assert_int_equal(state_resolve(s, "~0", id, &err), 0);
	assert_string_equal(id, id2);
	assert_int_equal(state_resolve(s, "~1", id, &err), 0);
	assert_string_equal(id, id1);
	{
		char prefix[9];
		snprintf(prefix, sizeof(prefix), "%.8s", id1);
		assert_int_equal(state_resolve(s, prefix, id, &err), 0);
		assert_string_equal(id, id1);
	}
	assert_int_equal(state_resolve(s, "3", id, &err), STATE_ERR_NOTFOUND);
	assert_non_null(strstr(err.hint, "1 to 2"));
	assert_int_equal(state_resolve(s, "~2", id, &err), STATE_ERR_NOTFOUND);

	assert_int_equal(state_list(s, id2, "nodes/", &paths, &nr, &err), 0);
	assert_int_equal(nr, 2);
	assert_string_equal(paths[0], "nodes/a/facts");
	assert_string_equal(paths[1], "nodes/b/facts");
	for (i = 0; i < nr; i++)
		free(paths[i]);
	free(paths);

	/* Nothing may be recorded under private/, .git or outside the folder. */
	state_files_add(&f, "private/admin.conf", "x", 1);
	assert_int_equal(state_commit(s, &f, "x\n", wall_ms(), NULL, &err), STATE_ERR);
	assert_non_null(strstr(err.msg, "refusing to record 'private/admin.conf'"));
	state_files_release(&f);
	state_files_add(&f, "nodes/../../x", "x", 1);
	assert_int_equal(state_commit(s, &f, "x\n", wall_ms(), NULL, &err), STATE_ERR);
	state_files_release(&f);
	state_files_add(&f, "a/.git/config", "x", 1);
	assert_int_equal(state_commit(s, &f, "x\n", wall_ms(), NULL, &err), STATE_ERR);
	state_files_release(&f);

	strbuf_release(&sb);
	state_free(s);
	rm_rf(dir);
	free(dir);
}

struct seen {
	char text[512];
};

static int on_change(void *ctx, enum state_change what, const char *path)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%c%s ",
		 what == STATE_ADDED	 ? '+'
		 : what == STATE_DELETED ? '-'
					 : '~',
		 path);
	return 0;
}

static void test_diff(void **unused)
{
	char *dir = tmp_dir(), id1[41], id2[41];
	struct state *s = NULL;
	struct state_files f = {0};
	struct seen seen = {""};
	struct strbuf d = STRBUF_INIT;
	struct error err = {0};

	assert_int_equal(state_open(&s, dir, true, &err), 0);
	state_files_add(&f, "nodes/a/files/etc/x.conf", "one\ntwo\nthree\n", 14);
	state_files_add(&f, "nodes/a/results", "r › s\tunchanged\n", 17);
	commit(s, &f, "one\n", id1);
	state_files_add(&f, "nodes/a/files/etc/x.conf", "one\n2\nthree\n", 12);
	state_files_add(&f, "nodes/b/results", "r › s\tchanged\n", 15);
	commit(s, &f, "two\n", id2);
	assert_int_equal(state_diff(s, id1, id2, on_change, &seen, &err), 0);
	assert_string_equal(seen.text, "~nodes/a/files/etc/x.conf +nodes/b/results ");

	assert_int_equal(state_text_diff("one\ntwo\nthree\n", 14, "one\n2\nthree\n", 12,
					 "x (before)", "x (after)", &d, &err),
			 0);
	assert_string_equal(
	    d.buf, "--- x (before)\n+++ x (after)\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n");
	strbuf_reset(&d);
	assert_int_equal(state_text_diff("same\n", 5, "same\n", 5, "a", "b", &d, &err), 0);
	assert_string_equal(d.buf, "");
	strbuf_release(&d);
	state_free(s);
	rm_rf(dir);
	free(dir);
}

static void test_lock(void **unused)
{
	char *dir = tmp_dir(), *lock;
	struct state *s1 = NULL, *s2 = NULL;
	struct state_lock_info prev;
	struct error err = {0};
	struct strbuf sb = STRBUF_INIT;
	pid_t child;
	int status;

	assert_int_equal(state_open(&s1, dir, true, &err), 0);
	assert_int_equal(state_open(&s2, dir, false, &err), 0);
	assert_int_equal(state_lock(s1, "up", &prev, &err), 0);
	assert_false(prev.found);
	/* A second run: refused, told who holds it. */
	assert_int_equal(state_lock(s2, "check", &prev, &err), STATE_ERR_BUSY);
	assert_true(prev.alive);
	assert_int_equal(prev.pid, (long)getpid());
	assert_string_equal(prev.command, "up");
	assert_non_null(strstr(err.msg, "another run is using the state folder"));
	assert_non_null(strstr(err.msg, "provision up, pid "));
	assert_non_null(strstr(err.hint, "kill "));
	state_unlock(s1);
	lock = xasprintf("%s/lock", dir);
	assert_int_equal(access(lock, F_OK), -1);
	assert_int_equal(state_lock(s2, "check", &prev, &err), 0);
	assert_false(prev.found);
	state_unlock(s2);

	/* A lock left by a process that died: recognised as stale. */
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	{
		char host[128] = "";
		FILE *f = fopen(lock, "w");
		gethostname(host, sizeof(host) - 1);
		fprintf(
		    f,
		    "pid=%ld\ncommand=up\nhost=%s\nuser=root\nstarted=2026-01-01 10:00:00 +0000\n",
		    (long)child, host);
		fclose(f);
	}
	assert_int_equal(state_lock(s1, "up", &prev, &err), 0);
	assert_true(prev.found);
	assert_false(prev.alive);
	assert_int_equal(prev.pid, (long)child);
	assert_string_equal(prev.started, "2026-01-01 10:00:00 +0000");
	/* The lock now names this process. */
	assert_int_equal(read_file(lock, &sb), 0);
	{
		char want[64];
		snprintf(want, sizeof(want), "pid=%ld\n", (long)getpid());
		assert_true(!strncmp(sb.buf, want, strlen(want)));
	}
	state_free(s1); /* unlocks */
	assert_int_equal(access(lock, F_OK), -1);
	state_free(s2);
	strbuf_release(&sb);
	free(lock);
	rm_rf(dir);
	free(dir);
}

static void expect_scrub(const char *in, const char *want, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, in);
	assert_int_equal(state_scrub(&sb), n);
	assert_string_equal(sb.buf, want);
	strbuf_release(&sb);
}

static void test_scrub(void **unused)
{
	expect_scrub("a\n-----BEGIN PRIVATE KEY-----\nMIIEv\nQQ==\n-----END PRIVATE KEY-----\nb\n",
		     "a\n[private key removed by provision]\nb\n", 1);
	expect_scrub("-----BEGIN RSA PRIVATE KEY-----\nxx\n",
		     "[private key removed by provision]\n", 1);
	expect_scrub("users:\n- user:\n    client-key-data: LS0tLS1CRUdJTg==\n    "
		     "client-certificate-data: abc\n",
		     "users:\n- user:\n    client-key-data: [removed by provision]\n"
		     "    client-certificate-data: abc\n",
		     1);
	expect_scrub("  token: abcdef.0123456789abcdef\n", "  token: [removed by provision]\n", 1);
	expect_scrub("bootstrapToken: abcdef.0123\n", "bootstrapToken: [removed by provision]\n",
		     1);
	expect_scrub("hub:\n  cookieSecret: 0123456789\n",
		     "hub:\n  cookieSecret: [removed by provision]\n", 1);
	expect_scrub("\"password\": \"hunter22\"\n", "\"password\": [removed by provision]\n", 1);
	expect_scrub("kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef \\\n",
		     "kubeadm join 10.0.0.1:6443 --token [removed by provision] \\\n", 1);
	expect_scrub("--certificate-key=0123456789abcdef --v=5\n",
		     "--certificate-key=[removed by provision] --v=5\n", 1);
	/* kubeadm init --skip-token-print's placeholder is no token (issue 33) */
	expect_scrub("kubeadm join 10.0.0.1:6443 --token <value withheld> \\\n",
		     "kubeadm join 10.0.0.1:6443 --token <value withheld> \\\n", 0);
	expect_scrub("--token <token> --token abcdef.0123456789abcdef\n",
		     "--token <token> --token [removed by provision]\n", 1);
	expect_scrub("--token [secret] --token \"$TOKEN\" --tokens x\n",
		     "--token [secret] --token \"$TOKEN\" --tokens x\n", 0);
	/* A flag starts a word: scrubbing twice gave different results when a
	 * masked value had hidden the --token before "-----token x" (fuzz_scrub). */
	expect_scrub("a--certificate-key v--token -----token use/sh\n",
		     "a--certificate-key v--token -----token use/sh\n", 0);
	expect_scrub("x --certificate-key abcd--token -----token use/sh\n",
		     "x --certificate-key [removed by provision] -----token use/sh\n", 1);
	/* A word that is not a value (here a flag) is searched too (fuzz_scrub). */
	expect_scrub("a: --token -----+--token abcdefgh\n", "a: --token -----+--token [removed by provision]\n", 1);
	/* Scrubbing what was scrubbed changes nothing (a bundle scrubs records
	 * that were scrubbed on their way in; found by tests/fuzz/fuzz_scrub). */
	expect_scrub("kubeadm join 10.0.0.1:6443 --token [removed by provision] \\\n"
		     "--certificate-key=[removed by provision] --v=5\n",
		     "kubeadm join 10.0.0.1:6443 --token [removed by provision] \\\n"
		     "--certificate-key=[removed by provision] --v=5\n",
		     0);
	/* Left alone: redacted values, paths named by *_file keys, public keys, short values,
	 * lists. */
	expect_scrub("token: [secret]\n", "token: [secret]\n", 0);
	expect_scrub("sudo_password_file: /etc/pw\n", "sudo_password_file: /etc/pw\n", 0);
	expect_scrub("-----BEGIN PGP PUBLIC KEY BLOCK-----\nabc\n",
		     "-----BEGIN PGP PUBLIC KEY BLOCK-----\nabc\n", 0);
	expect_scrub("token: ~\n", "token: ~\n", 0);
	expect_scrub("tokens: [a, b]\n", "tokens: [a, b]\n", 0);
	expect_scrub("kernel=6.1\nsysctl=net.ipv4.ip_forward 1\n",
		     "kernel=6.1\nsysctl=net.ipv4.ip_forward 1\n", 0);
	expect_scrub("no newline at the end: token: x", "no newline at the end: token: x", 0);
}

/* The run's paths have one owner (record_files.h): bundle and diff classify through it. */
static void expect_path(const char *path, enum record_path_kind kind, const char *node)
{
	struct record_path rp;

	record_path_parse(path, &rp);
	assert_int_equal(rp.kind, kind);
	if (!node) {
		assert_null(rp.node);
		return;
	}
	assert_non_null(rp.node);
	assert_int_equal(rp.node_len, strlen(node));
	assert_memory_equal(rp.node, node, strlen(node));
}

static void test_record_paths(void **unused)
{
	struct record_path a, b;
	char *p, *n;

	(void)unused;
	expect_path(RECORD_SUMMARY, RECORD_PATH_SUMMARY, NULL);
	expect_path(RECORD_VALIDATION, RECORD_PATH_VALIDATION, NULL);
	expect_path(RECORD_INVENTORY, RECORD_PATH_INVENTORY, NULL);
	expect_path("summaryx", RECORD_PATH_OTHER, NULL);
	expect_path("logs/w-1.log", RECORD_PATH_LOG, "w-1");
	expect_path("logs/odd", RECORD_PATH_LOG, NULL);
	expect_path("nodes/w1", RECORD_PATH_OTHER, NULL);
	expect_path("nodes/w1/facts/x", RECORD_PATH_NODE_OTHER, "w1");
	expect_path("nodes/w1/files/etc/x.conf", RECORD_PATH_NODE_COPY, "w1");
	/* Every file record_node_path() names comes back as itself. */
	for (int f = RECORD_FACTS; f <= RECORD_DEPLOYED; f++) {
		p = record_node_path("cp", (enum record_node_file)f);
		expect_path(p, RECORD_PATH_NODE, "cp");
		record_path_parse(p, &a);
		assert_int_equal(a.file, f);
		free(p);
	}
	p = record_file_path("cp", "/etc/x.conf");
	record_path_parse(p, &a);
	assert_int_equal(a.kind, RECORD_PATH_NODE_COPY);
	assert_string_equal(a.dest, "/etc/x.conf");
	free(p);
	p = record_log_path("cp");
	expect_path(p, RECORD_PATH_LOG, "cp");
	free(p);
	/* Same node: files under nodes/NODE/ only, whole names. */
	record_path_parse("nodes/w1/facts", &a);
	record_path_parse("nodes/w1/files/etc/x", &b);
	assert_true(record_path_same_node(&a, &b));
	record_path_parse("nodes/w10/facts", &b);
	assert_false(record_path_same_node(&a, &b));
	record_path_parse("logs/w1.log", &b);
	assert_false(record_path_same_node(&a, &b));
	assert_false(record_path_same_node(&b, &b));
	/* The logs folder's files: NODE.log, no dot files. */
	n = record_log_node("w1.log");
	assert_string_equal(n, "w1");
	free(n);
	assert_null(record_log_node(".log"));
	assert_null(record_log_node(".x.log"));
	assert_null(record_log_node("w1.log.tmp"));
}

/* A node's recorded facts are read by facts_parse (the one reader); poisoned ones are not. */
static void test_record_facts(void **unused)
{
	static const char ok[] = "facts_version=1\nmachine_id=abc\n";
	static const char poisoned[] = "facts_version=1\nmachine_id=abc\nhostname=a\x1b[2Jb\n";
	struct facts f;

	(void)unused;
	assert_int_equal(record_facts_parse(ok, strlen(ok), &f), 0);
	assert_string_equal(f.machine_id, "abc");
	facts_release(&f);
	assert_int_equal(record_facts_parse("machine_id=abc\n", 15, &f), -1);
	assert_int_equal(record_facts_parse(poisoned, strlen(poisoned), &f), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_commit_overlay_and_read),
	    cmocka_unit_test(test_diff),
	    cmocka_unit_test(test_lock),
	    cmocka_unit_test(test_scrub),
	    cmocka_unit_test(test_record_paths),
	    cmocka_unit_test(test_record_facts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
