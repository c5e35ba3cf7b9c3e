/*
 * What the tests of the state repository and of the estimate made from it
 * share: a state folder in a fresh temporary folder, its removal, and a
 * commit that fails the test with the store's message.  Include after
 * cmocka.h, state.h and util.h.
 */
#ifndef PROVISION_TEST_STATE_FIXTURE_H
#define PROVISION_TEST_STATE_FIXTURE_H

static inline char *tmp_dir(void)
{
	char tmpl[] = "/tmp/provision-test-state-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return xasprintf("%s/lab.state", d);
}

static inline void rm_rf(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);
	char *parent = xstrdup(dir);

	assert_int_equal(system(cmd), 0);
	*strrchr(parent, '/') = '\0';
	rmdir(parent);
	free(cmd);
	free(parent);
}

static inline void commit(struct state *s, struct state_files *f, const char *msg, char id[41])
{
	struct error err = {0};

	if (state_commit(s, f, msg, wall_ms(), id, &err) < 0)
		fail_msg("commit: %s", err.msg);
	state_files_release(f);
}

#endif
