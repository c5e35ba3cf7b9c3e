/*
 * transport: how provision reaches one node.  An ops table, so the layers
 * above (runner, roles) never see libssh; transport_ssh.c is the real
 * implementation and the only file in the tree that includes libssh headers.
 *
 * Theory of operation (transport_ssh.c)
 * -------------------------------------
 * One SSH session per node, opened by connect() and kept for the whole run.
 * Commands go to one remote POSIX sh started once per node (the "agent",
 * provision/transport_agent.sh) on one channel: it runs each command in a
 * subshell of its own (or under `/bin/sh -c`: own_shell), its stdout/stderr
 * stream back as they come, and a frame carrying the exit status ends each
 * command.  When the agent cannot start
 * (no /bin/sh, a restricted shell) or per_command_channels is set, exec()
 * uses one channel per command; `mode` in struct transport_stats says which.
 *
 * Latency (tests/bench/transport.sh, libssh 0.10.6 -> OpenSSH 9.2 on
 * loopback, medians): agent 0.3 ms for `true` in a subshell (0.8 ms when
 * it forked and exec'd /bin/sh per command), 1.4 ms for `grep`; one channel per command 2.6 / 3.4 ms,
 * before the PAM session, login records and login shell a real node adds
 * to every channel (the test sshd has UsePAM no and an empty home).
 * TCP_NODELAY on our socket matters most: without it our small writes wait
 * for sshd's delayed ACK (~45 ms per channel, ~105 ms connect + auth
 * instead of ~27).  Starting the agent, TCP_QUICKACK before each of our
 * polls with channel setup driven through that poll loop saves one more
 * 40 ms stall (10-30 ms instead of ~60); per command it changed nothing.
 *
 * Agent protocol (one session channel; see transport_agent.sh):
 *   start     the channel runs a one-line bootstrap (`exec [sudo ...] /bin/sh
 *             -c BOOT`) that skips stdin lines up to ".provision-begin-TOKEN"
 *             (so a sudo password sudo did not ask for is dropped), reads the
 *             script up to ".provision-end" and evals it.  The agent answers
 *             "provision-agent 1 UID PID DIR" on stdout.
 *   request   "TOKEN NLINES NBYTES[ sh]\n", the command as NLINES lines,
 *             then NBYTES bytes for the command's stdin (else /dev/null);
 *             a long command goes as "TOKEN cLEN NBYTES[ sh]\n" and LEN
 *             bytes (TRANSPORT_AGENT_LONG_COMMAND).
 *             TOKEN is 32 random hex digits chosen per command.  The
 *             command runs in a subshell of the agent (a fork, no exec), or
 *             with "sh" under a `/bin/sh -c` of its own (own_shell).
 *   reply     the command's stdout and stderr go straight to the channel's
 *             two streams (no per-line shell loop: 10 MB pass at full
 *             speed); when the command exits the agent writes
 *             "\nTOKEN STATUS\n" on both streams.  A command can only end
 *             its frame early by printing a token it cannot know.
 *   timeout   the client opens a second channel running the same script in
 *             kill mode: TERM then KILL to the agent's descendants and to
 *             every process whose environment carries PROVISION_CMD=TOKEN
 *             (and their process groups); the agent then reports 128+N.
 *
 * Keepalive: TCP keepalive on the socket (idle = keepalive_s, 3 probes) plus
 * TCP_USER_TIMEOUT, and SSH_MSG_IGNORE from exec loops idle for keepalive_s.
 * The kernel probes while the thread sits inside any blocking libssh call
 * (SFTP, channel open) without a second thread touching the session.  A
 * server that is alive but frozen is bounded by the command timeout and the
 * session timeout (connect_timeout_ms) of blocking calls.
 *
 * Jump hosts: libssh 0.10 has no ProxyJump.  connect() opens a session to
 * the jump host (same known_hosts, policy and credentials), a direct-tcpip
 * channel to the target, and hands the target session one end of a
 * socketpair (SSH_OPTIONS_FD); a pump thread owns the jump session and
 * copies bytes between the pair and the channel.
 *
 * Privilege: with sudo (SUDO_AUTO and a non-root user, or SUDO_ALWAYS) the
 * agent itself runs under `sudo -n` (or `sudo -S` fed the password on stdin
 * when one is configured), so every command of the run is root without a
 * sudo per command.  The password never appears on a command line, in a
 * log or an event.
 *
 * Host keys: verified against known_hosts before authentication.  STRICT
 * refuses unknown and changed keys; ACCEPT_NEW records unknown keys and
 * still refuses changed ones.  There is no mode that ignores a changed key.
 *
 * Threading: a struct transport belongs to one thread at a time (the
 * runner's worker for that node).  Different transports may be used from
 * different threads at once.  The line callback runs on the calling thread.
 */
#ifndef PROVISION_TRANSPORT_H
#define PROVISION_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"
#include "util.h"

/* Error codes, negative; `struct error` carries the readable message. */
enum transport_err {
	TRANSPORT_ERR_GENERIC = -1,
	TRANSPORT_ERR_RESOLVE = -2,	/* DNS: the name does not resolve */
	TRANSPORT_ERR_REFUSED = -3,	/* connection refused */
	TRANSPORT_ERR_TIMEOUT = -4,	/* connect or handshake timed out */
	TRANSPORT_ERR_HOSTKEY = -5,	/* unknown or changed host key */
	TRANSPORT_ERR_AUTH = -6,	/* no accepted authentication */
	TRANSPORT_ERR_SUDO = -7,	/* sudo refused or needs a password we lack */
	TRANSPORT_ERR_CMD_TIMEOUT = -8, /* exec: the command outlived its timeout */
	TRANSPORT_ERR_LOST = -9,	/* the session died (network, sshd killed) */
	TRANSPORT_ERR_IO = -10,		/* put_file: local or remote I/O failure */
	TRANSPORT_ERR_CANCELLED = -11,	/* exec: cancelled by the caller */
};

enum transport_host_keys {
	TRANSPORT_HOST_KEYS_STRICT = 0,
	TRANSPORT_HOST_KEYS_ACCEPT_NEW,
};

enum transport_sudo {
	TRANSPORT_SUDO_AUTO = 0,
	TRANSPORT_SUDO_ALWAYS,
	TRANSPORT_SUDO_NEVER,
};

/* Where and how to connect; strings are borrowed for the duration of connect(). */
struct transport_target {
	const char *name; /* node name, for messages */
	const char *host;
	int port;
	const char *user;
	const char *identity; /* private key file or NULL (agent + defaults) */
	/* Passphrase of `identity`, read once by the CLI from a terminal; NULL:
	 * the key must be unencrypted or held by ssh-agent.  Never prompted for here. */
	const char *identity_passphrase;
	const char *known_hosts; /* file to verify (and, for ACCEPT_NEW, to append to) */
	enum transport_host_keys host_keys;
	enum transport_sudo sudo;
	const char *sudo_password; /* NULL: only passwordless sudo */
	const char *jump;	   /* "[user@]host[:port]" or NULL */
	int connect_timeout_ms;
	int keepalive_s;	   /* 0: off */
	bool per_command_channels; /* force the fallback (benchmarks, odd shells) */
	bool tcp_nodelay_off;	   /* benchmarks only: leave Nagle on for our socket */
};

enum transport_stream { TRANSPORT_STDOUT = 1, TRANSPORT_STDERR = 2 };

/*
 * Called once per complete output line (without the newline; a last line
 * without one is delivered at the end), flags 0.  A line longer than
 * TRANSPORT_LINE_MAX (64 KiB) is delivered in pieces of at most that many
 * bytes, each but the first with TRANSPORT_LINE_CONT, each but the last with
 * TRANSPORT_LINE_MORE: only a piece without TRANSPORT_LINE_CONT starts a
 * line (a node cannot make a line's middle look like the start of one).
 */
#define TRANSPORT_LINE_CONT 1u /* continues a line whose start came before */
#define TRANSPORT_LINE_MORE 2u /* the line goes on in the next piece */
typedef void (*transport_line_fn)(void *ctx, enum transport_stream stream, const char *line,
				  size_t len, unsigned flags);

struct transport_exec {
	const char *command; /* a POSIX sh command line */
	/*
	 * false: the agent runs it in a subshell of its own shell (a fork, no
	 * exec): $$ and $PPID are the agent's, its variables and functions
	 * (_pa_*) are visible.  true: under a `/bin/sh -c` of its own, as ssh
	 * runs a command (provision run: what a user typed).  Channel mode
	 * always runs `sh -c`.
	 */
	bool own_shell;
	const void *input;   /* bytes for the command's stdin, or NULL for none */
	size_t input_len;
	int timeout_ms; /* 0: none.  On expiry the command is killed. */
	transport_line_fn on_line;
	void *ctx;
	/* Polled about every 100 ms; returning true cancels the command. */
	bool (*cancelled)(void *ctx);
};

struct transport_result {
	int exit_status; /* 0-255; 128+N when killed by signal N */
	bool timed_out;
	uint64_t duration_us;
};

struct transport_stats {
	const char *mode;    /* "agent" or "channel" */
	uint64_t connect_us; /* connect() in all: TCP, handshake, auth, agent */
	uint64_t agent_us;   /* of which starting the agent */
	bool is_root;	     /* the commands run as root (directly or via sudo) */
	unsigned commands;
	unsigned files_sent, files_skipped;
};

struct transport;

struct transport_ops {
	const char *name;
	/* Connect, verify the host key, authenticate, start the agent. */
	int (*connect)(struct transport **out, const struct transport_target *target,
		       struct error *err);
	/*
	 * Run one command.  Returns 0 when the command ran (whatever its exit
	 * status, which is in res), or a negative transport_err when it could
	 * not be run or finished (timeout: TRANSPORT_ERR_CMD_TIMEOUT with
	 * res->timed_out set; the session stays usable when it can be).
	 */
	int (*exec)(struct transport *t, const struct transport_exec *req,
		    struct transport_result *res, struct error *err);
	/*
	 * Write `data` to `path` on the node atomically: a temporary file
	 * beside it, mode and owner set, fsync, rename.  When the file
	 * already has the same SHA-256 and mode, nothing is sent and
	 * *skipped is set.  owner may be NULL ("root:root" when root).
	 */
	int (*put_file)(struct transport *t, const char *path, const void *data, size_t len,
			unsigned mode, const char *owner, bool *skipped, struct error *err);
	/*
	 * Read the file at `path` on the node, streamed: its bytes go to
	 * on_data a piece at a time as they arrive (never whole in memory),
	 * at most `max` of them (a larger file is refused before a byte of
	 * it is sent), checked against the SHA-256 and size the node gives
	 * first.  On_data returns 0, or nonzero to stop (then
	 * TRANSPORT_ERR_IO).  sha_hex: the SHA-256 of the file, 64 hex
	 * digits; *size its length.  0, or a negative transport_err
	 * (TRANSPORT_ERR_IO: no such file, or the node sent what is not it).
	 */
	int (*get_file)(struct transport *t, const char *path, uint64_t max,
			int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
			char sha_hex[65], uint64_t *size, int timeout_ms, struct error *err);
	void (*get_stats)(struct transport *t, struct transport_stats *st);
	/* Close the session; accepts NULL. */
	void (*close)(struct transport *t);
};

extern const struct transport_ops transport_ssh_ops;

/*
 * Call once from main() before any thread starts (libssh's ssh_init()).
 * connect() calls it too (once), so tools and tests need not.
 */
void transport_global_init(void);

/*
 * Whether the private key file needs a passphrase (1), loads without one
 * (0), or cannot be read at all (-1), so that the CLI can ask once on a
 * terminal before any worker starts.
 */
int transport_identity_encrypted(const char *path);

/* A readable name for a transport_err ("host key", "timeout", ...). */
const char *transport_err_kind(int code);

/* Quote s for a POSIX shell (single quotes); appended to sb. */
void sh_quote(struct strbuf *sb, const char *s);

/*
 * The host key a node offers now (forget-host): the handshake only, no
 * authentication, nothing checked against or written to known_hosts.
 * known_hosts_line (the caller frees it) records the key for the target's
 * host and port, in OpenSSH's format.
 */
struct transport_host_key {
	char type[32];	       /* "ssh-ed25519" */
	char fingerprint[128]; /* "SHA256:..." as ssh-keygen -l prints it */
	char *known_hosts_line;
};
int transport_host_key_scan(const struct transport_target *target, struct transport_host_key *out,
			    struct error *err);

/*
 * Whether one known_hosts line is an entry for host:port (plain, bracketed
 * or hashed names, as OpenSSH matches them); 1 with its key type and
 * fingerprint, 0 when it is not (or is not an entry at all).
 */
int transport_known_hosts_match(const char *host, int port, const char *line, char *type,
				size_t type_len, char *fingerprint, size_t fp_len);

/*
 * Pure helpers of transport_ssh.c, in transport.c so that unit tests reach
 * them without a network.  Not for other modules.
 */

/* SHA-256: sha256.h. */

/*
 * get_file over a transport's exec: the node runs `sha256sum`, `wc -c` and
 * `base64 -w 76` of the file; every line is checked (64 hex digits, a
 * number within max, lines of at most 76 base64 characters) and the bytes
 * against the node's hash and size.
 */
int transport_get_file_exec(struct transport *t,
			    int (*exec)(struct transport *t, const struct transport_exec *req,
					struct transport_result *res, struct error *err),
			    const char *path, uint64_t max,
			    int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
			    char sha_hex[65], uint64_t *size, int timeout_ms, struct error *err);

/*
 * The fingerprint OpenSSH shows for a public key ("SHA256:" and 43 base64
 * digits), from the key's base64 blob as in a .pub or known_hosts line.
 * 0, or -1 when b64 is not base64.
 */
#define TRANSPORT_FINGERPRINT_LEN 50
int transport_key_fingerprint(char out[TRANSPORT_FINGERPRINT_LEN + 1], const char *b64);

#define TRANSPORT_TOKEN_LEN 32
/* Fill token with TRANSPORT_TOKEN_LEN random hex digits and a NUL. */
void transport_make_token(char token[TRANSPORT_TOKEN_LEN + 1]);

/*
 * Commands longer than this go as "cLEN" bytes, which the agent reads with
 * one `head -c` (an exec, ~1 ms), instead of as lines, which its `read`
 * takes one read(2) per byte (~0.5 us each: 14 KB of roles/lib.sh cost
 * ~7 ms).
 */
#define TRANSPORT_AGENT_LONG_COMMAND 1024

/* Append one agent request (see "Agent protocol" above) to out. */
void transport_agent_request(struct strbuf *out, const char *token, const char *command,
			     const void *input, size_t input_len, bool own_shell);

enum transport_priv {
	TRANSPORT_PRIV_NONE = 0,      /* commands run as the login user */
	TRANSPORT_PRIV_SUDO,	      /* sudo -n: passwordless */
	TRANSPORT_PRIV_SUDO_PASSWORD, /* sudo -S -p '': password first on stdin */
};

/* Which privilege wrapper a target needs (user "root" needs none on AUTO). */
enum transport_priv transport_priv_for(const struct transport_target *target);

/*
 * The channel command that starts the agent script: a one-line bootstrap,
 * under the wrapper of priv, reading the script from stdin between
 * ".provision-begin-TOKEN" and ".provision-end".  args (may be NULL) are
 * appended as the script's positional parameters, each quoted.
 */
void transport_agent_command(struct strbuf *out, enum transport_priv priv, const char *token,
			     const char *const *args, size_t nargs);

/*
 * What to write first on the stdin of a channel started by
 * transport_agent_command() or transport_channel_command(): the sudo
 * password line (when priv says so) and the begin marker.  Fails (-1) when
 * the password contains a newline.
 */
int transport_stdin_preamble(struct strbuf *out, enum transport_priv priv, const char *password,
			     const char *token);

/*
 * The fallback: one channel per command.  The command runs as
 * `/bin/sh -c COMMAND` with PROVISION_CMD=TOKEN in its environment (so the
 * kill mode of the agent script can find it), under the wrapper of priv.
 * With a privilege wrapper, the stdin preamble precedes the input.
 */
void transport_channel_command(struct strbuf *out, enum transport_priv priv, const char *token,
			       const char *command);

/*
 * Parse "[user@]host[:port]" (host may be "[v6]").  *user is NULL when
 * absent, *port 0.  The caller frees *user and *host.  -1 when malformed.
 */
int transport_parse_jump(const char *spec, char **user, char **host, int *port);

/*
 * One output stream of one command: splits bytes into lines for on_line
 * and, when token is set, finds the end frame "\nTOKEN STATUS\n".  Lines
 * longer than TRANSPORT_LINE_MAX are delivered in pieces (flags
 * TRANSPORT_LINE_CONT, _MORE); a line of exactly TRANSPORT_LINE_MAX bytes is
 * one piece.  Without a token
 * (channel mode) the stream ends with transport_frame_finish().
 */
#define TRANSPORT_LINE_MAX 65536
struct transport_frame {
	enum transport_stream stream;
	char token[TRANSPORT_TOKEN_LEN + 1]; /* empty: no end frame */
	transport_line_fn on_line;
	void *ctx;
	struct strbuf line; /* the line being received */
	bool split;	    /* part of this line was already delivered */
	/* After a newline, bytes that may be the end frame ("TOKEN STATUS"). */
	bool holding;
	bool hold_empty; /* the held newline ended an empty line */
	char hold[TRANSPORT_TOKEN_LEN + 8];
	size_t hold_len;
	int status; /* from the end frame; -1 until done */
	bool done;
	uint64_t bytes; /* payload bytes seen */
};

void transport_frame_init(struct transport_frame *f, enum transport_stream stream,
			  const char *token, transport_line_fn on_line, void *ctx);
/*
 * Feed len bytes.  Returns how many were used: all of them, or fewer when
 * the end frame ended inside data (the rest is not this command's).
 */
size_t transport_frame_feed(struct transport_frame *f, const char *data, size_t len);
/* End of stream: deliver a last line without newline, if any. */
void transport_frame_finish(struct transport_frame *f);
void transport_frame_release(struct transport_frame *f);

#endif
