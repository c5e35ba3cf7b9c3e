/*
 * Unit tests for transport.c: quoting, SHA-256, the agent's requests and
 * command lines, jump host specs and the output frame parser.  The agent
 * script itself runs here under the local /bin/sh, fed through the exact
 * bootstrap line the transport sends over SSH, and sudo is a fake that
 * records its arguments: the password must reach its stdin, never argv.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport.h"
#include "util.h"

extern const char transport_agent_script[];
extern const size_t transport_agent_script_len;

/* Running shell commands */

struct shell {
	struct strbuf out, err;
	int status; /* exit status, or 128+N when killed by signal N */
};

static char tmpdir[64];

static int setup_tmpdir(void **state)
{
	strcpy(tmpdir, "/tmp/test_transport.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int remove_tmpdir(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	int rc = system(cmd);
	free(cmd);
	return rc;
}

static char *tmp_path(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void write_path(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, data, len), 0);
	close(fd);
}

/* Run `sh -c command` with stdin from `in`; PATH gets tmpdir first when asked. */
static void run_shell(struct shell *r, const char *command, const void *in, size_t in_len,
		      bool fake_path)
{
	char *in_path = tmp_path("stdin"), *out_path = tmp_path("stdout"),
	     *err_path = tmp_path("stderr");
	int wstatus;
	pid_t pid;

	write_path(in_path, in, in_len);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int i = open(in_path, O_RDONLY),
		    o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600),
		    e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fake_path) {
			char *p = xasprintf("%s:%s", tmpdir, getenv("PATH"));
			setenv("PATH", p, 1);
		}
		dup2(i, 0), dup2(o, 1), dup2(e, 2);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	strbuf_init(&r->out, 0);
	strbuf_init(&r->err, 0);
	assert_int_equal(read_file(out_path, &r->out), 0);
	assert_int_equal(read_file(err_path, &r->err), 0);
	free(in_path);
	free(out_path);
	free(err_path);
}

static void shell_release(struct shell *r)
{
	strbuf_release(&r->out);
	strbuf_release(&r->err);
}

/* sh_quote */

static void test_sh_quote(void **state)
{
	static const char *const words[] = {
	    "plain",	   "",		"two words", "it's", "a'b'c", "$HOME",	   "`id`",
	    "back\\slash", "new\nline", "*",	     "-n",   "=x",    "tab\there", "\"dq\"",
	    "!",	   "~root",	"a;b|c&d",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(words); i++) {
		struct strbuf cmd = STRBUF_INIT;
		struct shell r;

		strbuf_addstr(&cmd, "printf %s ");
		sh_quote(&cmd, words[i]);
		run_shell(&r, cmd.buf, "", 0, false);
		assert_int_equal(r.status, 0);
		assert_string_equal(r.out.buf, words[i]);
		shell_release(&r);
		strbuf_release(&cmd);
	}
	{
		struct strbuf sb = STRBUF_INIT;
		sh_quote(&sb, "/etc/ssh/sshd_config");
		sh_quote(&sb, " ");
		sh_quote(&sb, "it's");
		assert_string_equal(sb.buf, "/etc/ssh/sshd_config' ''it'\\''s'");
		strbuf_release(&sb);
	}
}

static void test_err_kind(void **state)
{
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_HOSTKEY), "host key");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_TIMEOUT), "timeout");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_RESOLVE), "dns");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_REFUSED), "refused");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_AUTH), "auth");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_SUDO), "sudo");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_CMD_TIMEOUT), "command timeout");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_LOST), "connection lost");
	assert_string_equal(transport_err_kind(TRANSPORT_ERR_CANCELLED), "cancelled");
	assert_string_equal(transport_err_kind(-99), "error");
}

/* SHA-256 */

static void test_sha256_vectors(void **state)
{
	char hex[65], *million = xmalloc(1000000);

	transport_sha256_hex(hex, "", 0);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	transport_sha256_hex(hex, "abc", 3);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	transport_sha256_hex(hex, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', 1000000);
	transport_sha256_hex(hex, million, 1000000);
	assert_string_equal(hex,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* Every padding boundary, against coreutils' sha256sum. */
static void test_sha256_lengths(void **state)
{
	unsigned char data[300];
	size_t len, i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 3);
	for (len = 0; len <= sizeof(data); len += len < 140 ? 1 : 37) {
		struct shell r;
		char hex[65];

		transport_sha256_hex(hex, data, len);
		run_shell(&r, "sha256sum | cut -d' ' -f1", data, len, false);
		assert_int_equal(r.status, 0);
		strbuf_rtrim(&r.out);
		assert_string_equal(hex, r.out.buf);
		shell_release(&r);
	}
}

static void test_token(void **state)
{
	char a[TRANSPORT_TOKEN_LEN + 1], b[TRANSPORT_TOKEN_LEN + 1];

	transport_make_token(a);
	transport_make_token(b);
	assert_int_equal(strlen(a), TRANSPORT_TOKEN_LEN);
	assert_int_equal(strspn(a, "0123456789abcdef"), TRANSPORT_TOKEN_LEN);
	assert_string_not_equal(a, b);
}

/* Requests and command lines */

static void test_agent_request(void **state)
{
	struct strbuf sb = STRBUF_INIT;

	transport_agent_request(&sb, "tok", "echo a\necho b", "in\0put", 6, false);
	assert_int_equal(sb.len, strlen("tok 2 6\necho a\necho b\n") + 6);
	assert_memory_equal(sb.buf, "tok 2 6\necho a\necho b\nin\0put", sb.len);
	strbuf_reset(&sb);
	transport_agent_request(&sb, "tok", "true\n", NULL, 99, false);
	assert_string_equal(sb.buf, "tok 1 0\ntrue\n");
	strbuf_reset(&sb);
	transport_agent_request(&sb, "tok", "true\n", NULL, 0, true);
	assert_string_equal(sb.buf, "tok 1 0 sh\ntrue\n");
	strbuf_reset(&sb);
	transport_agent_request(&sb, "tok", "", NULL, 0, false);
	assert_string_equal(sb.buf, "tok 0 0\n");
	strbuf_reset(&sb);
	transport_agent_request(&sb, "tok", "a\n\nb\n\n", "", 0, false);
	assert_string_equal(sb.buf, "tok 4 0\na\n\nb\n\n");
	/* A long command goes as its byte count, for one read on the node. */
	{
		char *cmd = xmalloc(TRANSPORT_AGENT_LONG_COMMAND + 2), want[64];
		memset(cmd, 'x', TRANSPORT_AGENT_LONG_COMMAND + 1);
		cmd[TRANSPORT_AGENT_LONG_COMMAND + 1] = '\0';
		strbuf_reset(&sb);
		transport_agent_request(&sb, "tok", cmd, "in", 2, true);
		snprintf(want, sizeof(want), "tok c%d 2 sh\n", TRANSPORT_AGENT_LONG_COMMAND + 1);
		assert_int_equal(sb.len, strlen(want) + TRANSPORT_AGENT_LONG_COMMAND + 1 + 2);
		assert_memory_equal(sb.buf, want, strlen(want));
		assert_memory_equal(sb.buf + sb.len - 3, "xin", 3);
		free(cmd);
	}
	strbuf_release(&sb);
}

static void test_priv_for(void **state)
{
	struct transport_target t = {.user = "root"};

	assert_int_equal(transport_priv_for(&t), TRANSPORT_PRIV_NONE);
	t.sudo = TRANSPORT_SUDO_ALWAYS;
	assert_int_equal(transport_priv_for(&t), TRANSPORT_PRIV_SUDO);
	t.user = "lab";
	t.sudo = TRANSPORT_SUDO_AUTO;
	assert_int_equal(transport_priv_for(&t), TRANSPORT_PRIV_SUDO);
	t.sudo_password = "pw";
	assert_int_equal(transport_priv_for(&t), TRANSPORT_PRIV_SUDO_PASSWORD);
	t.sudo = TRANSPORT_SUDO_NEVER;
	assert_int_equal(transport_priv_for(&t), TRANSPORT_PRIV_NONE);
}

static void test_command_lines(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	const char *args[] = {"kill", "0", "it's"};

	transport_agent_command(&sb, TRANSPORT_PRIV_NONE, "T0K", args, 3);
	assert_true(!strncmp(sb.buf, "exec /bin/sh -c '", 17));
	assert_non_null(strstr(sb.buf, ".provision-begin-T0K ]"));
	assert_non_null(strstr(sb.buf, "' provision-agent kill 0 'it'\\''s'"));
	assert_null(strchr(sb.buf, '\n'));
	strbuf_reset(&sb);
	transport_agent_command(&sb, TRANSPORT_PRIV_SUDO, "T0K", NULL, 0);
	assert_true(!strncmp(sb.buf, "exec sudo -n /bin/sh -c '", 25));
	strbuf_reset(&sb);
	transport_agent_command(&sb, TRANSPORT_PRIV_SUDO_PASSWORD, "T0K", NULL, 0);
	assert_true(!strncmp(sb.buf, "exec sudo -S -p '' /bin/sh -c '", 31));
	strbuf_reset(&sb);

	transport_channel_command(&sb, TRANSPORT_PRIV_NONE, "T0K", "echo 'hi'");
	assert_string_equal(sb.buf, "PROVISION_CMD=T0K exec /bin/sh -c 'echo '\\''hi'\\'''");
	strbuf_reset(&sb);
	transport_channel_command(&sb, TRANSPORT_PRIV_SUDO, "T0K", "id -u");
	assert_string_equal(sb.buf, "exec sudo -n /bin/sh -c 'PROVISION_CMD=T0K exec /bin/sh -c "
				    "\"$1\"' provision-cmd 'id -u'");
	strbuf_reset(&sb);

	assert_int_equal(
	    transport_stdin_preamble(&sb, TRANSPORT_PRIV_SUDO_PASSWORD, "s3cret", "T0K"), 0);
	assert_string_equal(sb.buf, "s3cret\n.provision-begin-T0K\n");
	strbuf_reset(&sb);
	assert_int_equal(transport_stdin_preamble(&sb, TRANSPORT_PRIV_SUDO, "s3cret", "T0K"), 0);
	assert_string_equal(sb.buf, ".provision-begin-T0K\n");
	assert_int_equal(transport_stdin_preamble(&sb, TRANSPORT_PRIV_SUDO_PASSWORD, "a\nb", "T"),
			 -1);
	assert_int_equal(transport_stdin_preamble(&sb, TRANSPORT_PRIV_SUDO_PASSWORD, NULL, "T"),
			 -1);
	strbuf_release(&sb);
}

static void test_parse_jump(void **state)
{
	static const struct {
		const char *spec, *user, *host;
		int port;
	} ok[] = {
	    {"bastion", NULL, "bastion", 0},
	    {"admin@bastion:2222", "admin", "bastion", 2222},
	    {"10.0.0.1:22", NULL, "10.0.0.1", 22},
	    {"[::1]:2200", NULL, "::1", 2200},
	    {"u@[fe80::1]", "u", "fe80::1", 0},
	    {"fe80::1", NULL, "fe80::1", 0},
	    {"a@b@gw", "a@b", "gw", 0},
	};
	static const char *const bad[] = {"",	    "@gw",  "gw:",   "gw:0",   "gw:65536",
					  "gw:22x", "[::1", "[]:22", "[::1]x", "u@"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		char *user, *host;
		int port;
		assert_int_equal(transport_parse_jump(ok[i].spec, &user, &host, &port), 0);
		if (ok[i].user)
			assert_string_equal(user, ok[i].user);
		else
			assert_null(user);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
		free(user);
		free(host);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		char *user, *host;
		int port;
		if (transport_parse_jump(bad[i], &user, &host, &port) != -1)
			fail_msg("'%s' should not parse", bad[i]);
		assert_null(user);
		assert_null(host);
	}
}

/* The frame parser */

struct lines {
	struct strbuf text; /* "<stream>:<line>|" per line */
	bool flags;	    /* and each line's flags (digits) in flags_text */
	struct strbuf flags_text;
};

static void collect(void *ctx, enum transport_stream stream, const char *line, size_t len,
		    unsigned flags)
{
	struct lines *l = ctx;

	if (l->flags)
		strbuf_addf(&l->flags_text, "%u", flags);
	strbuf_addf(&l->text, "%d:", stream);
	strbuf_add(&l->text, line, len);
	strbuf_addch(&l->text, '|');
}

static const char tok[] = "0123456789abcdef0123456789abcdef";

/* Feed `stream` in chunks of every size; each run must give want/status/rest. */
static void expect_frames(const char *token, const char *stream, size_t len, const char *want,
			  int status, size_t rest)
{
	size_t chunk;

	for (chunk = 1; chunk <= len + 1; chunk++) {
		struct lines l = {STRBUF_INIT, false, STRBUF_INIT};
		struct transport_frame f;
		size_t off = 0, used = 0;

		transport_frame_init(&f, TRANSPORT_STDOUT, token, collect, &l);
		while (off < len && !f.done) {
			size_t n = len - off < chunk ? len - off : chunk;
			used = transport_frame_feed(&f, stream + off, n);
			assert_true(used <= n);
			if (!f.done)
				assert_int_equal(used, n);
			off += used;
		}
		if (!token || !*token)
			transport_frame_finish(&f);
		if (strcmp(l.text.buf, want))
			fail_msg("chunk %zu: lines '%s', want '%s'", chunk, l.text.buf, want);
		assert_int_equal(f.status, status);
		assert_int_equal(len - off, rest);
		transport_frame_release(&f);
		strbuf_release(&l.text);
	}
}

#define FRAMES(token, literal, want, status, rest)                                                 \
	expect_frames(token, literal, sizeof(literal) - 1, want, status, rest)
#define T "0123456789abcdef0123456789abcdef"

static void test_frames_agent(void **state)
{
	FRAMES(tok, "abc\n\n" T " 0\n", "1:abc|", 0, 0);
	FRAMES(tok, "abc\n" T " 3\n", "1:abc|", 3, 0);
	FRAMES(tok, "\n" T " 0\n", "", 0, 0);
	FRAMES(tok, "\n\n" T " 1\n", "1:|", 1, 0);
	FRAMES(tok, "a\n\n\n" T " 255\n", "1:a|1:|", 255, 0);
	FRAMES(tok, "x\n0123456789Z\n\n" T " 0\n", "1:x|1:0123456789Z|", 0, 0);
	FRAMES(tok, "\n" T " x\n\n" T " 7\n", "1:|1:" T " x|", 7, 0);
	FRAMES(tok, "\n" T "\n\n" T " 7\n", "1:|1:" T "|", 7, 0);
	FRAMES(tok, "\n" T " 12a\n\n" T " 0\n", "1:|1:" T " 12a|", 0, 0);
	FRAMES(tok, "bin\0ary\r\n\n" T " 0\nleftover", "1:bin\0ary\r|", 0, 8);
	/* Another token is output like any other. */
	FRAMES(tok, "\nffffffffffffffffffffffffffffffff 0\n\n" T " 2\n",
	       "1:|1:ffffffffffffffffffffffffffffffff 0|", 2, 0);
}

static void test_frames_channel(void **state)
{
	FRAMES(NULL, "a\n\nb", "1:a|1:|1:b|", -1, 0);
	FRAMES(NULL, "a\n", "1:a|", -1, 0);
	FRAMES(NULL, "\n", "1:|", -1, 0);
	FRAMES(NULL, "", "", -1, 0);
	FRAMES("", "x\n" T " 0\n", "1:x|1:" T " 0|", -1, 0);
}

static void test_frames_long_lines(void **state)
{
	size_t big = 3 * TRANSPORT_LINE_MAX + 100;
	char *s = xmalloc(big + 64);
	struct lines l = {STRBUF_INIT, true, STRBUF_INIT};
	struct transport_frame f;
	size_t pieces = 0, i;

	memset(s, 'x', big);
	memcpy(s + big, "\n\n" T " 0\n", 2 + 32 + 3);
	transport_frame_init(&f, TRANSPORT_STDERR, tok, collect, &l);
	assert_int_equal(transport_frame_feed(&f, s, big + 37), big + 37);
	assert_true(f.done);
	for (i = 0; i < l.text.len; i++)
		pieces += l.text.buf[i] == '|';
	assert_int_equal(pieces, 4);
	assert_int_equal(l.text.len, big + 4 * 3);
	assert_true(!strncmp(l.text.buf, "2:xxx", 5));
	/* the first piece starts the line, the others continue it; more follows all but the last */
	assert_string_equal(l.flags_text.buf, "2331");
	transport_frame_release(&f);
	strbuf_reset(&l.text);
	strbuf_reset(&l.flags_text);

	/* Exactly one piece long, then the newline: one whole line, no empty line after it. */
	memcpy(s + TRANSPORT_LINE_MAX, "\nnext\n\n" T " 0\n", 7 + 32 + 3);
	transport_frame_init(&f, TRANSPORT_STDOUT, tok, collect, &l);
	transport_frame_feed(&f, s, TRANSPORT_LINE_MAX + 42);
	assert_true(f.done);
	assert_int_equal(l.text.len, 2 + TRANSPORT_LINE_MAX + 1 + strlen("1:next|"));
	assert_string_equal(l.text.buf + 2 + TRANSPORT_LINE_MAX + 1, "1:next|");
	assert_string_equal(l.flags_text.buf, "00");
	transport_frame_release(&f);
	strbuf_release(&l.text);
	strbuf_release(&l.flags_text);
	free(s);
}

/*
 * Issue 31 F3: a line whose byte 65536 starts "::set x=..." is one line in
 * two pieces, the second marked as continuing it (before: two lines, the
 * second parsed as protocol), also fed a byte at a time, and in channel
 * mode (no token) with the last piece ended by the stream's end.
 */
static void test_frames_cut_protocol(void **state)
{
	static const char set[] = "::set x=evil";
	size_t len = TRANSPORT_LINE_MAX + sizeof(set) - 1, i;
	int mode;
	char *s = xmalloc(len + 64);

	(void)state;
	memset(s, 'a', TRANSPORT_LINE_MAX);
	memcpy(s + TRANSPORT_LINE_MAX, set, sizeof(set) - 1);
	memcpy(s + len, "\n\n" T " 0\n", 2 + 32 + 3);
	for (mode = 0; mode < 2; mode++) { /* agent, a byte at a time; channel, at once */
		const char *tk = mode == 0 ? tok : NULL;
		size_t total = tk ? len + 37 : len, step = tk ? 1 : total;
		struct lines l = {STRBUF_INIT, true, STRBUF_INIT};
		struct transport_frame f;
		transport_frame_init(&f, TRANSPORT_STDOUT, tk, collect, &l);
		for (i = 0; i < total && !f.done; i += step)
			transport_frame_feed(&f, s + i, step);
		if (!tk)
			transport_frame_finish(&f);
		assert_string_equal(l.flags_text.buf, "21");
		assert_string_equal(l.text.buf + 2 + TRANSPORT_LINE_MAX, "|1:::set x=evil|");
		transport_frame_release(&f);
		strbuf_release(&l.text);
		strbuf_release(&l.flags_text);
	}
	free(s);
}

/* The agent script under the local /bin/sh, through the real bootstrap. */

static void agent_input(struct strbuf *in, enum transport_priv priv, const char *password,
			const char *token)
{
	assert_int_equal(transport_stdin_preamble(in, priv, password, token), 0);
	strbuf_add(in, transport_agent_script, transport_agent_script_len);
	strbuf_addstr(in, "\n.provision-end\n");
}

/* Check the hello line; return the offset after it. */
static size_t expect_hello(const char *out, char *dir, size_t dirlen)
{
	unsigned uid;
	long pid;
	char d[256];
	const char *nl = strchr(out, '\n');

	assert_non_null(nl);
	assert_int_equal(sscanf(out, "provision-agent 1 %u %ld %255s", &uid, &pid, d), 3);
	assert_int_equal(uid, getuid());
	snprintf(dir, dirlen, "%s", d);
	return (size_t)(nl + 1 - out);
}

/* Parse one framed reply from *p, advancing *p; want NULL: any lines. */
static int next_frame(const char **p, const char *end, const char *token, const char *want)
{
	struct lines l = {STRBUF_INIT, false, STRBUF_INIT};
	struct transport_frame f;
	int status;

	transport_frame_init(&f, TRANSPORT_STDOUT, token, collect, &l);
	*p += transport_frame_feed(&f, *p, (size_t)(end - *p));
	assert_true(f.done);
	if (want)
		assert_string_equal(l.text.buf, want);
	status = f.status;
	transport_frame_release(&f);
	strbuf_release(&l.text);
	return status;
}

static void test_agent_serves(void **state)
{
	static const char t1[] = "11111111111111111111111111111111",
			  t2[] = "22222222222222222222222222222222",
			  t3[] = "33333333333333333333333333333333",
			  t4[] = "44444444444444444444444444444444",
			  t5[] = "55555555555555555555555555555555",
			  t6[] = "66666666666666666666666666666666";
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT, big = STRBUF_INIT;
	const char *args[] = {"serve"}, *p, *end;
	char dir[256];
	struct stat st;
	struct shell r;

	transport_agent_command(&cmd, TRANSPORT_PRIV_NONE, "b00t", args, 1);
	strbuf_addstr(&in, "some line a login script left\n");
	agent_input(&in, TRANSPORT_PRIV_NONE, NULL, "b00t");
	transport_agent_request(&in, t1, "echo out; echo err >&2; printf tail; exit 3", NULL, 0,
				false);
	transport_agent_request(&in, t2, "read a; read b\necho \"$b-$a\"; cat", "1\n2\nrest\0x",
				10, false);
	/* In a subshell: no positional parameters, nothing left for the next command. */
	transport_agent_request(&in, t4, "x=set; echo \"[$#]\"", NULL, 0, false);
	transport_agent_request(&in, t5, "echo \"[${x-unset}]\"", NULL, 0, false);
	/* A long command (read as bytes), its input, a here-document at its very end. */
	strbuf_addstr(&big, "v='");
	while (big.len < 3003)
		strbuf_addch(&big, 'y');
	strbuf_addstr(&big, "'; printf '%s\\n' \"${#v}\"; cat\ncat <<EOF\nend\nEOF\n");
	transport_agent_request(&in, t6, big.buf, "xyz\n", 4, false);
	/* Under a shell of its own, $$ is that shell: the agent lives on. */
	transport_agent_request(&in, t3, "printf '%s\\n' \"$PROVISION_CMD\"; kill -9 $$", NULL, 0,
				true);
	run_shell(&r, cmd.buf, in.buf, in.len, false);
	assert_int_equal(r.status, 0);

	p = r.out.buf + expect_hello(r.out.buf, dir, sizeof(dir));
	end = r.out.buf + r.out.len;
	assert_int_equal(next_frame(&p, end, t1, "1:out|1:tail|"), 3);
	assert_int_equal(next_frame(&p, end, t2, "1:2-1|1:rest\0x|"), 0);
	assert_int_equal(next_frame(&p, end, t4, "1:[0]|"), 0);
	assert_int_equal(next_frame(&p, end, t5, "1:[unset]|"), 0);
	assert_int_equal(next_frame(&p, end, t6, "1:3000|1:xyz|1:end|"), 0);
	assert_int_equal(next_frame(&p, end, t3,
				    "1:"
				    "33333333333333333333333333333333"
				    "|"),
			 137);
	assert_true(p == end);
	p = r.err.buf, end = r.err.buf + r.err.len;
	assert_int_equal(next_frame(&p, end, t1, "1:err|"), 3);
	assert_int_equal(next_frame(&p, end, t2, ""), 0);
	assert_int_equal(next_frame(&p, end, t4, ""), 0);
	assert_int_equal(next_frame(&p, end, t5, ""), 0);
	assert_int_equal(next_frame(&p, end, t6, ""), 0);
	/* The agent's shell may report "Killed" for the command (dash does). */
	assert_int_equal(next_frame(&p, end, t3, NULL), 137);
	/* At end of input the agent leaves and removes its directory. */
	assert_int_equal(stat(dir, &st), -1);
	shell_release(&r);
	strbuf_release(&cmd);
	strbuf_release(&in);
	strbuf_release(&big);
}

/* Where head(1) is not GNU's, the input is read with dd one byte at a time. */
static void test_agent_input_without_gnu_head(void **state)
{
	static const char t1[] = "77777777777777777777777777777777",
			  t2[] = "88888888888888888888888888888888";
	static const char fake_head[] =
	    "#!/bin/sh\necho 'head: unrecognized option --version (a BusyBox-like stand-in)'\n";
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT, big = STRBUF_INIT;
	const char *args[] = {"serve"}, *p;
	char *path = tmp_path("head"), dir[256];
	struct shell r;

	write_path(path, fake_head, strlen(fake_head));
	transport_agent_command(&cmd, TRANSPORT_PRIV_NONE, "b00t", args, 1);
	agent_input(&in, TRANSPORT_PRIV_NONE, NULL, "b00t");
	transport_agent_request(&in, t1, "cat", "1\n2\nrest\0x", 10, false);
	/* A long command too: read with dd, the end of the request stays for the next. */
	strbuf_addstr(&big, "echo long");
	while (big.len < TRANSPORT_AGENT_LONG_COMMAND + 10)
		strbuf_addch(&big, ' ');
	transport_agent_request(&in, t1, big.buf, "", 0, false);
	transport_agent_request(&in, t2, "cat; echo end", "", 0, true);
	run_shell(&r, cmd.buf, in.buf, in.len, true);
	assert_int_equal(r.status, 0);
	p = r.out.buf + expect_hello(r.out.buf, dir, sizeof(dir));
	assert_int_equal(next_frame(&p, r.out.buf + r.out.len, t1, "1:1|1:2|1:rest\0x|"), 0);
	assert_int_equal(next_frame(&p, r.out.buf + r.out.len, t1, "1:long|"), 0);
	assert_int_equal(next_frame(&p, r.out.buf + r.out.len, t2, "1:end|"), 0);
	shell_release(&r);
	strbuf_release(&cmd);
	strbuf_release(&in);
	strbuf_release(&big);
	free(path);
}

static void test_agent_rejects_garbage(void **state)
{
	/* A token that is not hex; a mode that is not "sh". */
	static const char *const bad[] = {"not-hex 1 0\n", "abc 1 0 bash\n", "abc 1c2 0\n",
					  "abc c 0\n"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT;
		const char *args[] = {"serve"};
		struct shell r;

		transport_agent_command(&cmd, TRANSPORT_PRIV_NONE, "b00t", args, 1);
		agent_input(&in, TRANSPORT_PRIV_NONE, NULL, "b00t");
		strbuf_addstr(&in, bad[i]);
		strbuf_addstr(&in, "echo ran >&2\n");
		run_shell(&r, cmd.buf, in.buf, in.len, false);
		assert_int_equal(r.status, 65);
		assert_non_null(strstr(r.err.buf, "malformed request header"));
		assert_null(strstr(r.err.buf, "ran"));
		shell_release(&r);
		strbuf_release(&cmd);
		strbuf_release(&in);
	}
}

static void test_agent_kill(void **state)
{
	static const char t[] = "44444444444444444444444444444444";
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT;
	const char *args[] = {"kill", "0", t};
	int wstatus;
	struct shell r;
	pid_t victim = fork();

	assert_true(victim >= 0);
	if (!victim) {
		setenv("PROVISION_CMD", t, 1);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	transport_agent_command(&cmd, TRANSPORT_PRIV_NONE, "b00t", args, 3);
	agent_input(&in, TRANSPORT_PRIV_NONE, NULL, "b00t");
	run_shell(&r, cmd.buf, in.buf, in.len, false);
	assert_int_equal(r.status, 0);
	assert_int_equal(waitpid(victim, &wstatus, 0), victim);
	assert_true(WIFSIGNALED(wstatus));
	assert_int_equal(WTERMSIG(wstatus), SIGTERM);
	shell_release(&r);
	strbuf_release(&cmd);
	strbuf_release(&in);
}

/*
 * A stand-in for sudo: logs its argv, then like the real one reads the
 * password from stdin with -S (one byte at a time, up to the newline) --
 * unless NOPASSWD, when it reads nothing -- and runs the command.
 */
static void write_fake_sudo(bool nopasswd)
{
	char *path = tmp_path("sudo");
	char *read_pw =
	    nopasswd ? xstrdup(":")
		     : xasprintf("IFS= read -r pw; printf %%s \"$pw\" >'%s/sudo.pw'", tmpdir);
	char *script = xasprintf("#!/bin/sh\n"
				 "printf '%%s\\n' \"$*\" >>'%s/sudo.argv'\n"
				 "if [ \"$1\" = -S ]; then\n"
				 "  shift 3\n"
				 "  %s\n"
				 "else\n"
				 "  shift\n"
				 "fi\n"
				 "exec \"$@\"\n",
				 tmpdir, read_pw);

	write_path(path, script, strlen(script));
	free(path);
	free(read_pw);
	free(script);
}

static void test_agent_sudo_password(void **state)
{
	static const char t1[] = "55555555555555555555555555555555";
	static const char *const password = "pa ss'word$";
	int nopasswd;

	for (nopasswd = 0; nopasswd <= 1; nopasswd++) {
		struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT, log = STRBUF_INIT,
			      pw = STRBUF_INIT;
		const char *args[] = {"serve"}, *p;
		char *argv_log = tmp_path("sudo.argv"), *pw_file = tmp_path("sudo.pw"), dir[256];
		struct shell r;

		unlink(argv_log);
		unlink(pw_file);
		write_fake_sudo(nopasswd);
		transport_agent_command(&cmd, TRANSPORT_PRIV_SUDO_PASSWORD, "b00t", args, 1);
		agent_input(&in, TRANSPORT_PRIV_SUDO_PASSWORD, password, "b00t");
		transport_agent_request(&in, t1, "cat", "input", 5, false);
		run_shell(&r, cmd.buf, in.buf, in.len, true);
		assert_int_equal(r.status, 0);
		p = r.out.buf + expect_hello(r.out.buf, dir, sizeof(dir));
		assert_int_equal(next_frame(&p, r.out.buf + r.out.len, t1, "1:input|"), 0);
		assert_int_equal(read_file(argv_log, &log), 0);
		assert_true(!strncmp(log.buf, "-S -p  /bin/sh -c ", 18));
		assert_null(strstr(log.buf, "pa ss"));
		assert_null(strstr(r.out.buf, "pa ss"));
		assert_null(strstr(r.err.buf, "pa ss"));
		if (nopasswd) {
			assert_int_equal(read_file(pw_file, &pw), -2);
		} else {
			assert_int_equal(read_file(pw_file, &pw), 0);
			assert_string_equal(pw.buf, password);
		}
		shell_release(&r);
		strbuf_release(&cmd);
		strbuf_release(&in);
		strbuf_release(&log);
		strbuf_release(&pw);
		free(argv_log);
		free(pw_file);
	}
}

static void test_channel_command_runs(void **state)
{
	static const char t[] = "66666666666666666666666666666666";
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT;
	struct shell r;

	transport_channel_command(&cmd, TRANSPORT_PRIV_NONE, t,
				  "printf '%s|' \"$PROVISION_CMD\"; cat");
	run_shell(&r, cmd.buf, "in", 2, false);
	assert_string_equal(r.out.buf, "66666666666666666666666666666666|in");
	shell_release(&r);
	strbuf_reset(&cmd);

	/* With a sudo password: the command's stdin starts after the preamble. */
	write_fake_sudo(false);
	transport_channel_command(&cmd, TRANSPORT_PRIV_SUDO_PASSWORD, t, "cat; exit 4");
	assert_int_equal(transport_stdin_preamble(&in, TRANSPORT_PRIV_SUDO_PASSWORD, "pw", t), 0);
	strbuf_addstr(&in, "payload\n");
	run_shell(&r, cmd.buf, in.buf, in.len, true);
	assert_int_equal(r.status, 4);
	assert_string_equal(r.out.buf, "payload\n");
	shell_release(&r);
	/* NOPASSWD: sudo leaves the password line, the wrapper drops it. */
	write_fake_sudo(true);
	run_shell(&r, cmd.buf, in.buf, in.len, true);
	assert_int_equal(r.status, 4);
	assert_string_equal(r.out.buf, "payload\n");
	shell_release(&r);
	strbuf_release(&cmd);
	strbuf_release(&in);
}

/* get_file over exec (transport_get_file_exec) */

/* An exec that runs the command under the local /bin/sh: the real script on a local file. */
static int sh_exec(struct transport *t, const struct transport_exec *req,
		   struct transport_result *res, struct error *err)
{
	FILE *p = popen(req->command, "r");
	char line[256];
	int st;

	(void)t;
	(void)err;
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		size_t len = strcspn(line, "\n");
		req->on_line(req->ctx, TRANSPORT_STDOUT, line, len, 0);
	}
	st = pclose(p);
	res->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return 0;
}

/* An exec whose "node" answers these lines (a hostile or broken node). */
static const char *canned;
static int canned_exec(struct transport *t, const struct transport_exec *req,
		       struct transport_result *res, struct error *err)
{
	const char *p = canned;

	(void)t;
	(void)err;
	while (*p) {
		size_t len = strcspn(p, "\n");
		req->on_line(req->ctx, TRANSPORT_STDOUT, p, len, 0);
		p += len + (p[len] ? 1 : 0);
	}
	res->exit_status = 0;
	return 0;
}

static int keep(void *ctx, const void *data, size_t len)
{
	strbuf_add(ctx, data, len);
	return 0;
}

static int refuse(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return -1;
}

static void test_get_file_exec(void **state)
{
	struct strbuf got = STRBUF_INIT, data = STRBUF_INIT;
	struct error err = {0};
	char sha[65], want[65];
	uint64_t size = 0;
	char *path = xasprintf("%s/file", tmpdir);
	size_t i;
	FILE *f;

	(void)state;
	/* a file of 1000 bytes with every byte value, through the real commands */
	for (i = 0; i < 1000; i++)
		strbuf_addch(&data, (char)(i * 7));
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data.buf, 1, data.len, f), data.len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(transport_get_file_exec(NULL, sh_exec, path, 1 << 20, keep, &got, sha,
						 &size, 0, &err),
			 0);
	transport_sha256_hex(want, data.buf, data.len);
	assert_int_equal(size, 1000);
	assert_int_equal(got.len, 1000);
	assert_memory_equal(got.buf, data.buf, 1000);
	assert_string_equal(sha, want);
	/* larger than max: refused from the size line, not a byte kept */
	strbuf_reset(&got);
	assert_int_equal(transport_get_file_exec(NULL, sh_exec, path, 999, keep, &got, sha, &size,
						 0, &err),
			 TRANSPORT_ERR_IO);
	assert_non_null(strstr(err.msg, "larger than provision accepts"));
	assert_int_equal(got.len, 0);
	/* no such file */
	assert_int_equal(transport_get_file_exec(NULL, sh_exec, "/nonexistent/x", 100, keep, &got,
						 sha, &size, 0, &err),
			 TRANSPORT_ERR_IO);
	assert_non_null(strstr(err.msg, "cannot read '/nonexistent/x' on the node"));
	/* this machine cannot keep the bytes */
	assert_int_equal(transport_get_file_exec(NULL, sh_exec, path, 1 << 20, refuse, NULL, sha,
						 &size, 0, &err),
			 TRANSPORT_ERR_IO);
	assert_non_null(strstr(err.msg, "could not be kept here"));
	/* the node's hash does not match its bytes */
	canned = "0000000000000000000000000000000000000000000000000000000000000000\n5\naGVsbG8=\n";
	strbuf_reset(&got);
	assert_int_equal(transport_get_file_exec(NULL, canned_exec, "/f", 100, keep, &got, sha,
						 &size, 0, &err),
			 TRANSPORT_ERR_IO);
	assert_non_null(strstr(err.msg, "the node said 5 bytes"));
	/* its size does not match */
	canned = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n6\naGVsbG8=\n";
	assert_int_equal(transport_get_file_exec(NULL, canned_exec, "/f", 100, keep, &got, sha,
						 &size, 0, &err),
			 TRANSPORT_ERR_IO);
	/* both right: "hello" */
	canned = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n5\naGVsbG8=\n";
	strbuf_reset(&got);
	assert_int_equal(transport_get_file_exec(NULL, canned_exec, "/f", 100, keep, &got, sha,
						 &size, 0, &err),
			 0);
	assert_int_equal(got.len, 5);
	/* not base64, a hash that is not hex, a negative or wordy size: not the file */
	const char *bad[] = {
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n5\naGVsb!8=\n",
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982Z\n5\naGVsbG8=\n",
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n-5\naGVsbG8=\n",
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n5 bytes\naGVsbG8=\n",
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n5\naGVs=bG8\n",
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n",
	};
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		canned = bad[i];
		assert_int_equal(transport_get_file_exec(NULL, canned_exec, "/f", 100, keep, &got,
							 sha, &size, 0, &err),
				 TRANSPORT_ERR_IO);
		assert_non_null(strstr(err.msg, "not the file"));
	}
	strbuf_release(&got);
	strbuf_release(&data);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err_kind),
	    cmocka_unit_test(test_sha256_vectors),
	    cmocka_unit_test(test_token),
	    cmocka_unit_test(test_agent_request),
	    cmocka_unit_test(test_priv_for),
	    cmocka_unit_test(test_command_lines),
	    cmocka_unit_test(test_parse_jump),
	    cmocka_unit_test(test_frames_agent),
	    cmocka_unit_test(test_frames_channel),
	    cmocka_unit_test(test_frames_long_lines),
	    cmocka_unit_test(test_frames_cut_protocol),
	    cmocka_unit_test_setup_teardown(test_sh_quote, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_sha256_lengths, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_agent_serves, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_agent_input_without_gnu_head, setup_tmpdir,
					    remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_agent_rejects_garbage, setup_tmpdir,
					    remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_agent_kill, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_agent_sudo_password, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_channel_command_runs, setup_tmpdir, remove_tmpdir),
	    cmocka_unit_test_setup_teardown(test_get_file_exec, setup_tmpdir, remove_tmpdir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
