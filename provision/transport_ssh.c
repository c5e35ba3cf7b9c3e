/*
 * transport_ssh: the libssh implementation of the transport ops; the only
 * file that includes libssh headers.  The theory of operation and the
 * agent protocol are described in transport.h.
 *
 * Every libssh error is turned into a struct error here, right where it
 * happens, on the thread that owns the session.  A struct transport and
 * its session belong to one thread; the only other thread is the pump of a
 * jump host, which alone touches the jump session.
 */
#include "transport.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>

extern const char transport_agent_script[];
extern const size_t transport_agent_script_len;

#define DEFAULT_CONNECT_TIMEOUT_MS 30000
#define POLL_MS			   100	 /* cancellation is polled this often */
#define KILL_GRACE_MS		   10000 /* after a kill, how long the agent may take to report */
#define CAPTURE_MAX		   (64 * 1024) /* output kept for error messages */
#define SFTP_CHUNK		   32768

struct jump {
	ssh_session session;
	ssh_channel channel;
	int fd; /* our end of the socketpair; the target session has the other */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	atomic_bool lost;
	char *label;
};

/* One command in flight. */
struct run {
	struct transport_frame out, err;
	bool eof, closed;
	bool got_status;
	int status;
};

struct transport {
	char *name, *host, *user, *label, *known_hosts, *identity, *passphrase;
	int port;
	enum transport_host_keys host_keys;
	enum transport_priv priv;
	char *sudo_password;
	bool sudo_wants_password; /* the last sudo -n said "a password is required" */
	int timeout_ms;
	int keepalive_s;
	bool nodelay_off;

	ssh_session session;
	ssh_event event;
	int tcp_fd; /* the TCP socket of the session, -1 behind a jump host */
	struct jump *jump;
	uint64_t last_io_ms;

	/* The agent channel; NULL in channel mode or after the agent died. */
	ssh_channel agent;
	struct ssh_channel_callbacks_struct agent_cb;
	bool agent_eof, agent_closed;
	bool agent_broken; /* it could not start: do not try again */
	struct run *run;   /* the command the agent is running */
	bool hello_phase;
	struct strbuf hello_out, hello_err;
	long agent_pid;

	sftp_session sftp;
	char *sftp_home;

	const char *mode;
	bool is_root;
	uint64_t connect_us, agent_us;
	unsigned commands, files_sent, files_skipped;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* accept-new appends to a known_hosts file several workers may share. */
static pthread_mutex_t known_hosts_lock = PTHREAD_MUTEX_INITIALIZER;

static void init_libssh(void)
{
	ssh_init();
}

int transport_identity_encrypted(const char *path)
{
	ssh_key key = NULL;
	int r;

	transport_global_init();
	if (access(path, R_OK) < 0)
		return -1;
	r = ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) == SSH_OK ? 0 : 1;
	ssh_key_free(key);
	return r;
}

void transport_global_init(void)
{
	pthread_once(&init_once, init_libssh);
}

static char *host_port(const char *host, int port)
{
	if (port == 22)
		return xstrdup(host);
	return strchr(host, ':') ? xasprintf("[%s]:%d", host, port)
				 : xasprintf("%s:%d", host, port);
}

/* The first line of s, at most 200 bytes, for messages. */
static char *first_line(const char *s)
{
	size_t n = strcspn(s, "\n");
	return xstrndup(s, n > 200 ? 200 : n);
}

/* TCP */

static void set_keepalive(int fd, int keepalive_s)
{
	int one = 1, idle = keepalive_s, cnt = 3;
	unsigned user_timeout = (unsigned)keepalive_s * 4 * 1000;

	if (keepalive_s <= 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	/* Unacknowledged data (a vanished peer) fails as fast as idle probes. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

/*
 * sshd leaves Nagle on for sessions without a terminal: when it answers
 * with two segments, the second waits for our ACK, which Linux may delay
 * up to 40 ms.  Asking for an immediate ACK before each of our waits
 * (with channel setup driven through pump(), see channel_start()) saves
 * one such stall when the agent starts: measured 10-30 ms instead of ~60.
 */
static void quickack(int fd)
{
	int one = 1;

	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

static int tcp_connect(int *out, const char *host, int port, int timeout_ms, bool nodelay,
		       int keepalive_s, struct error *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	char portstr[16], *label = host_port(host, port);
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	int fd = -1, rc, last_errno = 0, gai;
	bool timed_out = false;

	*out = -1;
	snprintf(portstr, sizeof(portstr), "%d", port);
	gai = getaddrinfo(host, portstr, &hints, &res);
	if (gai) {
		rc = error_set(err,
			       gai == EAI_SYSTEM ? TRANSPORT_ERR_GENERIC : TRANSPORT_ERR_RESOLVE,
			       "cannot resolve '%s': %s", host,
			       gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
		error_hint(err, "check the node's address in the inventory and the DNS");
		goto out;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct pollfd p;
		int left = (int)(deadline - now_ms()), soerr = 0;
		socklen_t slen = sizeof(soerr);

		if (left <= 0) {
			timed_out = true;
			break;
		}
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last_errno = errno;
			goto next;
		}
		p = (struct pollfd){.fd = fd, .events = POLLOUT};
		do
			rc = poll(&p, 1, left);
		while (rc < 0 && errno == EINTR);
		if (rc == 0) {
			timed_out = true;
			goto next;
		}
		if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) < 0) {
			last_errno = errno;
			goto next;
		}
		if (soerr) {
			last_errno = soerr;
			goto next;
		}
		break;
	next:
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		if (timed_out && last_errno != ECONNREFUSED) {
			rc = error_set(err, TRANSPORT_ERR_TIMEOUT,
				       "connection to '%s' timed out after %d ms", label,
				       timeout_ms);
			error_hint(err, "is the node up and reachable, and port %d open?", port);
		} else if (last_errno == ECONNREFUSED) {
			rc = error_set(err, TRANSPORT_ERR_REFUSED, "connection to '%s' refused",
				       label);
			error_hint(err, "is sshd running on the node and listening on port %d?",
				   port);
		} else {
			rc = error_set(err, TRANSPORT_ERR_GENERIC, "cannot connect to '%s': %s",
				       label, strerror(last_errno ? last_errno : EHOSTUNREACH));
		}
		goto out;
	}
	if (nodelay) {
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	set_keepalive(fd, keepalive_s);
	*out = fd;
	rc = 0;
out:
	if (res)
		freeaddrinfo(res);
	free(label);
	return rc;
}

/* Host keys */

static int verify_host_key(ssh_session s, const char *label, const char *host, int port,
			   const char *known_hosts, enum transport_host_keys policy,
			   struct error *err)
{
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *fp = NULL, *spec = port == 22 ? xstrdup(host) : xasprintf("[%s]:%d", host, port);
	const char *file = known_hosts ? known_hosts : "~/.ssh/known_hosts", *type;
	enum ssh_known_hosts_e state;
	int rc;

	if (ssh_get_server_publickey(s, &key) < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "no host key from '%s': %s", label,
			       ssh_get_error(s));
		goto out;
	}
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "cannot hash the host key of '%s'",
			       label);
		goto out;
	}
	fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
	type = ssh_key_type_to_char(ssh_key_type(key));
	if (!type)
		type = "unknown";
	state = ssh_session_is_known_server(s);
	switch (state) {
	case SSH_KNOWN_HOSTS_OK:
		rc = 0;
		break;
	case SSH_KNOWN_HOSTS_CHANGED:
	case SSH_KNOWN_HOSTS_OTHER:
		rc = error_set(
		    err, TRANSPORT_ERR_HOSTKEY,
		    "host key of '%s' has CHANGED: the server offers %s %s, which does not "
		    "match '%s'",
		    label, type, fp ? fp : "?", file);
		error_hint(
		    err,
		    "someone may be intercepting the connection; if the node was reinstalled, "
		    "check the new fingerprint, then: ssh-keygen -R '%s' -f '%s'",
		    spec, file);
		break;
	case SSH_KNOWN_HOSTS_NOT_FOUND:
	case SSH_KNOWN_HOSTS_UNKNOWN:
		if (policy == TRANSPORT_HOST_KEYS_ACCEPT_NEW) {
			pthread_mutex_lock(&known_hosts_lock);
			rc = ssh_session_update_known_hosts(s);
			pthread_mutex_unlock(&known_hosts_lock);
			if (rc != SSH_OK)
				rc = error_set(err, TRANSPORT_ERR_HOSTKEY,
					       "cannot record the host key of '%s' in '%s': %s",
					       label, file, ssh_get_error(s));
			break;
		}
		rc = error_set(err, TRANSPORT_ERR_HOSTKEY,
			       "host key of '%s' is unknown: %s %s is not in '%s'", label, type,
			       fp ? fp : "?", file);
		if (port == 22)
			error_hint(
			    err,
			    "check the fingerprint on the node, then: ssh-keyscan %s >> '%s' "
			    "(or set host_keys: accept-new)",
			    host, file);
		else
			error_hint(
			    err,
			    "check the fingerprint on the node, then: ssh-keyscan -p %d %s >> "
			    "'%s' (or set host_keys: accept-new)",
			    port, host, file);
		break;
	case SSH_KNOWN_HOSTS_ERROR:
	default:
		rc = error_set(err, TRANSPORT_ERR_HOSTKEY,
			       "cannot check the host key of '%s' in '%s': %s", label, file,
			       ssh_get_error(s));
		break;
	}
out:
	ssh_string_free_char(fp);
	ssh_clean_pubkey_hash(&hash);
	ssh_key_free(key);
	free(spec);
	return rc;
}

/* Authentication */

static void add_methods(struct strbuf *sb, int methods)
{
	static const struct {
		int bit;
		const char *name;
	} names[] = {
	    {SSH_AUTH_METHOD_PUBLICKEY, "publickey"},
	    {SSH_AUTH_METHOD_PASSWORD, "password"},
	    {SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive"},
	    {SSH_AUTH_METHOD_HOSTBASED, "hostbased"},
	    {SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic"},
	};
	size_t i, n = 0;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (methods & names[i].bit)
			strbuf_addf(sb, "%s%s", n++ ? "," : "", names[i].name);
	if (!n)
		strbuf_addstr(sb, "none");
}

static void tried(struct strbuf *sb, const char *what)
{
	strbuf_addstr(sb, sb->len ? ", " : "");
	strbuf_addstr(sb, what);
}

static int authenticate(ssh_session s, const char *label, const char *identity,
			const char *passphrase, struct error *err)
{
	struct strbuf why = STRBUF_INIT, offered = STRBUF_INIT;
	char *user = NULL, *what = NULL;
	ssh_key key = NULL;
	int rc, methods;

	if (ssh_options_get(s, SSH_OPTIONS_USER, &user) < 0)
		user = NULL;
	rc = ssh_userauth_none(s, NULL);
	if (rc == SSH_AUTH_SUCCESS)
		goto ok;
	if (rc == SSH_AUTH_ERROR)
		goto lost;
	methods = ssh_userauth_list(s, NULL);
	add_methods(&offered, methods);
	if (!(methods & SSH_AUTH_METHOD_PUBLICKEY)) {
		rc = error_set(err, TRANSPORT_ERR_AUTH,
			       "'%s' does not accept public keys for '%s' (it offers: %s)", label,
			       user ? user : "?", offered.buf);
		error_hint(err, "provision logs in with keys only; enable PubkeyAuthentication");
		goto out;
	}
	if (identity) {
		if (access(identity, R_OK) < 0) {
			what = xasprintf("identity '%s' (%s)", identity, strerror(errno));
			tried(&why, what);
		} else if (ssh_pki_import_privkey_file(identity, passphrase, NULL, NULL, &key) !=
			   SSH_OK) {
			what = xasprintf("identity '%s' (%s)", identity,
					 passphrase ? "wrong passphrase or unsupported format"
						    : "encrypted: no passphrase given");
			tried(&why, what);
		} else {
			rc = ssh_userauth_publickey(s, NULL, key);
			if (rc == SSH_AUTH_SUCCESS)
				goto ok;
			if (rc == SSH_AUTH_ERROR)
				goto lost;
			what = xasprintf("identity '%s'%s", identity,
					 rc == SSH_AUTH_PARTIAL ? " (more methods required)" : "");
			tried(&why, what);
		}
		free(what);
		what = NULL;
	}
	if (getenv("SSH_AUTH_SOCK")) {
		rc = ssh_userauth_agent(s, NULL);
		if (rc == SSH_AUTH_SUCCESS)
			goto ok;
		if (rc == SSH_AUTH_ERROR && !ssh_is_connected(s))
			goto lost;
		tried(&why, "ssh-agent keys");
	}
	/* The default keys only when no identity is configured: trying
	 * unrelated keys would be a surprise and costs MaxAuthTries. */
	if (!identity) {
		rc = ssh_userauth_publickey_auto(s, NULL, NULL);
		if (rc == SSH_AUTH_SUCCESS)
			goto ok;
		if (rc == SSH_AUTH_ERROR && !ssh_is_connected(s))
			goto lost;
		tried(&why, "default keys in ~/.ssh");
	}
	rc = error_set(err, TRANSPORT_ERR_AUTH,
		       "authentication as '%s' to '%s' failed: tried %s; server offers %s",
		       user ? user : "?", label, why.len ? why.buf : "nothing", offered.buf);
	error_hint(err, "is the public key in ~%s/.ssh/authorized_keys on the node?",
		   user ? user : "");
	goto out;
lost:
	rc = error_set(err, TRANSPORT_ERR_AUTH, "authentication to '%s' failed: %s", label,
		       ssh_get_error(s));
	goto out;
ok:
	rc = 0;
out:
	ssh_key_free(key);
	ssh_string_free_char(user);
	strbuf_release(&why);
	strbuf_release(&offered);
	return rc;
}

/* Session: options, handshake, host key, authentication on a connected fd. */
static int session_open(ssh_session *out, const char *label, const char *host, int port,
			const char *user, int fd, const struct transport *t, struct error *err)
{
	ssh_session s = ssh_new();
	long sec = t->timeout_ms / 1000, usec = (long)(t->timeout_ms % 1000) * 1000;
	int verbosity = SSH_LOG_NOLOG;
	bool no = false;
	uint64_t start;
	int rc;

	*out = NULL;
	if (!s) {
		close(fd);
		return error_set(err, TRANSPORT_ERR_GENERIC, "cannot create an ssh session");
	}
	/* Only the inventory decides: no ~/.ssh/config, no global known_hosts. */
	if (ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_HOST, host) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_PORT, &port) < 0 ||
	    (user && ssh_options_set(s, SSH_OPTIONS_USER, user) < 0) ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &sec) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usec) < 0 ||
	    (t->known_hosts && ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, t->known_hosts) < 0) ||
	    ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null") < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "bad ssh option for '%s': %s", label,
			       ssh_get_error(s));
		close(fd);
		goto fail;
	}
	/* From here on libssh owns fd and closes it. */
	if (ssh_options_set(s, SSH_OPTIONS_FD, &fd) < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "bad ssh socket for '%s': %s", label,
			       ssh_get_error(s));
		close(fd);
		goto fail;
	}
	start = now_ms();
	if (ssh_connect(s) != SSH_OK) {
		const char *e = ssh_get_error(s);
		bool slow = now_ms() - start + 50 >= (uint64_t)t->timeout_ms;
		if (slow || strstr(e, "imeout") || strstr(e, "imed out")) {
			rc = error_set(err, TRANSPORT_ERR_TIMEOUT,
				       "ssh handshake with '%s' timed out after %d ms", label,
				       t->timeout_ms);
			error_hint(err, "the port answers but no ssh server speaks: is sshd hung?");
		} else {
			rc = error_set(err, TRANSPORT_ERR_GENERIC,
				       "ssh handshake with '%s' failed: %s", label, e);
		}
		goto fail;
	}
	rc = verify_host_key(s, label, host, port, t->known_hosts, t->host_keys, err);
	if (rc < 0)
		goto fail;
	rc = authenticate(s, label, t->identity, t->passphrase, err);
	if (rc < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	ssh_disconnect(s);
	ssh_free(s);
	return rc;
}

/* Jump host: a pump thread between a socketpair and a direct-tcpip channel. */

static void *jump_pump(void *arg)
{
	struct jump *j = arg;
	char up[SFTP_CHUNK], down[SFTP_CHUNK];
	size_t up_len = 0, up_off = 0, down_len = 0, down_off = 0;
	int jfd = ssh_get_fd(j->session);
	bool ok = true;

	while (!atomic_load(&j->stop)) {
		bool progress = false;
		struct pollfd p[2];
		int n;

		if (!down_len) {
			n = ssh_channel_read_nonblocking(j->channel, down, sizeof(down), 0);
			if (n == SSH_ERROR) {
				ok = false;
				break;
			}
			if (n > 0) {
				down_len = (size_t)n, down_off = 0, progress = true;
			} else if (ssh_channel_is_eof(j->channel) ||
				   ssh_channel_is_closed(j->channel)) {
				ok = false;
				break;
			}
		}
		if (down_len) {
			/* MSG_NOSIGNAL: a closed peer must not SIGPIPE the process. */
			ssize_t w = send(j->fd, down + down_off, down_len - down_off, MSG_NOSIGNAL);
			if (w > 0) {
				down_off += (size_t)w, progress = true;
				if (down_off == down_len)
					down_len = 0;
			} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
				break;
			}
		}
		if (!up_len) {
			ssize_t r = read(j->fd, up, sizeof(up));
			if (r == 0)
				break; /* the target session closed its end */
			if (r > 0)
				up_len = (size_t)r, up_off = 0, progress = true;
			else if (errno != EAGAIN && errno != EINTR)
				break;
		}
		if (up_len) {
			uint32_t win = ssh_channel_window_size(j->channel);
			if (win) {
				size_t k = up_len - up_off < win ? up_len - up_off : win;
				n = ssh_channel_write(j->channel, up + up_off, (uint32_t)k);
				if (n == SSH_ERROR) {
					ok = false;
					break;
				}
				up_off += (size_t)n, progress = true;
				if (up_off == up_len)
					up_len = 0;
			}
		}
		if (progress)
			continue;
		p[0] = (struct pollfd){
		    .fd = j->fd,
		    .events = (short)((up_len ? 0 : POLLIN) | (down_len ? POLLOUT : 0))};
		p[1] = (struct pollfd){.fd = jfd, .events = POLLIN};
		quickack(jfd);
		(void)poll(p, 2, POLL_MS);
	}
	if (!ok)
		atomic_store(&j->lost, true);
	/* The target session sees end of file and reports the loss. */
	shutdown(j->fd, SHUT_RDWR);
	return NULL;
}

static void jump_close(struct jump *j)
{
	if (!j)
		return;
	if (j->started) {
		atomic_store(&j->stop, true);
		shutdown(j->fd, SHUT_RDWR);
		pthread_join(j->thread, NULL);
	}
	if (j->fd >= 0)
		close(j->fd);
	if (j->channel) {
		ssh_channel_close(j->channel);
		ssh_channel_free(j->channel);
	}
	if (j->session) {
		ssh_disconnect(j->session);
		ssh_free(j->session);
	}
	free(j->label);
	free(j);
}

static int jump_open(struct transport *t, const char *spec, int *inner_fd, struct error *err)
{
	struct jump *j = xcalloc(1, sizeof(*j));
	char *juser = NULL, *jhost = NULL;
	int jport = 0, fd = -1, sv[2], rc;

	*inner_fd = -1;
	j->fd = -1;
	if (transport_parse_jump(spec, &juser, &jhost, &jport) < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC,
			       "bad jump host '%s': expected [user@]host[:port]", spec);
		goto fail;
	}
	if (!jport)
		jport = 22;
	j->label = host_port(jhost, jport);
	rc = tcp_connect(&fd, jhost, jport, t->timeout_ms, !t->nodelay_off, t->keepalive_s, err);
	if (rc < 0)
		goto prefix;
	rc = session_open(&j->session, j->label, jhost, jport, juser ? juser : t->user, fd, t, err);
	if (rc < 0)
		goto prefix;
	j->channel = ssh_channel_new(j->session);
	if (!j->channel ||
	    ssh_channel_open_forward(j->channel, t->host, t->port, "127.0.0.1", 0) != SSH_OK) {
		const char *e = ssh_get_error(j->session);
		int code = strstr(e, "efused")	   ? TRANSPORT_ERR_REFUSED
			   : strstr(e, "imed out") ? TRANSPORT_ERR_TIMEOUT
						   : TRANSPORT_ERR_GENERIC;
		rc = error_set(err, code, "jump host '%s' cannot reach '%s': %s", j->label,
			       t->label, e);
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "socketpair: %s", strerror(errno));
		goto fail;
	}
	j->fd = sv[1];
	(void)fcntl(j->fd, F_SETFL, fcntl(j->fd, F_GETFL) | O_NONBLOCK);
	if (pthread_create(&j->thread, NULL, jump_pump, j)) {
		close(sv[0]);
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "cannot start the jump host thread");
		goto fail;
	}
	j->started = true;
	*inner_fd = sv[0];
	t->jump = j;
	free(juser);
	free(jhost);
	return 0;
prefix:
	/* Say which hop failed; keep the kind of failure. */
	{
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "jump host: %.490s", err->msg);
		memcpy(err->msg, msg, sizeof(msg));
	}
fail:
	free(juser);
	free(jhost);
	jump_close(j);
	return rc;
}

/* Waiting for the session */

static bool session_alive(struct transport *t)
{
	return ssh_is_connected(t->session) &&
	       !(ssh_get_status(t->session) & (SSH_CLOSED | SSH_CLOSED_ERROR));
}

static int lost(struct transport *t, const char *doing, struct error *err)
{
	const char *e = ssh_get_error(t->session);

	if (t->jump && atomic_load(&t->jump->lost))
		return error_set(err, TRANSPORT_ERR_LOST,
				 "connection to '%s' lost %s: jump host '%s' went away", t->label,
				 doing, t->jump->label);
	return error_set(err, TRANSPORT_ERR_LOST, "connection to '%s' lost %s%s%s", t->label, doing,
			 e && *e ? ": " : "", e ? e : "");
}

/* Process packets for up to ms; -1 when the session is gone. */
static int pump(struct transport *t, int ms)
{
	int rc;

	quickack(t->tcp_fd);
	rc = ssh_event_dopoll(t->event, ms);
	if (rc == SSH_ERROR || !session_alive(t))
		return -1;
	return 0;
}

static void keepalive(struct transport *t)
{
	uint64_t now = now_ms();

	if (t->keepalive_s > 0 && now - t->last_io_ms >= (uint64_t)t->keepalive_s * 1000) {
		(void)ssh_send_ignore(t->session, "");
		t->last_io_ms = now;
	}
}

static int channel_write_all(ssh_channel ch, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		uint32_t k = len > SFTP_CHUNK ? SFTP_CHUNK : (uint32_t)len;
		int n = ssh_channel_write(ch, p, k);
		if (n < 0)
			return -1;
		p += n, len -= (size_t)n;
	}
	return 0;
}

/*
 * Open a session channel and exec cmd on it, driving libssh nonblocking
 * through pump(), so that quickack() runs before every wait; inside
 * libssh's own blocking waits it cannot (see quickack()).
 */
static int channel_start(struct transport *t, ssh_channel ch, const char *cmd)
{
	uint64_t deadline = now_ms() + (uint64_t)t->timeout_ms;
	int rc;

	ssh_set_blocking(t->session, 0);
	while ((rc = ssh_channel_open_session(ch)) == SSH_AGAIN)
		if (now_ms() >= deadline || pump(t, POLL_MS) < 0)
			goto out;
	if (rc != SSH_OK)
		goto out;
	while ((rc = ssh_channel_request_exec(ch, cmd)) == SSH_AGAIN)
		if (now_ms() >= deadline || pump(t, POLL_MS) < 0)
			goto out;
out:
	ssh_set_blocking(t->session, 1);
	quickack(t->tcp_fd);
	return rc == SSH_OK ? 0 : -1;
}

/* Start the agent script on a new channel with positional args. */
static int script_channel(struct transport *t, ssh_channel *out, const char *const *args,
			  size_t nargs)
{
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT;
	char token[TRANSPORT_TOKEN_LEN + 1];
	ssh_channel ch = ssh_channel_new(t->session);
	int rc = -1;

	*out = NULL;
	transport_make_token(token);
	transport_agent_command(&cmd, t->priv, token, args, nargs);
	if (transport_stdin_preamble(&in, t->priv, t->sudo_password, token) < 0)
		goto out;
	strbuf_add(&in, transport_agent_script, transport_agent_script_len);
	strbuf_addstr(&in, "\n.provision-end\n");
	if (!ch || channel_start(t, ch, cmd.buf) < 0 || channel_write_all(ch, in.buf, in.len) < 0)
		goto out;
	*out = ch;
	ch = NULL;
	rc = 0;
out:
	if (ch)
		ssh_channel_free(ch);
	/* The password went through `in`: do not leave it in freed memory. */
	memset(in.buf, 0, in.len);
	strbuf_release(&in);
	strbuf_release(&cmd);
	return rc;
}

/*
 * Stop a command on the node: the kill mode of the agent script on a
 * second channel.  agent_pid 0: only processes carrying the token.
 */
static void remote_kill(struct transport *t, long agent_pid, const char *token)
{
	char pid[32];
	const char *args[] = {"kill", pid, token};
	ssh_channel ch = NULL;
	uint64_t deadline = now_ms() + KILL_GRACE_MS;
	char sink[1024];

	snprintf(pid, sizeof(pid), "%ld", agent_pid);
	if (script_channel(t, &ch, args, ARRAY_SIZE(args)) < 0) {
		if (ch)
			ssh_channel_free(ch);
		return;
	}
	ssh_channel_send_eof(ch);
	while (!ssh_channel_is_closed(ch) && !ssh_channel_is_eof(ch) && now_ms() < deadline) {
		if (pump(t, POLL_MS) < 0)
			break;
		while (ssh_channel_read_nonblocking(ch, sink, sizeof(sink), 0) > 0 ||
		       ssh_channel_read_nonblocking(ch, sink, sizeof(sink), 1) > 0)
			;
	}
	ssh_channel_close(ch);
	ssh_channel_free(ch);
}

/* The agent */

static int agent_data(ssh_session s, ssh_channel ch, void *data, uint32_t len, int is_stderr,
		      void *userdata)
{
	struct transport *t = userdata;

	t->last_io_ms = now_ms();
	if (t->run) {
		struct transport_frame *f = is_stderr ? &t->run->err : &t->run->out;
		/* Bytes after the end frame come from leftovers of the
		 * command (a background child still writing): dropped. */
		if (!f->done)
			transport_frame_feed(f, data, len);
	} else if (t->hello_phase) {
		struct strbuf *sb = is_stderr ? &t->hello_err : &t->hello_out;
		strbuf_add(sb, data, len);
	}
	return (int)len;
}

static void agent_eof(ssh_session s, ssh_channel ch, void *userdata)
{
	((struct transport *)userdata)->agent_eof = true;
}

static void agent_close(ssh_session s, ssh_channel ch, void *userdata)
{
	((struct transport *)userdata)->agent_closed = true;
}

static void agent_stop(struct transport *t)
{
	if (!t->agent)
		return;
	ssh_remove_channel_callbacks(t->agent, &t->agent_cb);
	if (!t->agent_closed && session_alive(t)) {
		ssh_channel_send_eof(t->agent);
		ssh_channel_close(t->agent);
	}
	ssh_channel_free(t->agent);
	t->agent = NULL;
	t->run = NULL;
}

/* Why sudo refused, from its stderr; NULL when it was not sudo. */
static int sudo_error(struct transport *t, const char *text, struct error *err)
{
	const char *user = t->user ? t->user : "the login user";
	char *line;
	int rc;

	t->sudo_wants_password = strstr(text, "password is required") != NULL;
	if (t->sudo_wants_password)
		rc = error_set(err, TRANSPORT_ERR_SUDO, "sudo on '%s' needs a password for '%s'",
			       t->label, user);
	else if (strstr(text, "incorrect password") || strstr(text, "Sorry, try again"))
		rc = error_set(err, TRANSPORT_ERR_SUDO,
			       "sudo on '%s' rejected the password for '%s'", t->label, user);
	else if (strstr(text, "sudoers") || strstr(text, "not allowed") ||
		 strstr(text, "may not run sudo"))
		rc = error_set(err, TRANSPORT_ERR_SUDO, "'%s' may not use sudo on '%s'", user,
			       t->label);
	else if (strstr(text, "sudo: not found") || strstr(text, "sudo: command not found"))
		rc = error_set(err, TRANSPORT_ERR_SUDO, "sudo is not installed on '%s'", t->label);
	else if (strstr(text, "sudo:")) {
		line = first_line(strstr(text, "sudo:"));
		rc = error_set(err, TRANSPORT_ERR_SUDO, "sudo on '%s' failed: %s", t->label, line);
		free(line);
	} else {
		return 0;
	}
	if (strstr(err->msg, "needs a password"))
		error_hint(err, "give the password (PROVISION_SUDO_PASSWORD or sudo_password_file) "
				"or allow NOPASSWD for this user");
	return rc;
}

/* 0: agent running; TRANSPORT_ERR_SUDO: fatal; other <0: use channel mode. */
static int agent_start(struct transport *t, struct error *err)
{
	const char *args[] = {"serve"};
	uint64_t start = now_us(), deadline = now_ms() + (uint64_t)t->timeout_ms;
	char *nl, *line = NULL, dir[256];
	unsigned version = 0, uid = 0;
	long pid = 0;
	int rc;

	strbuf_reset(&t->hello_out);
	strbuf_reset(&t->hello_err);
	t->hello_out.max = t->hello_err.max = CAPTURE_MAX;
	t->agent_eof = t->agent_closed = false;
	t->hello_phase = true;
	if (script_channel(t, &t->agent, args, ARRAY_SIZE(args)) < 0) {
		rc = session_alive(t) ? error_set(err, TRANSPORT_ERR_GENERIC,
						  "cannot start the agent on '%s': %s", t->label,
						  ssh_get_error(t->session))
				      : lost(t, "starting the agent", err);
		goto out;
	}
	memset(&t->agent_cb, 0, sizeof(t->agent_cb));
	t->agent_cb.userdata = t;
	t->agent_cb.channel_data_function = agent_data;
	t->agent_cb.channel_eof_function = agent_eof;
	t->agent_cb.channel_close_function = agent_close;
	ssh_callbacks_init(&t->agent_cb);
	ssh_set_channel_callbacks(t->agent, &t->agent_cb);
	/* Output that came before the callbacks were set. */
	{
		char buf[4096];
		int n;
		while ((n = ssh_channel_read_nonblocking(t->agent, buf, sizeof(buf), 0)) > 0)
			strbuf_add(&t->hello_out, buf, (size_t)n);
		while ((n = ssh_channel_read_nonblocking(t->agent, buf, sizeof(buf), 1)) > 0)
			strbuf_add(&t->hello_err, buf, (size_t)n);
	}
	for (;;) {
		/* Login scripts may print before us: look for our line. */
		char *p = strstr(t->hello_out.buf, "provision-agent ");
		if (p && (p == t->hello_out.buf || p[-1] == '\n') && (nl = strchr(p, '\n'))) {
			line = xstrndup(p, (size_t)(nl - p));
			break;
		}
		if (t->agent_eof || t->agent_closed || now_ms() >= deadline)
			break;
		if (pump(t, POLL_MS) < 0) {
			rc = lost(t, "starting the agent", err);
			goto out;
		}
	}
	if (!line ||
	    sscanf(line, "provision-agent %u %u %ld %255s", &version, &uid, &pid, dir) != 4 ||
	    version != 1) {
		rc = sudo_error(t, t->hello_err.buf, err);
		if (rc < 0)
			goto out;
		{
			char *why = first_line(t->hello_err.len ? t->hello_err.buf : "no answer");
			rc = error_set(err, TRANSPORT_ERR_GENERIC,
				       "the agent did not start on '%s': %s", t->label, why);
			free(why);
		}
		goto out;
	}
	t->agent_pid = pid;
	t->is_root = uid == 0;
	t->mode = "agent";
	t->agent_us = now_us() - start;
	rc = 0;
out:
	t->hello_phase = false;
	if (rc < 0)
		agent_stop(t);
	free(line);
	return rc;
}

/*
 * Wait until finished(), enforcing the command's timeout and polling its
 * cancellation; either kills the command (remote_kill) and waits for it to
 * report, at most KILL_GRACE_MS.
 */
static int run_wait(struct transport *t, const struct transport_exec *req, struct run *run,
		    bool (*finished)(struct transport *, struct run *), const char *token,
		    long kill_pid, bool *timed_out, struct error *err)
{
	uint64_t start = now_ms(),
		 deadline = req->timeout_ms > 0 ? start + (uint64_t)req->timeout_ms : 0;
	uint64_t kill_deadline = 0;
	int why = 0;

	*timed_out = false;
	while (!finished(t, run)) {
		uint64_t now = now_ms();
		int wait = POLL_MS;

		if (!why && deadline && now >= deadline) {
			why = TRANSPORT_ERR_CMD_TIMEOUT;
			*timed_out = true;
		} else if (!why && req->cancelled && req->cancelled(req->ctx)) {
			why = TRANSPORT_ERR_CANCELLED;
		}
		if (why && !kill_deadline) {
			remote_kill(t, kill_pid, token);
			kill_deadline = now_ms() + KILL_GRACE_MS;
			continue;
		}
		if (kill_deadline && now >= kill_deadline)
			return why == TRANSPORT_ERR_CMD_TIMEOUT
				   ? error_set(
					 err, why,
					 "command on '%s' timed out after %d ms and could not "
					 "be stopped",
					 t->label, req->timeout_ms)
				   : error_set(
					 err, why,
					 "command on '%s' was cancelled and could not be stopped",
					 t->label);
		if (deadline && !why && deadline - now < (uint64_t)wait)
			wait = (int)(deadline - now);
		if (pump(t, wait) < 0)
			return lost(t, "while running a command", err);
		keepalive(t);
	}
	if (why == TRANSPORT_ERR_CMD_TIMEOUT)
		return error_set(err, why, "command on '%s' timed out after %d ms", t->label,
				 req->timeout_ms);
	if (why)
		return error_set(err, why, "command on '%s' cancelled", t->label);
	return 0;
}

static bool agent_finished(struct transport *t, struct run *run)
{
	return (run->out.done && run->err.done) || t->agent_eof || t->agent_closed;
}

static int agent_exec(struct transport *t, const struct transport_exec *req,
		      struct transport_result *res, struct error *err)
{
	char token[TRANSPORT_TOKEN_LEN + 1];
	struct strbuf rq = STRBUF_INIT;
	struct run run = {0};
	uint64_t start = now_us();
	bool timed_out = false;
	int rc;

	transport_make_token(token);
	transport_frame_init(&run.out, TRANSPORT_STDOUT, token, req->on_line, req->ctx);
	transport_frame_init(&run.err, TRANSPORT_STDERR, token, req->on_line, req->ctx);
	transport_agent_request(&rq, token, req->command, req->input, req->input_len,
				req->own_shell);
	t->run = &run;
	if (channel_write_all(t->agent, rq.buf, rq.len) < 0) {
		rc = session_alive(t)
			 ? error_set(err, TRANSPORT_ERR_LOST,
				     "the agent on '%s' stopped reading commands", t->label)
			 : lost(t, "sending a command", err);
		agent_stop(t);
		goto out;
	}
	t->last_io_ms = now_ms();
	rc = run_wait(t, req, &run, agent_finished, token, t->agent_pid, &timed_out, err);
	res->timed_out = timed_out;
	res->duration_us = now_us() - start;
	if (run.out.done && run.err.done) {
		res->exit_status = run.out.status;
		t->commands++;
		goto out;
	}
	/* The agent is gone or stuck: the next command starts a new one. */
	if (rc == 0)
		rc = session_alive(t)
			 ? error_set(err, TRANSPORT_ERR_LOST,
				     "the agent on '%s' exited while running a command", t->label)
			 : lost(t, "while running a command", err);
	agent_stop(t);
out:
	t->run = NULL;
	transport_frame_release(&run.out);
	transport_frame_release(&run.err);
	strbuf_release(&rq);
	return rc;
}

/* Channel mode: one channel per command. */

static int chan_data(ssh_session s, ssh_channel ch, void *data, uint32_t len, int is_stderr,
		     void *userdata)
{
	struct run *run = userdata;

	transport_frame_feed(is_stderr ? &run->err : &run->out, data, len);
	return (int)len;
}

static void chan_eof(ssh_session s, ssh_channel ch, void *userdata)
{
	((struct run *)userdata)->eof = true;
}

static void chan_close(ssh_session s, ssh_channel ch, void *userdata)
{
	((struct run *)userdata)->closed = true;
}

static void chan_status(ssh_session s, ssh_channel ch, int status, void *userdata)
{
	struct run *run = userdata;

	run->got_status = true;
	run->status = status;
}

static int signal_number(const char *name)
{
	static const struct {
		const char *name;
		int num;
	} sigs[] = {
	    {"HUP", SIGHUP},   {"INT", SIGINT},	  {"QUIT", SIGQUIT}, {"ILL", SIGILL},
	    {"ABRT", SIGABRT}, {"FPE", SIGFPE},	  {"KILL", SIGKILL}, {"SEGV", SIGSEGV},
	    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
	    {"USR2", SIGUSR2}, {"BUS", SIGBUS},	  {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		if (!strcmp(sigs[i].name, name))
			return sigs[i].num;
	return 0;
}

static void chan_signal(ssh_session s, ssh_channel ch, const char *signal, int core,
			const char *errmsg, const char *lang, void *userdata)
{
	struct run *run = userdata;
	int n = signal_number(signal);

	run->got_status = true;
	run->status = n ? 128 + n : 255;
}

static bool chan_finished(struct transport *t, struct run *run)
{
	return run->closed || (run->eof && run->got_status);
}

static int channel_exec(struct transport *t, const struct transport_exec *req,
			struct transport_result *res, struct error *err)
{
	char token[TRANSPORT_TOKEN_LEN + 1];
	struct strbuf cmd = STRBUF_INIT, in = STRBUF_INIT;
	struct ssh_channel_callbacks_struct cb = {0};
	struct run run = {0};
	ssh_channel ch = NULL;
	uint64_t start = now_us();
	bool timed_out = false;
	int rc;

	transport_make_token(token);
	transport_frame_init(&run.out, TRANSPORT_STDOUT, NULL, req->on_line, req->ctx);
	transport_frame_init(&run.err, TRANSPORT_STDERR, NULL, req->on_line, req->ctx);
	transport_channel_command(&cmd, t->priv, token, req->command);
	if (t->priv == TRANSPORT_PRIV_SUDO_PASSWORD &&
	    transport_stdin_preamble(&in, t->priv, t->sudo_password, token) < 0) {
		rc = error_set(err, TRANSPORT_ERR_SUDO, "the sudo password contains a newline");
		goto out;
	}
	if (req->input)
		strbuf_add(&in, req->input, req->input_len);
	ch = ssh_channel_new(t->session);
	cb.userdata = &run;
	cb.channel_data_function = chan_data;
	cb.channel_eof_function = chan_eof;
	cb.channel_close_function = chan_close;
	cb.channel_exit_status_function = chan_status;
	cb.channel_exit_signal_function = chan_signal;
	ssh_callbacks_init(&cb);
	if (!ch || ssh_set_channel_callbacks(ch, &cb) != SSH_OK ||
	    channel_start(t, ch, cmd.buf) < 0 || channel_write_all(ch, in.buf, in.len) < 0 ||
	    ssh_channel_send_eof(ch) != SSH_OK) {
		rc = session_alive(t)
			 ? error_set(err, TRANSPORT_ERR_GENERIC, "cannot run a command on '%s': %s",
				     t->label, ssh_get_error(t->session))
			 : lost(t, "starting a command", err);
		goto out;
	}
	t->last_io_ms = now_ms();
	rc = run_wait(t, req, &run, chan_finished, token, 0, &timed_out, err);
	transport_frame_finish(&run.out);
	transport_frame_finish(&run.err);
	res->timed_out = timed_out;
	res->duration_us = now_us() - start;
	if (rc < 0)
		goto out;
	if (!run.got_status) {
		rc = session_alive(t)
			 ? error_set(err, TRANSPORT_ERR_LOST,
				     "command on '%s' ended without an exit status", t->label)
			 : lost(t, "while running a command", err);
		goto out;
	}
	res->exit_status = run.status;
	t->commands++;
out:
	if (ch) {
		ssh_remove_channel_callbacks(ch, &cb);
		if (!ssh_channel_is_closed(ch) && session_alive(t))
			ssh_channel_close(ch);
		ssh_channel_free(ch);
	}
	if (in.len)
		memset(in.buf, 0, in.len);
	strbuf_release(&in);
	strbuf_release(&cmd);
	transport_frame_release(&run.out);
	transport_frame_release(&run.err);
	return rc;
}

static int ssh_exec_fn(struct transport *t, const struct transport_exec *req,
		       struct transport_result *res, struct error *err)
{
	struct transport_result local;
	int rc;

	assert(req && req->command);
	if (!res)
		res = &local;
	*res = (struct transport_result){.exit_status = -1};
	if (!session_alive(t))
		return lost(t, "before the command", err);
	if (!t->agent && !t->agent_broken && !strcmp(t->mode, "agent")) {
		/* The last agent died with its command: start another. */
		rc = agent_start(t, err);
		if (rc == TRANSPORT_ERR_SUDO || !session_alive(t))
			return rc;
		if (rc < 0) {
			t->agent_broken = true;
			t->mode = "channel";
		}
	}
	if (t->agent)
		return agent_exec(t, req, res, err);
	return channel_exec(t, req, res, err);
}

/* Run a command and keep its output, for the transport's own use. */
struct capture {
	struct strbuf out, err;
};

static void capture_line(void *ctx, enum transport_stream stream, const char *line, size_t len,
			 unsigned flags)
{
	struct capture *c = ctx;
	struct strbuf *sb = stream == TRANSPORT_STDERR ? &c->err : &c->out;

	strbuf_add(sb, line, len);
	if (!(flags & TRANSPORT_LINE_MORE))
		strbuf_addch(sb, '\n');
}

static int exec_capture(struct transport *t, const char *command, struct capture *c, int *status,
			struct error *err)
{
	struct transport_exec req = {
	    .command = command,
	    .timeout_ms = t->timeout_ms * 4,
	    .on_line = capture_line,
	    .ctx = c,
	};
	struct transport_result res;
	int rc;

	strbuf_init(&c->out, 0);
	strbuf_init(&c->err, 0);
	c->out.max = c->err.max = CAPTURE_MAX;
	rc = ssh_exec_fn(t, &req, &res, err);
	*status = res.exit_status;
	return rc;
}

static void capture_release(struct capture *c)
{
	strbuf_release(&c->out);
	strbuf_release(&c->err);
}

/* Connect */

static void transport_free(struct transport *t)
{
	if (!t)
		return;
	if (t->sftp)
		sftp_free(t->sftp);
	agent_stop(t);
	if (t->event) {
		ssh_event_remove_session(t->event, t->session);
		ssh_event_free(t->event);
	}
	if (t->session) {
		ssh_disconnect(t->session);
		ssh_free(t->session);
	}
	jump_close(t->jump);
	if (t->sudo_password) {
		memset(t->sudo_password, 0, strlen(t->sudo_password));
		free(t->sudo_password);
	}
	if (t->passphrase) {
		memset(t->passphrase, 0, strlen(t->passphrase));
		free(t->passphrase);
	}
	strbuf_release(&t->hello_out);
	strbuf_release(&t->hello_err);
	free(t->sftp_home);
	free(t->name);
	free(t->host);
	free(t->user);
	free(t->label);
	free(t->known_hosts);
	free(t->identity);
	free(t);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Where and as whom: the fields of a target both connect() and the host key probe need. */
static void set_target(struct transport *t, const struct transport_target *target)
{
	t->host = xstrdup(target->host);
	t->port = target->port > 0 ? target->port : 22;
	t->name = xstrdup(target->name ? target->name : target->host);
	t->user = dup_or_null(target->user);
	t->label = host_port(t->host, t->port);
	t->known_hosts = target->known_hosts ? expand_home(target->known_hosts) : NULL;
	t->identity = target->identity ? expand_home(target->identity) : NULL;
	t->passphrase = dup_or_null(target->identity_passphrase);
	t->host_keys = target->host_keys;
	t->timeout_ms = target->connect_timeout_ms > 0 ? target->connect_timeout_ms
						       : DEFAULT_CONNECT_TIMEOUT_MS;
}

static int ssh_connect_fn(struct transport **out, const struct transport_target *target,
			  struct error *err)
{
	struct transport *t = xcalloc(1, sizeof(*t));
	uint64_t start = now_us();
	int fd = -1, rc, status = -1;

	*out = NULL;
	transport_global_init();
	set_target(t, target);
	t->priv = transport_priv_for(target);
	t->sudo_password = dup_or_null(target->sudo_password);
	t->keepalive_s = target->keepalive_s;
	t->nodelay_off = target->tcp_nodelay_off;
	t->tcp_fd = -1;
	t->mode = "agent";
	strbuf_init(&t->hello_out, 0);
	strbuf_init(&t->hello_err, 0);
	if (t->priv == TRANSPORT_PRIV_SUDO_PASSWORD && strchr(t->sudo_password, '\n')) {
		rc = error_set(err, TRANSPORT_ERR_SUDO, "the sudo password contains a newline");
		goto fail;
	}

	if (target->jump && *target->jump) {
		rc = jump_open(t, target->jump, &fd, err);
	} else {
		rc = tcp_connect(&fd, t->host, t->port, t->timeout_ms, !t->nodelay_off,
				 t->keepalive_s, err);
		t->tcp_fd = fd;
	}
	if (rc < 0)
		goto fail;
	rc = session_open(&t->session, t->label, t->host, t->port, t->user, fd, t, err);
	if (rc < 0)
		goto fail;
	t->event = ssh_event_new();
	if (!t->event || ssh_event_add_session(t->event, t->session) != SSH_OK) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "cannot watch the session of '%s'",
			       t->label);
		goto fail;
	}
	t->last_io_ms = now_ms();
	t->connect_us = now_us() - start;

	/*
	 * The sudo password only where it is needed: first `sudo -n`, which
	 * sends nothing; the password (on stdin, with sudo -S) only when the
	 * node's sudo answers that it needs one.  A node whose sudo works
	 * without it never receives it.  (A node that lies about needing it
	 * gets it: the password is the admin's to give to the nodes that ask.)
	 */
	if (t->priv == TRANSPORT_PRIV_SUDO_PASSWORD)
		t->priv = TRANSPORT_PRIV_SUDO;
	if (target->per_command_channels) {
		t->agent_broken = true;
	} else {
		rc = agent_start(t, err);
		if (rc == TRANSPORT_ERR_SUDO && t->sudo_wants_password && t->sudo_password &&
		    t->priv == TRANSPORT_PRIV_SUDO && session_alive(t)) {
			error_clear(err);
			t->priv = TRANSPORT_PRIV_SUDO_PASSWORD;
			rc = agent_start(t, err);
		}
		if (rc == TRANSPORT_ERR_SUDO || (rc < 0 && !session_alive(t)))
			goto fail;
		if (rc < 0)
			t->agent_broken = true;
	}
	if (!t->agent) {
		struct capture c;
		t->mode = "channel";
		rc = exec_capture(t, "id -u", &c, &status, err);
		if (rc == 0 && status != 0)
			rc = sudo_error(t, c.err.buf, err);
		if (rc == TRANSPORT_ERR_SUDO && t->sudo_wants_password && t->sudo_password &&
		    t->priv == TRANSPORT_PRIV_SUDO) {
			capture_release(&c);
			error_clear(err);
			t->priv = TRANSPORT_PRIV_SUDO_PASSWORD;
			rc = exec_capture(t, "id -u", &c, &status, err);
			if (rc == 0 && status != 0)
				rc = sudo_error(t, c.err.buf, err);
		}
		if (rc == 0 && status != 0) {
			char *why = first_line(c.err.buf);
			rc = error_set(err, TRANSPORT_ERR_GENERIC,
				       "cannot run commands on '%s': %s", t->label, why);
			free(why);
		}
		t->is_root = rc == 0 && !strcmp(c.out.buf, "0\n");
		capture_release(&c);
		if (rc < 0)
			goto fail;
	}
	t->connect_us = now_us() - start;
	*out = t;
	return 0;
fail:
	transport_free(t);
	return rc;
}

/*
 * transport_host_key_scan: the handshake only (through the jump host when
 * there is one), the key the server offers now, and the known_hosts line
 * that would record it.  Nothing is verified against known_hosts here and
 * nothing is authenticated: the caller shows the key and decides.
 */
int transport_host_key_scan(const struct transport_target *target, struct transport_host_key *out,
			    struct error *err)
{
	struct transport *t = xcalloc(1, sizeof(*t));
	ssh_key key = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *fp = NULL, *line = NULL;
	long sec;
	int verbosity = SSH_LOG_NOLOG, fd = -1, rc;
	bool no = false;
	const char *type;

	memset(out, 0, sizeof(*out));
	transport_global_init();
	set_target(t, target);
	t->tcp_fd = -1;
	strbuf_init(&t->hello_out, 0);
	strbuf_init(&t->hello_err, 0);
	sec = t->timeout_ms / 1000 ? t->timeout_ms / 1000 : 1;
	if (target->jump && *target->jump)
		rc = jump_open(t, target->jump, &fd, err);
	else
		rc = tcp_connect(&fd, t->host, t->port, t->timeout_ms, true, 0, err);
	if (rc < 0)
		goto out;
	t->session = ssh_new();
	if (!t->session) {
		close(fd);
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "cannot create an ssh session");
		goto out;
	}
	if (ssh_options_set(t->session, SSH_OPTIONS_PROCESS_CONFIG, &no) < 0 ||
	    ssh_options_set(t->session, SSH_OPTIONS_LOG_VERBOSITY, &verbosity) < 0 ||
	    ssh_options_set(t->session, SSH_OPTIONS_HOST, t->host) < 0 ||
	    ssh_options_set(t->session, SSH_OPTIONS_PORT, &t->port) < 0 ||
	    ssh_options_set(t->session, SSH_OPTIONS_TIMEOUT, &sec) < 0 ||
	    (t->known_hosts &&
	     ssh_options_set(t->session, SSH_OPTIONS_KNOWNHOSTS, t->known_hosts) < 0) ||
	    ssh_options_set(t->session, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null") < 0 ||
	    ssh_options_set(t->session, SSH_OPTIONS_FD, &fd) < 0) {
		close(fd);
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "bad ssh option for '%s': %s", t->label,
			       ssh_get_error(t->session));
		goto out;
	}
	if (ssh_connect(t->session) != SSH_OK) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "ssh handshake with '%s' failed: %s",
			       t->label, ssh_get_error(t->session));
		goto out;
	}
	if (ssh_get_server_publickey(t->session, &key) < 0 ||
	    ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) < 0 ||
	    !(fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen)) ||
	    ssh_session_export_known_hosts_entry(t->session, &line) != SSH_OK) {
		rc = error_set(err, TRANSPORT_ERR_GENERIC, "no usable host key from '%s': %s",
			       t->label, ssh_get_error(t->session));
		goto out;
	}
	type = ssh_key_type_to_char(ssh_key_type(key));
	snprintf(out->type, sizeof(out->type), "%s", type ? type : "unknown");
	snprintf(out->fingerprint, sizeof(out->fingerprint), "%s", fp);
	out->known_hosts_line = xstrdup(line);
	rc = 0;
out:
	ssh_string_free_char(fp);
	ssh_string_free_char(line);
	ssh_clean_pubkey_hash(&hash);
	ssh_key_free(key);
	transport_free(t);
	return rc;
}

int transport_known_hosts_match(const char *host, int port, const char *line, char *type,
				size_t type_len, char *fingerprint, size_t fp_len)
{
	struct ssh_knownhosts_entry *e = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	char *spec = port == 22 || port <= 0 ? xstrdup(host) : xasprintf("[%s]:%d", host, port);
	char *fp = NULL;
	const char *kt;
	int rc;

	transport_global_init();
	rc = ssh_known_hosts_parse_line(spec, line, &e);
	free(spec);
	if (rc != SSH_OK) {
		ssh_knownhosts_entry_free(e);
		return 0;
	}
	kt = e->publickey ? ssh_key_type_to_char(ssh_key_type(e->publickey)) : NULL;
	snprintf(type, type_len, "%s", kt ? kt : "unknown");
	if (e->publickey &&
	    ssh_get_publickey_hash(e->publickey, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) == 0)
		fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
	snprintf(fingerprint, fp_len, "%s", fp ? fp : "?");
	ssh_string_free_char(fp);
	ssh_clean_pubkey_hash(&hash);
	ssh_knownhosts_entry_free(e);
	return 1;
}

static void ssh_close_fn(struct transport *t)
{
	transport_free(t);
}

static void ssh_get_stats(struct transport *t, struct transport_stats *st)
{
	*st = (struct transport_stats){
	    .mode = t->mode,
	    .connect_us = t->connect_us,
	    .agent_us = t->agent_us,
	    .is_root = t->is_root,
	    .commands = t->commands,
	    .files_sent = t->files_sent,
	    .files_skipped = t->files_skipped,
	};
}

/* Files */

static int sftp_fail(struct transport *t, const char *what, const char *path, struct error *err)
{
	static const char *const why[] = {
	    "ok",
	    "end of file",
	    "no such file or directory",
	    "permission denied",
	    "failure",
	    "bad message",
	    "no connection",
	    "connection lost",
	    "unsupported operation",
	};
	int code = t->sftp ? sftp_get_error(t->sftp) : -1;

	if (!session_alive(t))
		return lost(t, "during a file upload", err);
	return error_set(err, TRANSPORT_ERR_IO, "cannot %s '%s' on '%s': %s", what, path, t->label,
			 code >= 0 && code < (int)ARRAY_SIZE(why) ? why[code]
								  : ssh_get_error(t->session));
}

static int sftp_ready(struct transport *t, struct error *err)
{
	char *home;

	if (t->sftp)
		return 0;
	t->sftp = sftp_new(t->session);
	if (!t->sftp || sftp_init(t->sftp) != SSH_OK) {
		int rc = session_alive(t)
			     ? error_set(err, TRANSPORT_ERR_IO, "sftp is not available on '%s': %s",
					 t->label, ssh_get_error(t->session))
			     : lost(t, "starting sftp", err);
		if (t->sftp)
			sftp_free(t->sftp);
		t->sftp = NULL;
		return rc;
	}
	home = sftp_canonicalize_path(t->sftp, ".");
	t->sftp_home = xstrdup(home ? home : "/tmp");
	ssh_string_free_char(home);
	return 0;
}

static int sftp_upload(struct transport *t, const char *path, const void *data, size_t len,
		       struct error *err)
{
	sftp_file f = sftp_open(t->sftp, path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	const char *p = data;
	int rc = 0;

	if (!f)
		return sftp_fail(t, "create", path, err);
	while (len) {
		size_t k = len > SFTP_CHUNK ? SFTP_CHUNK : len;
		ssize_t n = sftp_write(f, p, k);
		if (n <= 0) {
			rc = sftp_fail(t, "write", path, err);
			break;
		}
		p += n, len -= (size_t)n;
	}
	if (!rc && sftp_extension_supported(t->sftp, "fsync@openssh.com", "1") && sftp_fsync(f) < 0)
		rc = sftp_fail(t, "fsync", path, err);
	if (sftp_close(f) < 0 && !rc)
		rc = sftp_fail(t, "close", path, err);
	if (rc && session_alive(t))
		sftp_unlink(t->sftp, path);
	return rc;
}

static int ssh_put_file(struct transport *t, const char *path, const void *data, size_t len,
			unsigned mode, const char *owner, bool *skipped, struct error *err)
{
	struct strbuf cmd = STRBUF_INIT, want = STRBUF_INIT;
	struct capture c = {STRBUF_INIT, STRBUF_INIT};
	char hash[65], rnd[TRANSPORT_TOKEN_LEN + 1], *dir = NULL, *tmp = NULL, *upload = NULL;
	const char *base = strrchr(path, '/');
	int rc, status;

	*skipped = false;
	if (path[0] != '/' || !base[1])
		return error_set(err, TRANSPORT_ERR_IO,
				 "bad destination '%s': need an absolute file path", path);
	if (!owner && t->is_root)
		owner = "root:root";
	transport_sha256_hex(hash, data, len);

	/* Same content, mode and owner already there: nothing to send. */
	strbuf_addstr(&cmd, "f=");
	sh_quote(&cmd, path);
	strbuf_addstr(&cmd,
		      "; [ -f \"$f\" ] || exit 3; sha256sum <\"$f\" && stat -c '%a %U:%G' \"$f\"");
	rc = exec_capture(t, cmd.buf, &c, &status, err);
	if (rc < 0)
		goto out;
	strbuf_addf(&want, "%s  -\n%o ", hash, mode & 07777);
	if (status == 0 && !strncmp(c.out.buf, want.buf, want.len) &&
	    (!owner || (!strncmp(c.out.buf + want.len, owner, strlen(owner)) &&
			c.out.buf[want.len + strlen(owner)] == '\n'))) {
		*skipped = true;
		t->files_skipped++;
		goto out;
	}

	rc = sftp_ready(t, err);
	if (rc < 0)
		goto out;
	dir = xstrndup(path, (size_t)(base - path));
	transport_make_token(rnd);
	rnd[12] = '\0';
	tmp = xasprintf("%s/.%s.provision-%s", dir, base + 1, rnd);
	/*
	 * SFTP runs as the login user.  When commands run as that user too,
	 * the temporary file is written beside the destination; under sudo it
	 * goes to the user's home and root copies it beside the destination.
	 * Either way the last step is a rename in the destination directory.
	 */
	upload = t->priv == TRANSPORT_PRIV_NONE
		     ? xstrdup(tmp)
		     : xasprintf("%s/.provision-upload-%s", t->sftp_home, rnd);
	rc = sftp_upload(t, upload, data, len, err);
	if (rc < 0)
		goto out;

	strbuf_reset(&cmd);
	strbuf_addstr(&cmd, "src=");
	sh_quote(&cmd, upload);
	strbuf_addstr(&cmd, "; tmp=");
	sh_quote(&cmd, tmp);
	strbuf_addstr(&cmd, "; dst=");
	sh_quote(&cmd, path);
	strbuf_addstr(&cmd,
		      "\nok=0; trap '[ $ok = 1 ] || rm -f \"$tmp\" \"$src\"' EXIT; set -e\n"
		      "if [ \"$src\" != \"$tmp\" ]; then (umask 077; cat \"$src\" >\"$tmp\"); "
		      "rm -f \"$src\"; sync \"$tmp\" 2>/dev/null || sync; fi\n");
	/*
	 * The upload sat in the login user's home: whoever holds that account
	 * could swap it (or plant a symlink) before root copied it.  What root
	 * installs is hashed again, after the copy.
	 */
	if (t->priv != TRANSPORT_PRIV_NONE)
		strbuf_addf(&cmd,
			    "[ \"$(sha256sum <\"$tmp\" | cut -d ' ' -f 1)\" = %s ] || "
			    "{ echo \"the upload of '$dst' changed before it was installed\" >&2; "
			    "exit 1; }\n",
			    hash);
	if (owner) {
		strbuf_addstr(&cmd, "chown ");
		sh_quote(&cmd, owner);
		strbuf_addstr(&cmd, " \"$tmp\"\n");
	}
	strbuf_addf(&cmd, "chmod %o \"$tmp\"\n", mode & 07777);
	strbuf_addstr(&cmd,
		      "if [ -d \"$dst\" ]; then echo \"'$dst' is a directory\" >&2; exit 1; fi\n"
		      "mv -f \"$tmp\" \"$dst\"; ok=1\n");
	capture_release(&c);
	rc = exec_capture(t, cmd.buf, &c, &status, err);
	if (rc < 0)
		goto out;
	if (status != 0) {
		char *why = first_line(c.err.len ? c.err.buf : "failed");
		rc = error_set(err, TRANSPORT_ERR_IO, "cannot install '%s' on '%s': %s", path,
			       t->label, why);
		free(why);
		goto out;
	}
	t->files_sent++;
out:
	capture_release(&c);
	strbuf_release(&cmd);
	strbuf_release(&want);
	free(dir);
	free(tmp);
	free(upload);
	return rc;
}

/*
 * The module's edge: an error may quote the node (sudo's or a login
 * script's words, the server's disconnect message in libssh's text), and
 * is cleaned here once (util.h error_make_safe), whoever prints it.
 */
static int ssh_connect_op(struct transport **out, const struct transport_target *target,
			  struct error *err)
{
	int rc = ssh_connect_fn(out, target, err);

	if (rc < 0)
		error_make_safe(err);
	return rc;
}

static int ssh_exec_op(struct transport *t, const struct transport_exec *req,
		       struct transport_result *res, struct error *err)
{
	int rc = ssh_exec_fn(t, req, res, err);

	if (rc < 0)
		error_make_safe(err);
	return rc;
}

static int ssh_put_op(struct transport *t, const char *path, const void *data, size_t len,
		      unsigned mode, const char *owner, bool *skipped, struct error *err)
{
	int rc = ssh_put_file(t, path, data, len, mode, owner, skipped, err);

	if (rc < 0)
		error_make_safe(err);
	return rc;
}

static int ssh_get_op(struct transport *t, const char *path, uint64_t max,
		      int (*on_data)(void *ctx, const void *data, size_t len), void *ctx,
		      char sha_hex[65], uint64_t *size, int timeout_ms, struct error *err)
{
	int rc = transport_get_file_exec(t, ssh_exec_fn, path, max, on_data, ctx, sha_hex, size,
					 timeout_ms, err);

	if (rc < 0)
		error_make_safe(err);
	return rc;
}

const struct transport_ops transport_ssh_ops = {
    .name = "ssh",
    .connect = ssh_connect_op,
    .exec = ssh_exec_op,
    .put_file = ssh_put_op,
    .get_file = ssh_get_op,
    .get_stats = ssh_get_stats,
    .close = ssh_close_fn,
};
