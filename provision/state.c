/* state: see state.h.  The only file that includes <git2.h>. */
#include "state.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "secrets.h"

#define ETA_MAX_RUNS 9
/* How far back the record is searched for the machine a node was (state_eta_machine). */
#define ETA_MACHINE_RUNS 64

struct state {
	char *dir;
	git_repository *repo;
	int lock_fd; /* -1: not locked */
	char *lock_path;
};

/* The one place libgit2's errors become ours. */
static int git_fail(struct error *err, int code, const char *what)
{
	const git_error *e = git_error_last();

	return error_set(err, code, "%s: %s", what, e && e->message ? e->message : "libgit2 error");
}

static const char gitignore[] = "# provision: files of the state folder that are never recorded\n"
				"/private/\n/lock\n/*.tmp\n";

int state_open(struct state **out, const char *dir, bool create, struct error *err)
{
	struct state *s;
	struct stat st;
	int rc;

	*out = NULL;
	git_libgit2_init();
	s = xcalloc(1, sizeof(*s));
	s->dir = xstrdup(dir);
	s->lock_fd = -1;
	s->lock_path = xasprintf("%s/lock", dir);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		if (!create) {
			error_set(err, STATE_ERR_EMPTY, "no state folder '%s'", dir);
			error_hint(
			    err,
			    "runs are recorded there by 'provision up'; --state DIR names another");
			goto fail;
		}
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			error_set(err, STATE_ERR, "cannot create the state folder '%s': %s", dir,
				  strerror(errno));
			goto fail;
		}
	}
	rc = git_repository_open_ext(&s->repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
	if (rc == GIT_ENOTFOUND && create) {
		git_repository_init_options o;
		git_repository_init_options_init(&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
		o.flags = GIT_REPOSITORY_INIT_MKPATH;
		o.initial_head = "main";
		rc = git_repository_init_ext(&s->repo, dir, &o);
		if (rc < 0) {
			git_fail(err, STATE_ERR, "cannot create the run history");
			goto fail;
		}
	} else if (rc == GIT_ENOTFOUND) {
		error_set(err, STATE_ERR_EMPTY, "'%s' has no run history yet", dir);
		goto fail;
	} else if (rc < 0) {
		git_fail(err, STATE_ERR, "cannot open the run history");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	state_free(s);
	return err ? err->code : STATE_ERR;
}

void state_free(struct state *s)
{
	if (!s)
		return;
	state_unlock(s);
	git_repository_free(s->repo);
	free(s->dir);
	free(s->lock_path);
	free(s);
	git_libgit2_shutdown();
}

const char *state_dir(const struct state *s)
{
	return s->dir;
}

/* ---- lock ---- */

static void copy_field(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void parse_lock(const char *text, struct state_lock_info *li)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (eq) {
			size_t kl = (size_t)(eq - p), vl = len - kl - 1;
			const char *v = eq + 1;
			if (kl == 3 && !strncmp(p, "pid", 3))
				li->pid = strtol(v, NULL, 10);
			else if (kl == 7 && !strncmp(p, "command", 7))
				copy_field(li->command, sizeof(li->command), v, vl);
			else if (kl == 4 && !strncmp(p, "host", 4))
				copy_field(li->host, sizeof(li->host), v, vl);
			else if (kl == 4 && !strncmp(p, "user", 4))
				copy_field(li->user, sizeof(li->user), v, vl);
			else if (kl == 7 && !strncmp(p, "started", 7))
				copy_field(li->started, sizeof(li->started), v, vl);
		}
		p += len + (nl ? 1 : 0);
	}
}

static void iso_time(char *buf, size_t size, time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S %z", &tm);
}

static const char *user_name(void)
{
	struct passwd *pw = getpwuid(getuid());
	const char *u = getenv("USER");

	return pw ? pw->pw_name : u ? u : "unknown";
}

int state_lock(struct state *s, const char *command, struct state_lock_info *prev,
	       struct error *err)
{
	char host[128] = "", started[40];
	struct strbuf text = STRBUF_INIT;
	int fd = -1, tries;

	memset(prev, 0, sizeof(*prev));
	gethostname(host, sizeof(host) - 1);
	for (tries = 0; tries < 10; tries++) {
		struct stat a, b;

		fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return error_set(err, STATE_ERR, "cannot open the lock '%s': %s",
					 s->lock_path, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno;
			strbuf_reset(&text);
			if (e == EWOULDBLOCK) {
				char buf[1024];
				ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
				buf[n > 0 ? n : 0] = '\0';
				parse_lock(buf, prev);
				prev->found = prev->alive = true;
				close(fd);
				error_set(
				    err, STATE_ERR_BUSY,
				    "another run is using the state folder '%s': provision %s, "
				    "pid %ld on %s, started %s",
				    s->dir, prev->command[0] ? prev->command : "?", prev->pid,
				    prev->host[0] ? prev->host : "?",
				    prev->started[0] ? prev->started : "?");
				error_hint(err, "wait for it to end, or stop it first (kill %ld)",
					   prev->pid);
				strbuf_release(&text);
				return STATE_ERR_BUSY;
			}
			close(fd);
			strbuf_release(&text);
			return error_set(err, STATE_ERR, "cannot lock '%s': %s", s->lock_path,
					 strerror(e));
		}
		/* The holder before us may have removed the file meanwhile: lock the one in place.
		 */
		if (fstat(fd, &a) == 0 && stat(s->lock_path, &b) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return error_set(err, STATE_ERR, "cannot lock '%s': it keeps changing",
				 s->lock_path);
	{
		char buf[1024];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		if (n > 0) {
			/* Left behind by a run that did not end: flock died with it, the file did
			 * not. */
			parse_lock(buf, prev);
			prev->found = true;
			prev->alive = prev->pid > 0 && !strcmp(prev->host, host) &&
				      (kill((pid_t)prev->pid, 0) == 0 || errno == EPERM);
		}
	}
	iso_time(started, sizeof(started), time(NULL));
	strbuf_addf(&text, "pid=%ld\ncommand=%s\nhost=%s\nuser=%s\nstarted=%s\n", (long)getpid(),
		    command, host, user_name(), started);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, text.buf, text.len, 0) != (ssize_t)text.len) {
		int e = errno;
		close(fd);
		strbuf_release(&text);
		return error_set(err, STATE_ERR, "cannot write the lock '%s': %s", s->lock_path,
				 strerror(e));
	}
	strbuf_release(&text);
	s->lock_fd = fd;
	return 0;
}

void state_unlock(struct state *s)
{
	if (!s || s->lock_fd < 0)
		return;
	/* Unlink while holding it: a waiter then finds a new file, not ours (see state_lock). */
	unlink(s->lock_path);
	close(s->lock_fd);
	s->lock_fd = -1;
}

/* ---- files ---- */

void state_files_add(struct state_files *f, const char *path, const void *data, size_t len)
{
	struct state_file *e = NULL;
	size_t i;

	for (i = 0; i < f->nr; i++)
		if (!strcmp(f->items[i].path, path))
			e = &f->items[i];
	if (e) {
		free(e->data);
	} else {
		ALLOC_GROW(f->items, f->nr + 1, f->alloc);
		e = &f->items[f->nr++];
		e->path = xstrdup(path);
	}
	e->data = xmalloc(len + 1);
	memcpy(e->data, data, len);
	e->data[len] = '\0';
	e->len = len;
}

void state_files_addf(struct state_files *f, const char *path, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	state_files_add(f, path, sb.buf, sb.len);
	strbuf_release(&sb);
}

void state_files_release(struct state_files *f)
{
	size_t i;

	for (i = 0; i < f->nr; i++) {
		free(f->items[i].path);
		free(f->items[i].data);
	}
	free(f->items);
	memset(f, 0, sizeof(*f));
}

/* ---- scrubbing ---- */

static bool key_is_secret(const char *k, size_t len)
{
	static const char *const ends[] = {
	    "client-key-data", "token",		 "password",	"passwd",     "secret",
	    "certificate-key", "certificateKey", "private-key", "privateKey", NULL};
	size_t i;

	for (i = 0; ends[i]; i++) {
		size_t el = strlen(ends[i]);
		if (len >= el && !strncasecmp(k + len - el, ends[i], el) &&
		    (len == el || !isalnum((unsigned char)k[len - el - 1]) ||
		     isupper((unsigned char)k[len - el])))
			return true;
	}
	return false;
}

/* The word after a command-line flag that carries a secret (kubeadm's join line). */
static size_t scrub_flags(struct strbuf *sb)
{
	static const char *const flags[] = {"--token", "--certificate-key", "--password", NULL};
	static const char mask[] = "[removed by provision]";
	size_t n = 0, i;

	for (i = 0; flags[i]; i++) {
		size_t fl = strlen(flags[i]), from = 0;
		char *hit;
		while (from < sb->len &&
		       (hit = memmem(sb->buf + from, sb->len - from, flags[i], fl))) {
			size_t at = (size_t)(hit - sb->buf) + fl, end;
			struct strbuf out = STRBUF_INIT;
			char before = hit > sb->buf ? hit[-1] : ' ';
			/* A flag starts a word ("-----token x" is not --token). */
			if (at >= sb->len || (sb->buf[at] != ' ' && sb->buf[at] != '=') ||
			    isalnum((unsigned char)before) || before == '-' || before == '_') {
				from = at;
				continue;
			}
			at++;
			while (at < sb->len && sb->buf[at] == ' ')
				at++;
			/*
			 * A placeholder, not a value: kubeadm's "--token <value withheld>"
			 * (--skip-token-print), the docs' "<token>".  No token starts
			 * with '<'; the whole "<...>" is kept as it is.
			 */
			if (at < sb->len && sb->buf[at] == '<') {
				const char *gt = memchr(sb->buf + at, '>', sb->len - at);
				const char *nl = memchr(sb->buf + at, '\n', sb->len - at);
				if (gt && (!nl || gt < nl)) {
					from = (size_t)(gt - sb->buf) + 1;
					continue;
				}
			}
			end = at;
			while (end < sb->len && !strchr(" \t\n\"'\\", sb->buf[end]))
				end++;
			/* Not a value: too short, a mask (ours: "[removed"), a variable, a flag. */
			if (end - at < 4 || !strncmp(sb->buf + at, SECRETS_MASK, end - at) ||
			    (end - at < sizeof(mask) && !strncmp(sb->buf + at, mask, end - at)) ||
			    sb->buf[at] == '$' || sb->buf[at] == '-') {
				/* From the word's start: a flag inside it still counts. */
				from = at;
				continue;
			}
			strbuf_add(&out, sb->buf, at);
			strbuf_addstr(&out, mask);
			from = out.len;
			strbuf_add(&out, sb->buf + end, sb->len - end);
			explicit_bzero(sb->buf, sb->len);
			strbuf_release(sb);
			*sb = out;
			n++;
		}
	}
	return n;
}

size_t state_scrub(struct strbuf *sb)
{
	static const char removed_key[] = "[private key removed by provision]";
	struct strbuf out = STRBUF_INIT;
	const char *p = sb->buf, *end = sb->buf + sb->len;
	size_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *q = p, *colon;

		/* A PEM private key block: drop it whole, up to its END line. */
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '"'))
			q++;
		if ((size_t)(eol - q) > 16 && !strncmp(q, "-----BEGIN ", 11) &&
		    memmem(q, (size_t)(eol - q), "PRIVATE KEY-----", 16)) {
			const char *stop = memmem(q, (size_t)(end - q), "-----END ", 9);
			const char *stop_nl =
			    stop ? memchr(stop, '\n', (size_t)(end - stop)) : NULL;
			strbuf_add(&out, p, (size_t)(q - p));
			strbuf_addstr(&out, removed_key);
			n++;
			if (!stop) {
				strbuf_addch(&out, '\n');
				break;
			}
			p = stop_nl ? stop_nl : end;
			continue;
		}
		/* `key: value` where the key names a secret (YAML, kubeconfig, logs). */
		colon = memchr(q, ':', (size_t)(eol - q));
		if (colon && colon > q) {
			const char *k = q, *v = colon + 1;
			size_t kl = (size_t)(colon - q);
			bool ok = true;
			size_t i;
			if (k[0] == '-' && kl > 1 && k[1] == ' ') {
				k += 2;
				kl -= 2;
			}
			for (i = 0; i < kl && ok; i++)
				ok = isalnum((unsigned char)k[i]) || strchr("_-.\"", k[i]);
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			if (kl && k[kl - 1] == '"')
				kl--;
			if (kl && k[0] == '"') {
				k++;
				kl--;
			}
			if (ok && kl && key_is_secret(k, kl) && (size_t)(eol - v) >= 4 &&
			    strncmp(v, SECRETS_MASK, strlen(SECRETS_MASK)) && *v != '|' &&
			    *v != '>' && *v != '{' && *v != '[') {
				strbuf_add(&out, p, (size_t)(v - p));
				strbuf_addstr(&out, "[removed by provision]");
				n++;
				p = eol;
				continue;
			}
		}
		strbuf_add(&out, p, (size_t)(eol - p));
		p = eol;
		if (nl) {
			strbuf_addch(&out, '\n');
			p = nl + 1;
		}
	}
	if (n) {
		explicit_bzero(sb->buf, sb->len);
		strbuf_release(sb);
		*sb = out;
	} else {
		strbuf_release(&out);
	}
	return n + scrub_flags(sb);
}

/* ---- commit ---- */

static bool safe_path(const char *path)
{
	const char *p = path;

	if (!*p || *p == '/')
		return false;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (!len || (len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)) ||
		    (len == 4 && !strncasecmp(p, ".git", 4)) ||
		    (p == path && len == 7 && !strncmp(p, "private", 7)) ||
		    (p == path && len == 4 && !strncmp(p, "lock", 4)))
			return false;
		p += len + (slash ? 1 : 0);
	}
	return true;
}

static int mkdirs_for(const char *path)
{
	char *copy = xstrdup(path), *p;
	int rc = 0;

	for (p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*p = '/';
	}
	free(copy);
	return rc;
}

static int write_atomic(const char *path, const char *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp", path);
	int fd, e = 0;

	if ((e = mkdirs_for(path)) < 0)
		goto out;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = -errno;
		goto out;
	}
	e = write_all(fd, data, len);
	if (close(fd) < 0 && !e)
		e = -errno;
	if (!e && rename(tmp, path) < 0)
		e = -errno;
	if (e)
		unlink(tmp);
out:
	free(tmp);
	return e;
}

static int head_commit(struct state *s, git_commit **out)
{
	git_reference *ref = NULL;
	git_object *obj = NULL;
	int rc;

	*out = NULL;
	rc = git_repository_head(&ref, s->repo);
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	rc = git_reference_peel(&obj, ref, GIT_OBJECT_COMMIT);
	git_reference_free(ref);
	if (rc < 0)
		return rc;
	*out = (git_commit *)obj;
	return 0;
}

int state_commit(struct state *s, const struct state_files *files, const char *message,
		 uint64_t when_ms, char id[41], struct error *err)
{
	git_index *idx = NULL;
	git_commit *parent = NULL;
	git_tree *tree = NULL, *ptree = NULL;
	git_signature *sig = NULL;
	git_oid tree_oid, oid;
	struct strbuf *blobs = xcalloc(files->nr + 1, sizeof(*blobs));
	char host[128] = "", *email = NULL;
	time_t t = (time_t)(when_ms / 1000);
	struct tm tm;
	size_t i;
	int ret = STATE_ERR;

	for (i = 0; i < files->nr; i++) {
		if (!safe_path(files->items[i].path)) {
			error_set(err, STATE_ERR, "refusing to record '%s' in the state folder",
				  files->items[i].path);
			goto out;
		}
	}
	if (git_repository_index(&idx, s->repo) < 0 || head_commit(s, &parent) < 0) {
		git_fail(err, STATE_ERR, "cannot read the run history");
		goto out;
	}
	if (parent) {
		if (git_commit_tree(&ptree, parent) < 0 || git_index_read_tree(idx, ptree) < 0) {
			git_fail(err, STATE_ERR, "cannot read the last run");
			goto out;
		}
	} else if (git_index_clear(idx) < 0) {
		git_fail(err, STATE_ERR, "cannot start the run history");
		goto out;
	}
	for (i = 0; i <= files->nr; i++) {
		git_index_entry e;
		const char *path = i < files->nr ? files->items[i].path : ".gitignore";

		strbuf_init(&blobs[i], 0);
		if (i < files->nr)
			strbuf_add(&blobs[i], files->items[i].data, files->items[i].len);
		else
			strbuf_addstr(&blobs[i], gitignore);
		state_scrub(&blobs[i]);
		memset(&e, 0, sizeof(e));
		e.mode = GIT_FILEMODE_BLOB;
		e.path = path;
		if (git_index_add_from_buffer(idx, &e, blobs[i].buf, blobs[i].len) < 0) {
			git_fail(err, STATE_ERR, "cannot record a file of the run");
			goto out;
		}
	}
	if (git_index_write_tree(&tree_oid, idx) < 0 ||
	    git_tree_lookup(&tree, s->repo, &tree_oid) < 0) {
		git_fail(err, STATE_ERR, "cannot record the run");
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	email = xasprintf("%s@%s", user_name(), host[0] ? host : "localhost");
	localtime_r(&t, &tm);
	if (git_signature_new(&sig, user_name(), email, (git_time_t)t, (int)(tm.tm_gmtoff / 60)) <
	    0) {
		git_fail(err, STATE_ERR, "cannot sign the run");
		goto out;
	}
	{
		const git_commit *parents[1] = {parent};
		if (git_commit_create(&oid, s->repo, "HEAD", sig, sig, NULL, message, tree,
				      parent ? 1 : 0, parents) < 0) {
			git_fail(err, STATE_ERR, "cannot commit the run");
			goto out;
		}
	}
	if (git_index_write(idx) < 0) {
		git_fail(err, STATE_ERR, "cannot write the index of the state folder");
		goto out;
	}
	/* The folder shows the last run: the same bytes as the commit. */
	for (i = 0; i <= files->nr; i++) {
		const char *rel = i < files->nr ? files->items[i].path : ".gitignore";
		char *path = xasprintf("%s/%s", s->dir, rel);
		int e = write_atomic(path, blobs[i].buf, blobs[i].len);
		if (e < 0) {
			error_set(err, STATE_ERR, "cannot write '%s': %s", path, strerror(-e));
			free(path);
			goto out;
		}
		free(path);
	}
	if (id)
		git_oid_tostr(id, 41, &oid);
	ret = 0;
out:
	for (i = 0; i <= files->nr; i++) {
		if (blobs[i].alloc)
			explicit_bzero(blobs[i].buf, blobs[i].len);
		strbuf_release(&blobs[i]);
	}
	free(blobs);
	free(email);
	git_signature_free(sig);
	git_tree_free(tree);
	git_tree_free(ptree);
	git_commit_free(parent);
	git_index_free(idx);
	return ret;
}

/* ---- reading ---- */

int state_runs(struct state *s, struct state_run **runs, size_t *nr, struct error *err)
{
	git_revwalk *walk = NULL;
	git_commit *head = NULL;
	struct state_run *v = NULL;
	size_t n = 0, alloc = 0, i;
	git_oid oid;
	int ret = STATE_ERR;

	*runs = NULL;
	*nr = 0;
	if (head_commit(s, &head) < 0) {
		git_fail(err, STATE_ERR, "cannot read the run history");
		goto out;
	}
	if (!head) {
		ret = error_set(err, STATE_ERR_EMPTY, "no run recorded in '%s' yet", s->dir);
		goto out;
	}
	if (git_revwalk_new(&walk, s->repo) < 0 ||
	    git_revwalk_push(walk, git_commit_id(head)) < 0 ||
	    git_revwalk_simplify_first_parent(walk) < 0) {
		git_fail(err, STATE_ERR, "cannot walk the run history");
		goto out;
	}
	while (git_revwalk_next(&oid, walk) == 0) {
		git_commit *c = NULL;
		const char *body;
		struct state_run *r;
		if (git_commit_lookup(&c, s->repo, &oid) < 0) {
			git_fail(err, STATE_ERR, "cannot read a run");
			goto out;
		}
		ALLOC_GROW(v, n + 1, alloc);
		r = &v[n++];
		memset(r, 0, sizeof(*r));
		git_oid_tostr(r->id, sizeof(r->id), &oid);
		r->time = (int64_t)git_commit_time(c);
		r->subject = xstrdup(git_commit_summary(c) ? git_commit_summary(c) : "");
		body = git_commit_body(c);
		r->body = xstrdup(body ? body : "");
		git_commit_free(c);
	}
	for (i = 0; i < n; i++)
		v[i].number = (unsigned)(n - i);
	*runs = v;
	*nr = n;
	v = NULL;
	n = 0;
	ret = 0;
out:
	state_runs_free(v, n);
	git_revwalk_free(walk);
	git_commit_free(head);
	return ret;
}

void state_runs_free(struct state_run *runs, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		free(runs[i].subject);
		free(runs[i].body);
	}
	free(runs);
}

int state_resolve(struct state *s, const char *spec, char id[41], struct error *err)
{
	struct state_run *runs = NULL;
	size_t nr = 0, i, len = strlen(spec), hits = 0;
	bool digits = len > 0, hex = len >= 4;
	int rc;

	if ((rc = state_runs(s, &runs, &nr, err)) < 0)
		return rc;
	for (i = 0; i < len; i++) {
		digits = digits && isdigit((unsigned char)spec[i]);
		hex = hex && isxdigit((unsigned char)spec[i]);
	}
	rc = STATE_ERR_NOTFOUND;
	if (spec[0] == '~' && len > 1 && strspn(spec + 1, "0123456789") == len - 1) {
		unsigned long k = strtoul(spec + 1, NULL, 10);
		if (k < nr) {
			memcpy(id, runs[k].id, 41);
			rc = 0;
		}
	} else if (digits && len < 9 && (!hex || strtoul(spec, NULL, 10) <= nr)) {
		unsigned long n = strtoul(spec, NULL, 10);
		if (n >= 1 && n <= nr) {
			memcpy(id, runs[nr - n].id, 41);
			rc = 0;
		}
	} else if (hex) {
		for (i = 0; i < nr; i++) {
			if (!strncasecmp(runs[i].id, spec, len)) {
				if (!hits++)
					memcpy(id, runs[i].id, 41);
			}
		}
		if (hits == 1)
			rc = 0;
		else if (hits > 1)
			rc = error_set(err, STATE_ERR_NOTFOUND, "run '%s' is ambiguous", spec);
	}
	if (rc == STATE_ERR_NOTFOUND && !hits) {
		error_set(err, STATE_ERR_NOTFOUND, "no run '%s' in '%s'", spec, s->dir);
		error_hint(err,
			   "give a number from 'provision history' (1 to %zu), ~K for K runs "
			   "before the last, or a commit id",
			   nr);
	}
	state_runs_free(runs, nr);
	return rc;
}

static int lookup_tree(struct state *s, const char *id, git_tree **tree, struct error *err)
{
	git_oid oid;
	git_commit *c = NULL;

	*tree = NULL;
	if (git_oid_fromstr(&oid, id) < 0)
		return error_set(err, STATE_ERR_NOTFOUND, "'%s' is not a run id", id);
	if (git_commit_lookup(&c, s->repo, &oid) < 0)
		return git_fail(err, STATE_ERR_NOTFOUND, "cannot read the run");
	if (git_commit_tree(tree, c) < 0) {
		git_commit_free(c);
		return git_fail(err, STATE_ERR, "cannot read the run's files");
	}
	git_commit_free(c);
	return 0;
}

int state_read(struct state *s, const char *id, const char *path, struct strbuf *out,
	       struct error *err)
{
	git_tree *tree = NULL;
	git_tree_entry *e = NULL;
	git_blob *blob = NULL;
	int rc;

	if ((rc = lookup_tree(s, id, &tree, err)) < 0)
		return rc;
	rc = git_tree_entry_bypath(&e, tree, path);
	if (rc == GIT_ENOTFOUND || (rc == 0 && git_tree_entry_type(e) != GIT_OBJECT_BLOB)) {
		rc = error_set(err, STATE_ERR_NOTFOUND, "the run has no '%s'", path);
		goto out;
	}
	if (rc < 0 || git_blob_lookup(&blob, s->repo, git_tree_entry_id(e)) < 0) {
		rc = git_fail(err, STATE_ERR, "cannot read a file of the run");
		goto out;
	}
	strbuf_add(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	rc = 0;
out:
	git_blob_free(blob);
	git_tree_entry_free(e);
	git_tree_free(tree);
	return rc;
}

struct list_ctx {
	const char *prefix;
	char **v;
	size_t n, alloc;
};

static int list_cb(const char *root, const git_tree_entry *entry, void *payload)
{
	struct list_ctx *lc = payload;
	char *path;

	if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB)
		return 0;
	path = xasprintf("%s%s", root, git_tree_entry_name(entry));
	if (strncmp(path, lc->prefix, strlen(lc->prefix))) {
		free(path);
		return 0;
	}
	ALLOC_GROW(lc->v, lc->n + 1, lc->alloc);
	lc->v[lc->n++] = path;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int state_list(struct state *s, const char *id, const char *prefix, char ***paths, size_t *nr,
	       struct error *err)
{
	struct list_ctx lc = {prefix, NULL, 0, 0};
	git_tree *tree = NULL;
	int rc;

	*paths = NULL;
	*nr = 0;
	if ((rc = lookup_tree(s, id, &tree, err)) < 0)
		return rc;
	if (git_tree_walk(tree, GIT_TREEWALK_PRE, list_cb, &lc) < 0) {
		git_tree_free(tree);
		return git_fail(err, STATE_ERR, "cannot list the run's files");
	}
	git_tree_free(tree);
	if (lc.n)
		qsort(lc.v, lc.n, sizeof(*lc.v), cmp_str);
	*paths = lc.v;
	*nr = lc.n;
	return 0;
}

int state_diff(struct state *s, const char *a, const char *b, state_diff_fn fn, void *ctx,
	       struct error *err)
{
	git_tree *ta = NULL, *tb = NULL;
	git_diff *diff = NULL;
	size_t i, n;
	int rc;

	if ((rc = lookup_tree(s, a, &ta, err)) < 0 || (rc = lookup_tree(s, b, &tb, err)) < 0)
		goto out;
	if (git_diff_tree_to_tree(&diff, s->repo, ta, tb, NULL) < 0) {
		rc = git_fail(err, STATE_ERR, "cannot compare the runs");
		goto out;
	}
	n = git_diff_num_deltas(diff);
	for (i = 0; i < n && rc == 0; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		enum state_change what = d->status == GIT_DELTA_ADDED	  ? STATE_ADDED
					 : d->status == GIT_DELTA_DELETED ? STATE_DELETED
									  : STATE_MODIFIED;
		rc = fn(ctx, what, what == STATE_DELETED ? d->old_file.path : d->new_file.path);
	}
out:
	git_diff_free(diff);
	git_tree_free(ta);
	git_tree_free(tb);
	return rc;
}

static int patch_line(const git_diff_delta *delta, const git_diff_hunk *hunk,
		      const git_diff_line *line, void *payload)
{
	struct strbuf *out = payload;

	switch (line->origin) {
	case GIT_DIFF_LINE_CONTEXT:
	case GIT_DIFF_LINE_ADDITION:
	case GIT_DIFF_LINE_DELETION:
		strbuf_addch(out, line->origin);
		strbuf_add(out, line->content, line->content_len);
		if (!line->content_len || line->content[line->content_len - 1] != '\n')
			strbuf_addch(out, '\n');
		break;
	case GIT_DIFF_LINE_HUNK_HDR:
		strbuf_add(out, line->content, line->content_len);
		break;
	case GIT_DIFF_LINE_CONTEXT_EOFNL:
	case GIT_DIFF_LINE_ADD_EOFNL:
	case GIT_DIFF_LINE_DEL_EOFNL:
		strbuf_addstr(out, "\\ No newline at end of file\n");
		break;
	default:
		break; /* file and binary headers: ours are written by the caller */
	}
	return 0;
}

int state_text_diff(const char *old, size_t old_len, const char *new_, size_t new_len,
		    const char *old_label, const char *new_label, struct strbuf *out,
		    struct error *err)
{
	git_patch *patch = NULL;
	git_diff_options o;
	int rc;

	git_libgit2_init();
	git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
	o.context_lines = 3;
	o.flags = GIT_DIFF_FORCE_TEXT;
	if (git_patch_from_buffers(&patch, old, old_len, old_label, new_, new_len, new_label, &o) <
	    0) {
		rc = git_fail(err, STATE_ERR, "cannot compare two texts");
		goto out;
	}
	if (git_patch_num_hunks(patch))
		strbuf_addf(out, "--- %s\n+++ %s\n", old_label, new_label);
	if (git_patch_print(patch, patch_line, out) < 0) {
		rc = git_fail(err, STATE_ERR, "cannot compare two texts");
		goto out;
	}
	rc = 0;
out:
	git_patch_free(patch);
	git_libgit2_shutdown();
	return rc;
}

/* ---- ETA ---- */

/*
 * Samples are keyed "SCOPE\tROLE\tSTEP\tCLASS": SCOPE is "n:NODE", "k:KIND"
 * or "*" (any node); CLASS is
 *   "k"  the step's first check: the whole step when it found nothing to do
 *        (unchanged, skipped), the check's share when it did work and the
 *        record says (timings' 5th field);
 *   "a"  the rest of a step that did work: apply and the check after it;
 *   "c"  the whole of a step that did work (changed, failed): for records
 *        that do not split check from apply;
 *   "*"  any.
 * A step is expected to do work (check + apply) when its node never ran,
 * when the last run did not leave it converged (it failed, or it did not
 * run), when it did work in the last two runs of the node (a step that
 * changes every time), or when an earlier step of its role is expected to
 * do work (what it depends on changes); else only its check runs.  So the
 * no-change run after a first run is estimated from the first run's check
 * times.  Collected as a flat list, then sorted and grouped: loading is
 * O(n log n) and a lookup is a binary search, whatever the number of nodes.
 */
struct eta_sample {
	char *key;
	int64_t ms;
};

struct eta_key {
	char *key;
	int64_t median;
};

struct eta_plan {
	char *node;
	int64_t
	    *expect; /* steps[i]'s duration as the run now expects it (state_eta_expect); -1 none */
	char **steps; /* "role\tstep" of the newest run that ran the node */
	char *last;   /* steps[i]'s result then: 'u' no work, 'c' changed, 'f' failed */
	bool *again;  /* steps[i] did work in the run of the node before that too */
	bool *work;   /* steps[i] is expected to do work (check + apply): eta_settle() */
	size_t nr, alloc;
	bool older;   /* the run before the newest was read */
};

/* What the time outside the nodes' steps was, in runs that did work and in runs that did not. */
struct eta_overhead {
	int64_t *ms;
	double *ratio; /* ms / the slowest node's steps */
	size_t nr, alloc;
};

struct state_eta {
	struct eta_sample *samples;
	size_t nr_samples, alloc_samples;
	struct eta_key *keys;
	size_t nr;
	struct eta_plan *plans;
	size_t nr_plans, alloc_plans;
	char **nodes, **kinds; /* the inventory's, sorted by node */
	char **machines;       /* nodes[i]'s machine-id in the newest run that ran it, or NULL */
	bool *met;             /* state_eta_machine was told nodes[i]'s machine (once counts) */
	size_t nr_nodes;
	struct eta_overhead overhead[2]; /* [0] runs that changed nothing, [1] the others */
	size_t runs;
	int64_t overhead_median[2];
	double overhead_ratio[2];
	/*
	 * The pulls (nodes/NODE/pulls): each image's bytes as last pulled, and
	 * bytes per millisecond of each pull step ("rate" samples of eta_sample,
	 * stored as bytes per second in ms), per node, kind and any.
	 */
	char **image_refs;
	uint64_t *image_bytes;
	size_t nr_images, alloc_images;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, size_t n)
{
	if (!n)
		return -1;
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median_d(double *v, size_t n)
{
	size_t i, j;

	if (!n)
		return -1;
	for (i = 1; i < n; i++) /* few runs: insertion sort */
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *eta_kind(const struct state_eta *e, const char *node)
{
	size_t i;

	for (i = 0; i < e->nr_nodes; i++)
		if (!strcmp(e->nodes[i], node))
			return e->kinds[i];
	return NULL;
}

static void eta_sample(struct state_eta *e, const char *scope, const char *role, const char *step,
		       const char *cls, int64_t ms)
{
	ALLOC_GROW(e->samples, e->nr_samples + 1, e->alloc_samples);
	e->samples[e->nr_samples].key = xasprintf("%s\t%s\t%s\t%s", scope, role, step, cls);
	e->samples[e->nr_samples++].ms = ms;
}

/*
 * The value of a "key<sep>value" line (a summary's "key: value", the facts'
 * "key=value"), blanks after sep skipped, or NULL; caller frees.
 */
static char *line_value(const char *text, const char *key, char sep)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > kl + 1 && !strncmp(p, key, kl) && p[kl] == sep) {
			const char *v = p + kl + 1;
			while (*v == ' ')
				v++;
			return xstrndup(v, len - (size_t)(v - p));
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static char *summary_get(const char *text, const char *key)
{
	return line_value(text, key, ':');
}

static struct eta_plan *eta_plan_of(const struct state_eta *e, const char *node)
{
	size_t i;

	for (i = 0; i < e->nr_plans; i++)
		if (!strcmp(e->plans[i].node, node))
			return &e->plans[i];
	return NULL;
}

/* In the run before the newest of the node: step role/step did work, or not. */
static void eta_older(struct eta_plan *plan, const char *role, const char *step, bool work)
{
	size_t i, rl = strlen(role);

	for (i = 0; i < plan->nr && work; i++)
		if (!strncmp(plan->steps[i], role, rl) && plan->steps[i][rl] == '\t' &&
		    !strcmp(plan->steps[i] + rl + 1, step))
			plan->again[i] = true;
}

/*
 * Which steps of a node are expected to do work: those that failed last
 * time, those that changed in its last two runs (they change every time),
 * and the steps of a role after one of those (what they depend on changes).
 * A step that changed once was left converged: its check after apply passed.
 */
static void eta_settle(struct eta_plan *plan)
{
	size_t i;

	plan->work = xcalloc(plan->nr ? plan->nr : 1, sizeof(bool));
	for (i = 0; i < plan->nr; i++) {
		const char *tab = strchr(plan->steps[i], '\t');
		plan->work[i] = plan->last[i] == 'f' || (plan->last[i] == 'c' && plan->again[i]);
		if (i > 0 && plan->work[i - 1] &&
		    !strncmp(plan->steps[i - 1], plan->steps[i], (size_t)(tab - plan->steps[i]) + 1))
			plan->work[i] = true;
	}
}

/* Learn from one run (newest first): the timings of each node it ran. */
static void eta_learn(struct state_eta *e, struct state *s, const char *id, const char *ran,
		      int64_t elapsed)
{
	const char *p = ran;
	int64_t slowest = 0;
	bool changed = false;

	while (*p) {
		size_t len = strcspn(p, " ");
		char *node = xstrndup(p, len), *path = xasprintf("nodes/%s/timings", node);
		char *scope_n = xasprintf("n:%s", node), *scope_k = NULL;
		struct strbuf t = STRBUF_INIT;
		const char *kind = eta_kind(e, node), *l;
		struct eta_plan *plan = NULL, *newer = eta_plan_of(e, node);
		bool older = newer && !newer->older;
		int64_t sum = 0;

		if (kind)
			scope_k = xasprintf("k:%s", kind);
		if (!newer) {
			ALLOC_GROW(e->plans, e->nr_plans + 1, e->alloc_plans);
			plan = &e->plans[e->nr_plans++];
			memset(plan, 0, sizeof(*plan));
			plan->node = xstrdup(node);
		}
		if (state_read(s, id, path, &t, NULL) == 0) {
			for (l = t.buf; *l;) {
				const char *nl = strchr(l, '\n');
				size_t ll = nl ? (size_t)(nl - l) : strlen(l);
				char *line = xstrndup(l, ll), *f[5] = {NULL}, *save = NULL, *w;
				int nf = 0;
				for (w = strtok_r(line, "\t", &save); w && nf < 5;
				     w = strtok_r(NULL, "\t", &save))
					f[nf++] = w;
				if (nf >= 4) {
					int64_t ms = strtoll(f[2], NULL, 10);
					int64_t check = nf == 5 ? strtoll(f[4], NULL, 10) : -1;
					bool work = strcmp(f[3], "unchanged") &&
						    strcmp(f[3], "skipped") && strcmp(f[3], "ok");
					const char *scopes[3] = {scope_n, scope_k, "*"};
					size_t si;

					sum += ms;
					changed = changed || work;
					if (check > ms)
						check = ms;
					for (si = 0; si < 3; si++) {
						if (!scopes[si])
							continue;
						eta_sample(e, scopes[si], f[0], f[1], "*", ms);
						/* not a role's step (facts): it never does work */
						if (!strcmp(f[3], "ok"))
							eta_sample(e, scopes[si], f[0], f[1], "o",
								   ms);
						if (!work) {
							eta_sample(e, scopes[si], f[0], f[1], "k", ms);
							continue;
						}
						eta_sample(e, scopes[si], f[0], f[1], "c", ms);
						if (check >= 0) {
							eta_sample(e, scopes[si], f[0], f[1], "k",
								   check);
							eta_sample(e, scopes[si], f[0], f[1], "a",
								   ms - check);
						}
					}
					if (plan) {
						ALLOC_GROW(plan->steps, plan->nr + 1, plan->alloc);
						plan->last = xrealloc(plan->last, plan->alloc);
						plan->again = xrealloc(plan->again, plan->alloc *
											sizeof(bool));
						plan->last[plan->nr] = !work ? 'u'
								       : !strcmp(f[3], "failed") ? 'f'
												: 'c';
						plan->again[plan->nr] = false;
						plan->steps[plan->nr++] =
						    xasprintf("%s\t%s", f[0], f[1]);
					} else if (older) {
						eta_older(newer, f[0], f[1], work);
					}
				}
				free(line);
				l += ll + (nl ? 1 : 0);
			}
		}
		if (older)
			newer->older = true;
		if (sum > slowest)
			slowest = sum;
		strbuf_release(&t);
		free(path);
		free(node);
		free(scope_n);
		free(scope_k);
		p += len;
		while (*p == ' ')
			p++;
	}
	if (elapsed >= slowest) {
		struct eta_overhead *o = &e->overhead[changed];
		ALLOC_GROW(o->ms, o->nr + 1, o->alloc);
		o->ratio = xrealloc(o->ratio, o->alloc * sizeof(double));
		o->ms[o->nr] = elapsed - slowest;
		o->ratio[o->nr++] = slowest ? (double)(elapsed - slowest) / (double)slowest : 0;
	}
}

static int cmp_sample(const void *a, const void *b)
{
	const struct eta_sample *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : cmp_i64(&x->ms, &y->ms);
}

/* Sort the samples and keep one median per key. */
static void eta_group(struct state_eta *e)
{
	size_t i = 0, j, k;
	int64_t *v;

	if (!e->nr_samples)
		return;
	qsort(e->samples, e->nr_samples, sizeof(*e->samples), cmp_sample);
	e->keys = xcalloc(e->nr_samples, sizeof(*e->keys));
	v = xcalloc(e->nr_samples, sizeof(*v));
	while (i < e->nr_samples) {
		for (j = i; j < e->nr_samples && !strcmp(e->samples[j].key, e->samples[i].key); j++)
			v[j - i] = e->samples[j].ms;
		e->keys[e->nr].key = e->samples[i].key;
		e->keys[e->nr++].median = median(v, j - i);
		for (k = i + 1; k < j; k++)
			free(e->samples[k].key);
		i = j;
	}
	free(v);
	free(e->samples);
	e->samples = NULL;
	e->nr_samples = 0;
}

/*
 * The pulls of one run (newest first): each image's size (the newest
 * seen), and per node the rate of its pull steps -- the bytes its images
 * of a role took over that role's pull step's time (timings), as a sample
 * "rate" of role/step in bytes per second (its "ms" field).
 */
static void eta_learn_pulls(struct state_eta *e, struct state *s, const char *id, const char *ran)
{
	const char *p = ran;

	while (*p) {
		size_t len = strcspn(p, " ");
		char *node = xstrndup(p, len), *path = xasprintf("nodes/%s/pulls", node);
		struct strbuf pulls = STRBUF_INIT, timings = STRBUF_INIT;
		const char *kind = eta_kind(e, node);

		if (state_read(s, id, path, &pulls, NULL) == 0 && pulls.len) {
			char *tpath = xasprintf("nodes/%s/timings", node);
			char *save = NULL, *line;
			/* per role: bytes of its done pulls */
			char *roles[8] = {NULL};
			uint64_t bytes[8] = {0};
			size_t nroles = 0, r, k;

			(void)state_read(s, id, tpath, &timings, NULL);
			free(tpath);
			for (line = strtok_r(pulls.buf, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save)) {
				char *f[5] = {NULL}, *ls = NULL, *w;
				int nf = 0;
				for (w = strtok_r(line, "\t", &ls); w && nf < 5;
				     w = strtok_r(NULL, "\t", &ls))
					f[nf++] = w;
				if (nf < 5 || strcmp(f[4], "done"))
					continue;
				for (k = 0; k < e->nr_images && strcmp(e->image_refs[k], f[1]); k++)
					;
				if (k == e->nr_images) {
					ALLOC_GROW(e->image_refs, e->nr_images + 1,
						   e->alloc_images);
					e->image_bytes = xrealloc(
					    e->image_bytes, e->alloc_images * sizeof(uint64_t));
					e->image_refs[e->nr_images] = xstrdup(f[1]);
					e->image_bytes[e->nr_images++] = strtoull(f[2], NULL, 10);
				}
				for (r = 0; r < nroles && strcmp(roles[r], f[0]); r++)
					;
				if (r == nroles && nroles < 8)
					roles[nroles++] = f[0];
				if (r < 8)
					bytes[r] += strtoull(f[2], NULL, 10);
			}
			/* each role's pull step: the timings line of that role that took longest */
			for (r = 0; r < nroles; r++) {
				const char *l = timings.buf;
				int64_t ms = 0;
				char step[64] = "";
				size_t rl = strlen(roles[r]);
				while (l && *l) {
					const char *nl = strchr(l, '\n');
					if (!strncmp(l, roles[r], rl) && l[rl] == '\t') {
						const char *st = l + rl + 1,
							   *tab = strchr(st, '\t');
						int64_t v = tab ? strtoll(tab + 1, NULL, 10) : 0;
						const char *res =
						    tab ? strchr(tab + 1, '\t') : NULL;
						/* a step that pulled in this run (a file of an
						 * earlier run lies under a run that wrote none) */
						if (tab && v > ms &&
						    (size_t)(tab - st) < sizeof(step) &&
						    strncmp(st, "import", 6) && res &&
						    !strncmp(res + 1, "changed", 7)) {
							ms = v;
							snprintf(step, sizeof(step), "%.*s",
								 (int)(tab - st), st);
						}
					}
					l = nl ? nl + 1 : NULL;
				}
				if (ms > 0 && bytes[r]) {
					const char *scopes[3] = {NULL, NULL, "*"};
					char *sn = xasprintf("n:%s", node),
					     *sk = kind ? xasprintf("k:%s", kind) : NULL;
					size_t si;
					scopes[0] = sn;
					scopes[1] = sk;
					for (si = 0; si < 3; si++)
						if (scopes[si])
							eta_sample(e, scopes[si], "pull", "rate",
								   "r",
								   (int64_t)(bytes[r] * 1000 /
									     (uint64_t)ms));
					free(sn);
					free(sk);
				}
			}
		}
		strbuf_release(&pulls);
		strbuf_release(&timings);
		free(path);
		free(node);
		p += len;
		while (*p == ' ')
			p++;
	}
}

/*
 * Which machine each node was when the record last saw it: the facts of
 * the newest run of any command that ran it (a `check` after the last `up`
 * counts: it met the machine too).  Called for each run, newest first, with
 * the nodes it ran; at most ETA_MACHINE_RUNS runs back.
 */
static size_t eta_machines(struct state_eta *e, struct state *s, const char *id, const char *ran)
{
	const char *p = ran;
	size_t found = 0;

	while (*p) {
		size_t len = strcspn(p, " "), k;
		for (k = 0; k < e->nr_nodes; k++) {
			struct strbuf facts = STRBUF_INIT;
			char *path;
			if (e->machines[k] || strlen(e->nodes[k]) != len ||
			    strncmp(p, e->nodes[k], len))
				continue;
			path = xasprintf("nodes/%s/facts", e->nodes[k]);
			if (state_read(s, id, path, &facts, NULL) == 0)
				e->machines[k] = line_value(facts.buf, "machine_id", '=');
			found += e->machines[k] != NULL;
			strbuf_release(&facts);
			free(path);
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	return found;
}

struct state_eta *state_eta_load(struct state *s, const char *command, const char *const *nodes,
				 const char *const *kinds, size_t nr)
{
	struct state_eta *e = xcalloc(1, sizeof(*e));
	struct state_run *runs = NULL;
	size_t nr_runs = 0, i, known = 0;

	e->nr_nodes = nr;
	e->nodes = xcalloc(nr ? nr : 1, sizeof(char *));
	e->kinds = xcalloc(nr ? nr : 1, sizeof(char *));
	e->machines = xcalloc(nr ? nr : 1, sizeof(char *));
	e->met = xcalloc(nr ? nr : 1, sizeof(bool));
	for (i = 0; i < nr; i++) {
		e->nodes[i] = xstrdup(nodes[i]);
		e->kinds[i] = xstrdup(kinds[i]);
	}
	if (s && state_runs(s, &runs, &nr_runs, NULL) == 0) {
		/* One reading of each summary: the runs to learn from, the machines the nodes were.
		 */
		for (i = 0; i < nr_runs &&
			    (e->runs < ETA_MAX_RUNS || (i < ETA_MACHINE_RUNS && known < nr));
		     i++) {
			struct strbuf sum = STRBUF_INIT;
			char *cmd = NULL, *ran = NULL, *elapsed = NULL, *result = NULL;
			if (state_read(s, runs[i].id, "summary", &sum, NULL) == 0) {
				cmd = summary_get(sum.buf, "command");
				ran = summary_get(sum.buf, "ran");
				elapsed = summary_get(sum.buf, "duration_ms");
				result = summary_get(sum.buf, "result");
			}
			/* Runs that were cut short say nothing about how long a run takes. */
			if (ran && i < ETA_MACHINE_RUNS && known < nr)
				known += eta_machines(e, s, runs[i].id, ran);
			if (e->runs < ETA_MAX_RUNS && cmd && ran && elapsed && result &&
			    !strcmp(cmd, command) &&
			    (!strcmp(result, "ok") || !strcmp(result, "failed"))) {
				eta_learn(e, s, runs[i].id, ran, strtoll(elapsed, NULL, 10));
				eta_learn_pulls(e, s, runs[i].id, ran);
				e->runs++;
			}
			free(cmd);
			free(ran);
			free(elapsed);
			free(result);
			strbuf_release(&sum);
		}
		state_runs_free(runs, nr_runs);
	}
	eta_group(e);
	for (i = 0; i < e->nr_plans; i++)
		eta_settle(&e->plans[i]);
	for (i = 0; i < 2; i++) {
		e->overhead_median[i] = median(e->overhead[i].ms, e->overhead[i].nr);
		e->overhead_ratio[i] = median_d(e->overhead[i].ratio, e->overhead[i].nr);
	}
	return e;
}

void state_eta_free(struct state_eta *e)
{
	size_t i, k;

	if (!e)
		return;
	for (i = 0; i < e->nr; i++)
		free(e->keys[i].key);
	free(e->keys);
	for (i = 0; i < e->nr_samples; i++)
		free(e->samples[i].key);
	free(e->samples);
	for (i = 0; i < e->nr_images; i++)
		free(e->image_refs[i]);
	free(e->image_refs);
	free(e->image_bytes);
	for (i = 0; i < e->nr_plans; i++) {
		for (k = 0; k < e->plans[i].nr; k++)
			free(e->plans[i].steps[k]);
		free(e->plans[i].expect);
		free(e->plans[i].steps);
		free(e->plans[i].last);
		free(e->plans[i].again);
		free(e->plans[i].work);
		free(e->plans[i].node);
	}
	free(e->plans);
	for (i = 0; i < e->nr_nodes; i++) {
		free(e->nodes[i]);
		free(e->kinds[i]);
		free(e->machines[i]);
	}
	free(e->nodes);
	free(e->kinds);
	free(e->machines);
	free(e->met);
	for (i = 0; i < 2; i++) {
		free(e->overhead[i].ms);
		free(e->overhead[i].ratio);
	}
	free(e);
}

static int cmp_key(const void *k, const void *entry)
{
	return strcmp(k, ((const struct eta_key *)entry)->key);
}

static int64_t eta_find(const struct state_eta *e, const char *scope, const char *role_step,
			const char *cls)
{
	char *key = xasprintf("%s\t%s\t%s", scope, role_step, cls);
	const struct eta_key *k =
	    e->nr ? bsearch(key, e->keys, e->nr, sizeof(*e->keys), cmp_key) : NULL;

	free(key);
	return k ? k->median : -1;
}

/* The median of class cls: the node's own, else its kind's, else any node's; -1 none. */
static int64_t eta_find_scoped(const struct state_eta *e, const char *node, const char *role_step,
			       const char *cls)
{
	const char *kind = eta_kind(e, node);
	char *scope[3] = {xasprintf("n:%s", node), kind ? xasprintf("k:%s", kind) : NULL,
			  xstrdup("*")};
	int64_t v = -1;
	size_t i;

	for (i = 0; i < 3 && v < 0; i++)
		if (scope[i])
			v = eta_find(e, scope[i], role_step, cls);
	for (i = 0; i < 3; i++)
		free(scope[i]);
	return v;
}

/*
 * A step expected to do work: its check and its apply (or, from records
 * that do not split them, the whole of it when it did work), from the
 * node's own runs, else from nodes of its kind, else from any node; -1
 * when no node of the record ever saw it do work ("no history": its check
 * alone, what a converged node spends on it, would be 10 to 70 times too
 * little for a kubeadm init: issue 33).  A step expected to change nothing:
 * its check, else any time it took.
 */
static int64_t eta_lookup(const struct state_eta *e, const char *node, const char *role_step,
			  bool work)
{
	const char *kind = eta_kind(e, node);
	char *scope[3] = {xasprintf("n:%s", node), kind ? xasprintf("k:%s", kind) : NULL,
			  xstrdup("*")};
	int64_t v = -1;
	size_t i;

	if (!work) {
		v = eta_find_scoped(e, node, role_step, "k");
		if (v < 0)
			v = eta_find_scoped(e, node, role_step, "*");
	}
	for (i = 0; work && i < 3 && v < 0; i++) {
		int64_t k, a;
		if (!scope[i])
			continue;
		k = eta_find(e, scope[i], role_step, "k");
		a = eta_find(e, scope[i], role_step, "a");
		v = k >= 0 && a >= 0 ? k + a : eta_find(e, scope[i], role_step, "c");
	}
	/* the facts, which never do work: any time they took */
	if (work && v < 0 && eta_find_scoped(e, node, role_step, "o") >= 0)
		v = eta_find_scoped(e, node, role_step, "*");
	for (i = 0; i < 3; i++)
		free(scope[i]);
	return v;
}

/* Is this step of the node expected to do work (struct eta_plan)? */
static bool eta_work(const struct state_eta *e, const char *node, const char *role_step)
{
	const struct eta_plan *plan = eta_plan_of(e, node);
	size_t i;

	if (!plan)
		return true; /* a new node */
	for (i = 0; i < plan->nr; i++)
		if (!strcmp(plan->steps[i], role_step))
			return plan->work[i];
	return true; /* a step it did not run */
}

int64_t state_eta_ms(const struct state_eta *e, const char *node, const char *role,
		     const char *step)
{
	char *rs;
	int64_t v;

	if (!e)
		return -1;
	rs = xasprintf("%s\t%s", role, step);
	v = eta_lookup(e, node, rs, eta_work(e, node, rs));
	free(rs);
	return v;
}

/*
 * The known part of a node's work (the steps it ran last time, or the
 * newest node of its kind's), -1 when the record has no such node;
 * *unknown gets how many of those steps have no history of doing work, and
 * what (the first), the step's "role › step", to *what when non-NULL.
 */
static int64_t eta_node(const struct state_eta *e, const char *node, size_t *unknown, char **what)
{
	const struct eta_plan *plan;
	const char *kind;
	int64_t sum = 0;
	size_t i;

	*unknown = 0;
	plan = eta_plan_of(e, node);
	/* A node never seen: the steps of the newest node of its kind. */
	kind = eta_kind(e, node);
	for (i = 0; i < e->nr_plans && !plan && kind; i++) {
		const char *k = eta_kind(e, e->plans[i].node);
		if (k && !strcmp(k, kind))
			plan = &e->plans[i];
	}
	if (!plan)
		return -1;
	for (i = 0; i < plan->nr; i++) {
		/* the node's own plan says what each step will do, another's only which steps */
		bool own = plan == eta_plan_of(e, node);
		bool work = own ? plan->work[i] : true;
		int64_t v = own && plan->expect && plan->expect[i] >= 0
				? plan->expect[i]
				: eta_lookup(e, node, plan->steps[i], work);
		if (v > 0)
			sum += v;
		if (v < 0 && work) {
			if (!*unknown && what) {
				const char *tab = strchr(plan->steps[i], '\t');
				*what = xasprintf("%.*s › %s", (int)(tab - plan->steps[i]),
						  plan->steps[i], tab + 1);
			}
			(*unknown)++;
		}
	}
	return sum;
}

uint64_t state_eta_image_bytes(const struct state_eta *e, const char *ref)
{
	size_t i;

	for (i = 0; e && i < e->nr_images; i++)
		if (!strcmp(e->image_refs[i], ref))
			return e->image_bytes[i];
	return 0;
}

int64_t state_eta_pull_ms(const struct state_eta *e, const char *node, uint64_t bytes)
{
	int64_t rate;

	if (!e)
		return -1;
	rate = eta_find_scoped(e, node, "pull\trate", "r"); /* bytes per second */
	if (rate <= 0)
		return -1;
	return (int64_t)(bytes * 1000 / (uint64_t)rate);
}

bool state_eta_expect(struct state_eta *e, const char *node, const char *role, const char *step,
		      int64_t ms)
{
	struct eta_plan *plan = e ? eta_plan_of(e, node) : NULL;
	char *rs;
	size_t i;
	bool found = false;

	if (!plan)
		return false;
	rs = xasprintf("%s\t%s", role, step);
	if (!plan->expect) {
		plan->expect = xcalloc(plan->nr ? plan->nr : 1, sizeof(int64_t));
		for (i = 0; i < plan->nr; i++)
			plan->expect[i] = -1;
	}
	for (i = 0; i < plan->nr; i++)
		if (!strcmp(plan->steps[i], rs)) {
			plan->expect[i] = ms;
			plan->work[i] = true;
			found = true;
		}
	free(rs);
	return found;
}

int64_t state_eta_node_ms(const struct state_eta *e, const char *node)
{
	size_t unknown;
	int64_t v;

	if (!e)
		return -1;
	v = eta_node(e, node, &unknown, NULL);
	/* a step with no history: no estimate, rather than a tiny one */
	return unknown ? -1 : v;
}

size_t state_eta_unknown(const struct state_eta *e, const char *const *nodes, size_t nr,
			 struct strbuf *what)
{
	size_t i, total = 0, first = 0;

	for (i = 0; e && e->runs && i < nr; i++) {
		char *step = NULL;
		size_t unknown;
		if (eta_node(e, nodes[i], &unknown, &step) < 0) {
			/* no node of its kind in the record: none of its steps is known */
			unknown = 1;
			step = xstrdup("every step (no node of its kind in the record)");
		}
		if (unknown && what && !total) {
			strbuf_addf(what, "%s on %s", step, nodes[i]);
			first = unknown;
		}
		total += unknown;
		free(step);
	}
	if (what && total > first)
		strbuf_addf(what, " and %zu more step%s", total - first,
			    total - first == 1 ? "" : "s");
	else if (what && first > 1)
		strbuf_addf(what, " and %zu more step%s there", first - 1, first == 2 ? "" : "s");
	return total;
}

int64_t state_eta_total_ms(const struct state_eta *e, const char *const *nodes, size_t nr,
			   int forks)
{
	int64_t slowest = 0, total = 0, over;
	bool work = false;
	size_t i, k;

	if (!e || !e->runs)
		return -1;
	for (i = 0; i < nr; i++) {
		const struct eta_plan *plan = eta_plan_of(e, nodes[i]);
		size_t unknown;
		/* the known part of each node: a lower bound where steps have no history */
		int64_t v = eta_node(e, nodes[i], &unknown, NULL);
		work = work || !plan;
		for (k = 0; plan && k < plan->nr; k++)
			work = work || plan->work[k];
		if (v < 0)
			continue;
		total += v;
		if (v > slowest)
			slowest = v;
	}
	if (forks > 0 && total / forks > slowest)
		slowest = total / forks;
	/*
	 * The time outside the steps (connecting, the passes' barriers,
	 * validation) of earlier runs like this one, that did work or not; with
	 * none such, the other kind's in proportion to the steps' time (a run
	 * that does work waits at its barriers for work, one that does not for
	 * checks).
	 */
	over = e->overhead_median[work];
	if (over < 0 && e->overhead_ratio[!work] >= 0)
		over = (int64_t)(e->overhead_ratio[!work] * (double)slowest);
	return slowest + (over > 0 ? over : 0);
}

bool state_eta_machine(struct state_eta *e, const char *node, const char *machine_id)
{
	struct eta_plan *plan;
	size_t i, k;
	bool other;

	if (!e || !machine_id || !*machine_id)
		return false;
	for (i = 0; i < e->nr_nodes && strcmp(e->nodes[i], node); i++)
		;
	/* the first word counts: a node that names several machines changes nothing more */
	if (i == e->nr_nodes || e->met[i])
		return false;
	e->met[i] = true;
	other = e->machines[i] && strcmp(e->machines[i], machine_id);
	free(e->machines[i]);
	e->machines[i] = xstrdup(machine_id);
	plan = eta_plan_of(e, node);
	if (!other || !plan)
		return false; /* the same machine, or one this command never ran: as estimated */
	for (k = 0; k < plan->nr; k++)
		plan->work[k] = true;
	return true;
}

size_t state_eta_runs(const struct state_eta *e)
{
	return e ? e->runs : 0;
}
