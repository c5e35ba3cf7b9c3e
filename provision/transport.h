/*
 * transport: how provision reaches one node.  An ops table, so the layers
 * above (runner, roles) never see libssh; transport_ssh.c is the real
 * implementation and the only file in the tree that includes libssh headers.
 *
 * Theory of operation (transport_ssh.c)
 * -------------------------------------
 * One SSH session per node, opened by connect() and kept for the whole run.
 * Measured here (libssh 0.10.6 -> OpenSSH 9.2): a channel per command costs
 * ~41 ms because sshd leaves Nagle on for non-terminal sessions; one remote
 * POSIX sh started once per node (the "agent", see transport_agent.sh.in),
 * fed commands on its stdin and answering each with framed writes, costs
 * ~0.4 ms for a builtin and ~2 ms for a forking command.  So exec() sends
 * commands to that agent; it streams stdout/stderr lines back as they come
 * and ends each command with a frame carrying its exit status.  When the
 * agent cannot start (no /bin/sh, a restricted shell), exec() falls back to
 * one channel per command; `mode` in struct transport_stats says which.
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

#include "util.h"

/* Error codes, negative; `struct error` carries the readable message. */
enum transport_err {
	TRANSPORT_ERR_GENERIC = -1,
	TRANSPORT_ERR_RESOLVE = -2,   /* DNS: the name does not resolve */
	TRANSPORT_ERR_REFUSED = -3,   /* connection refused */
	TRANSPORT_ERR_TIMEOUT = -4,   /* connect or handshake timed out */
	TRANSPORT_ERR_HOSTKEY = -5,   /* unknown or changed host key */
	TRANSPORT_ERR_AUTH = -6,      /* no accepted authentication */
	TRANSPORT_ERR_SUDO = -7,      /* sudo refused or needs a password we lack */
	TRANSPORT_ERR_CMD_TIMEOUT = -8, /* exec: the command outlived its timeout */
	TRANSPORT_ERR_LOST = -9,      /* the session died (network, sshd killed) */
	TRANSPORT_ERR_IO = -10,       /* put_file: local or remote I/O failure */
	TRANSPORT_ERR_CANCELLED = -11, /* exec: cancelled by the caller */
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
	const char *name;	 /* node name, for messages */
	const char *host;
	int port;
	const char *user;
	const char *identity;	 /* private key file or NULL (agent + defaults) */
	const char *known_hosts; /* file to verify (and, for ACCEPT_NEW, to append to) */
	enum transport_host_keys host_keys;
	enum transport_sudo sudo;
	const char *sudo_password; /* NULL: only passwordless sudo */
	const char *jump;	   /* "[user@]host[:port]" or NULL */
	int connect_timeout_ms;
	int keepalive_s;	   /* 0: off */
	bool per_command_channels; /* force the fallback (benchmarks, odd shells) */
};

enum transport_stream { TRANSPORT_STDOUT = 1, TRANSPORT_STDERR = 2 };

/*
 * Called once per complete output line (without the newline; a last line
 * without one is delivered at the end).  Lines longer than 64 KiB are
 * delivered in pieces.
 */
typedef void (*transport_line_fn)(void *ctx, enum transport_stream stream, const char *line,
				  size_t len);

struct transport_exec {
	const char *command; /* a POSIX sh command line, run by /bin/sh -c */
	const void *input;   /* bytes for the command's stdin, or NULL for none */
	size_t input_len;
	int timeout_ms;	     /* 0: none.  On expiry the command is killed. */
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
	const char *mode; /* "agent" or "channel" */
	uint64_t connect_us;
	bool is_root;	/* the commands run as root (directly or via sudo) */
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
	void (*get_stats)(struct transport *t, struct transport_stats *st);
	/* Close the session; accepts NULL. */
	void (*close)(struct transport *t);
};

extern const struct transport_ops transport_ssh_ops;

/* A readable name for a transport_err ("host key", "timeout", ...). */
const char *transport_err_kind(int code);

/* Quote s for a POSIX shell (single quotes); appended to sb. */
void sh_quote(struct strbuf *sb, const char *s);

#endif
