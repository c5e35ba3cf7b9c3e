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

static char *line_value(const char *text, const char *key, char sep)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > kl && !strncmp(p, key, kl) && p[kl] == sep) {
			const char *v = p + kl + 1;
			while (*v == ' ')
				v++;
			return xstrndup(v, len - (size_t)(v - p));
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

char *state_summary_get(const char *summary, const char *key)
{
	return line_value(summary, key, ':');
}

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
