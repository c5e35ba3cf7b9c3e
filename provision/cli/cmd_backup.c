/*
 * provision backup and provision restore: etcd snapshots of the control
 * plane and its PKI, kept in this machine's state folder (backup.h).
 *
 * backup: roles/etcd-backup makes and verifies the snapshot on the control
 * plane (one recorded run); then, before the run is committed, the
 * snapshot and the PKI archive are read from the node on the run's own
 * SSH session (the transport's get_file through the session: steps of the
 * run, shown, logged and recorded; base64 on the wire, the node's
 * sha256sum and size first, every byte bounded), checked against those and
 * against etcd's own appended hash, written as ID.tmp and renamed; the
 * node's copy is removed and the oldest backups beyond cluster.backups_keep
 * are deleted.
 *
 * restore: the backup is checked here first (a snapshot that is short,
 * not whole pages, or whose hash does not match is refused, exit 2,
 * before any node is reached), confirmed (what it replaces is said; not
 * on a terminal --yes is required), uploaded to the control plane, and
 * roles/etcd-restore puts the PKI in place and restores etcd's data: the
 * upload, the run and the clean-up in one session.
 *
 * Several control planes (issue 36): backup from the first healthy member
 * (healthy_member), restore onto the first control plane as a new
 * one-member etcd once every other is known to hold no member
 * (others_reinstalled); provision up then joins the others again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../http.h"
#include "../inventory.h"
#include "../role.h"
#include "../runner.h"
#include "../state.h"
#include "../sha256.h"
#include "../util.h"
#include "cmd.h"
#include "prompt.h"
#include "session.h"
#include "backup.h"

/* What a node may send: etcd's largest quota is 8 GiB; a PKI is a few KiB. */
#define SNAPSHOT_MAX ((size_t)8 << 30)
#define PKI_MAX ((size_t)16 << 20)
#define BACKUP_ID_LEN 16 /* 20261127T101500Z */
#define NODE_DIR "/var/lib/provision/etcd-backup"
#define RESTORE_DIR "/var/lib/provision/etcd-restore"

static char backup_id[BACKUP_ID_LEN + 1];
static char *env_id;
static const char *env[2];
static struct cli_plan_args backup_args = {.cmd_name = "backup", .forks = 1, .output = "text"};
static struct cli_plan_args restore_args = {.cmd_name = "restore", .forks = 1, .output = "text"};

static const struct opt backup_options[] = {
	OPT_STRING('i', "inventory", &backup_args.inventory, "FILE",
		   "the inventory file (required)"),
	CLI_RUN_VIEW_OPTIONS(backup_args),
	OPT_END,
};

static const struct opt restore_options[] = {
	OPT_STRING('i', "inventory", &restore_args.inventory, "FILE",
		   "the inventory file (required)"),
	OPT_BOOL('y', "yes", &restore_args.yes, "do not ask (required when not on a terminal)"),
	CLI_RUN_VIEW_OPTIONS(restore_args),
	OPT_END,
};

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void backup_snapshot_check_init(struct backup_snapshot_check *c)
{
	memset(c, 0, sizeof(*c));
	transport_sha256_init(&c->sha);
}

void backup_snapshot_check_update(struct backup_snapshot_check *c, const unsigned char *p, size_t n)
{
	size_t excess, from_tail;

	if (c->len < sizeof(c->head)) {
		size_t k =
		    sizeof(c->head) - (size_t)c->len < n ? sizeof(c->head) - (size_t)c->len : n;
		memcpy(c->head + c->len, p, k);
	}
	c->len += n;
	if (c->tail_len + n <= sizeof(c->tail)) {
		memcpy(c->tail + c->tail_len, p, n);
		c->tail_len += n;
		return;
	}
	/* All but the last 32 bytes seen go into the database's hash. */
	excess = c->tail_len + n - sizeof(c->tail);
	from_tail = excess < c->tail_len ? excess : c->tail_len;
	transport_sha256_update(&c->sha, c->tail, from_tail);
	memmove(c->tail, c->tail + from_tail, c->tail_len - from_tail);
	c->tail_len -= from_tail;
	excess -= from_tail;
	transport_sha256_update(&c->sha, p, excess);
	memcpy(c->tail + c->tail_len, p + excess, n - excess);
	c->tail_len = sizeof(c->tail);
}

int backup_snapshot_check_final(struct backup_snapshot_check *c, struct error *err)
{
	unsigned char md[32];
	uint32_t page;
	unsigned long long db;

	/* bbolt's first page: a 16-byte page header, then the meta: magic, version, page size. */
	if (c->len < 2 * 512 + 32)
		return error_set(err, -1, "%llu bytes is too short for an etcd snapshot", c->len);
	if (le32(c->head + 16) != 0xED0CDAEDu)
		return error_set(err, -1, "not an etcd snapshot: no bbolt database at its start");
	page = le32(c->head + 24);
	db = c->len - 32;
	if (page < 512 || page > 65536 || (page & (page - 1)))
		return error_set(err, -1, "not an etcd snapshot: page size %u", (unsigned)page);
	if (db % page)
		return error_set(err, -1,
				 "truncated or padded: %llu bytes is not whole %u-byte pages and "
				 "etcd's 32-byte hash",
				 c->len, (unsigned)page);
	transport_sha256_final(&c->sha, md);
	if (memcmp(md, c->tail, 32))
		return error_set(err, -1,
				 "corrupt or truncated: the SHA-256 etcd appended does not match "
				 "the database");
	return 0;
}

int backup_snapshot_verify(const unsigned char *data, size_t len, struct error *err)
{
	struct backup_snapshot_check c;

	backup_snapshot_check_init(&c);
	backup_snapshot_check_update(&c, data, len);
	return backup_snapshot_check_final(&c, err);
}

/* ---- this machine's side: files written whole or not at all ---- */

static int write_file_0600(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), e = 0;

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) < 0 || (e = write_all(fd, data, len)) < 0 || fsync(fd) < 0)
		e = e ? e : -errno;
	close(fd);
	return e;
}

static void fsync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* Remove a backup folder (files of our own naming, one level). */
static void remove_backup_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			char *p;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			p = xasprintf("%s/%s", path, de->d_name);
			(void)unlink(p);
			free(p);
		}
		closedir(d);
	}
	(void)rmdir(path);
}

static bool is_backup_id(const char *s)
{
	size_t i;

	if (strlen(s) != BACKUP_ID_LEN || s[8] != 'T' || s[15] != 'Z')
		return false;
	for (i = 0; i < BACKUP_ID_LEN; i++)
		if (i != 8 && i != 15 && (s[i] < '0' || s[i] > '9'))
			return false;
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The backup ids in dir, oldest first; with `tmp`, the leftover ID.tmp folders removed. */
static char **list_backups(const char *dir, size_t *nr, bool tmp)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **ids = NULL;
	size_t alloc = 0;

	*nr = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (tmp && n == BACKUP_ID_LEN + 4 && !strcmp(de->d_name + BACKUP_ID_LEN, ".tmp")) {
			char *p = xasprintf("%s/%s", dir, de->d_name);
			remove_backup_dir(p);
			free(p);
			continue;
		}
		if (!is_backup_id(de->d_name))
			continue;
		ids = xgrow(ids, *nr + 1, &alloc, sizeof(*ids));
		ids[(*nr)++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (*nr)
		qsort(ids, *nr, sizeof(*ids), cmp_str);
	return ids;
}

static void free_ids(char **ids, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(ids[i]);
	free(ids);
}

/* ---- the node's side (through the run's session: cli_session_*) ---- */

/*
 * A file read from the node (the transport's get_file), streamed to a file
 * here as it comes (an etcd snapshot may be 8 GiB: never whole in memory)
 * and, for the snapshot, checked as etcd would (backup_snapshot_check).
 */
struct download {
	int fd;				    /* where the bytes go */
	struct backup_snapshot_check *snap; /* NULL: not a snapshot */
	char sha_hex[65];		    /* of what arrived, checked against the node's */
	uint64_t len;			    /* bytes written */
	int io_errno;
};

static int download_data(void *ctx, const void *data, size_t len)
{
	struct download *dl = ctx;
	int e = write_all(dl->fd, data, len);

	if (e < 0) {
		dl->io_errno = -e;
		return -1;
	}
	if (dl->snap)
		backup_snapshot_check_update(dl->snap, data, len);
	return 0;
}

static int node_run(struct cli_session *s, const struct node *n, const char *role,
		    const char *step, const char *command, struct error *err)
{
	struct strbuf out = STRBUF_INIT;
	int rc = cli_session_capture(s, n, role, step, command, 120000, 4096, &out, err);

	strbuf_release(&out);
	if (rc < 0)
		return error_set(err, -1, "'%s': %s", command, err->msg);
	return 0;
}

/*
 * Read PATH from the node into DEST, a new file here (0600, synced): streamed
 * as it comes, bounded by max, checked against the node's sha256sum and size
 * (get_file) and, with snap, as an etcd snapshot.  0; -1 the node's failure
 * (err set); -2 this machine's (errno set).
 */
static int node_read(struct cli_session *s, const struct node *n, const char *step,
		     const char *path, const char *dest, uint64_t max,
		     struct backup_snapshot_check *snap, struct download *dl, struct error *err)
{
	int rc;

	memset(dl, 0, sizeof(*dl));
	dl->snap = snap;
	dl->fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (dl->fd < 0 || fchmod(dl->fd, 0600) < 0) {
		rc = -2;
		goto out;
	}
	rc = cli_session_get_file(s, n, "etcd-backup", step, path, max, download_data, dl,
				  dl->sha_hex, &dl->len, err);
	if (dl->io_errno) {
		errno = dl->io_errno;
		rc = -2;
		goto out;
	}
	if (rc < 0) {
		rc = -1;
		goto out;
	}
	if (fsync(dl->fd) < 0) {
		rc = -2;
		goto out;
	}
	rc = -1;
	if (snap && backup_snapshot_check_final(snap, err) < 0)
		goto out;
	rc = 0;
out:
	if (dl->fd >= 0 && close(dl->fd) < 0 && rc == 0)
		rc = -2;
	dl->fd = -1;
	return rc;
}

static void wipe(struct strbuf *sb)
{
	if (sb->len)
		explicit_bzero(sb->buf, sb->len);
	strbuf_release(sb);
}

/* ---- provision backup ---- */

static int backup_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	const struct node *cp = d->nr ? d->nodes[0] : NULL;
	struct download snap = {.fd = -1}, pki = {.fd = -1};
	struct backup_snapshot_check check;
	struct error err = {0};
	struct strbuf manifest = STRBUF_INIT, rm = STRBUF_INIT;
	char *priv = xasprintf("%s/private", d->state_dir);
	char *dir = xasprintf("%s/backups", priv);
	char *tmp = xasprintf("%s/%s.tmp", dir, backup_id);
	char *final = xasprintf("%s/%s", dir, backup_id);
	char *path = NULL, *dest = NULL, **ids = NULL;
	size_t nr_ids = 0, i;
	int ret = d->ret, rc;
	bool made_tmp = false;

	(void)a;
	if (ret != EXIT_OK || !cp) {
		printf("backup: no backup taken: the snapshot failed on %s (see above); nothing "
		       "was written to '%s'\n",
		       cp ? cp->name : "the control plane", dir);
		goto out;
	}
	/*
	 * This machine: ID.tmp (0700), the files streamed into it as they come
	 * (0600, synced: a snapshot may be 8 GiB, it is never whole in memory),
	 * checked, then the rename; anything wrong and ID.tmp goes.
	 */
	(void)mkdir(d->state_dir, 0700);
	if ((mkdir(priv, 0700) < 0 && errno != EEXIST) || (mkdir(dir, 0700) < 0 && errno != EEXIST))
		goto local_fail;
	free_ids(list_backups(dir, &nr_ids, true), nr_ids);
	if (mkdir(tmp, 0700) < 0)
		goto local_fail;
	made_tmp = true;
	backup_snapshot_check_init(&check);
	path = xasprintf(NODE_DIR "/%s.db", backup_id);
	dest = xasprintf("%s/snapshot.db", tmp);
	rc = node_read(d->session, cp, "download snapshot.db", path, dest, SNAPSHOT_MAX, &check,
		       &snap, &err);
	free(path);
	free(dest);
	if (rc == -2)
		goto local_fail;
	if (rc < 0)
		goto node_fail;
	path = xasprintf(NODE_DIR "/%s.pki.tar", backup_id);
	dest = xasprintf("%s/pki.tar", tmp);
	rc = node_read(d->session, cp, "download pki.tar", path, dest, PKI_MAX, NULL, &pki, &err);
	free(path);
	free(dest);
	if (rc == -2)
		goto local_fail;
	if (rc < 0)
		goto node_fail;

	strbuf_addf(&manifest,
		    "id %s\ncluster %s\nnode %s\naddress %s\nsnapshot.db sha256 %s bytes %llu\n"
		    "pki.tar sha256 %s bytes %llu\n",
		    backup_id, d->inv->cluster.name, cp->name, cp->address, snap.sha_hex,
		    (unsigned long long)snap.len, pki.sha_hex, (unsigned long long)pki.len);
	path = xasprintf("%s/manifest", tmp);
	rc = write_file_0600(path, manifest.buf, manifest.len);
	free(path);
	if (rc < 0) {
		errno = -rc;
		goto local_fail;
	}
	fsync_dir(tmp);
	if (rename(tmp, final) < 0)
		goto local_fail;
	made_tmp = false;
	fsync_dir(dir);

	/* The node's copy holds every Secret of the cluster: it goes. */
	strbuf_addf(&rm, "rm -f " NODE_DIR "/%s.db " NODE_DIR "/%s.pki.tar " NODE_DIR "/%s.ok",
		    backup_id, backup_id, backup_id);
	if (node_run(d->session, cp, "etcd-backup", "remove the node's copy", rm.buf, &err) < 0)
		printf("backup: warning: the node's copy in %s on %s was not removed: %s\n",
		       NODE_DIR, cp->name, err.msg);

	ids = list_backups(dir, &nr_ids, false);
	for (i = 0; i + (size_t)d->inv->cluster.backups_keep < nr_ids; i++) {
		char *old = xasprintf("%s/%s", dir, ids[i]);
		remove_backup_dir(old);
		printf("backup: removed the old backup %s (cluster.backups_keep: %d)\n", ids[i],
		       d->inv->cluster.backups_keep);
		free(old);
	}
	state_files_addf(d->record, "backup",
			 "%s\nkept on this machine in private/backups/%s (not in this record)\n",
			 manifest.buf, backup_id);
	printf("backup: %s: etcd snapshot of %s, %llu bytes, sha256 %s; PKI %llu bytes; in '%s' "
	       "(%zu kept)\n",
	       backup_id, cp->name, (unsigned long long)snap.len, snap.sha_hex,
	       (unsigned long long)pki.len, final, nr_ids - i);
	goto out;

node_fail:
	if (made_tmp)
		remove_backup_dir(tmp);
	made_tmp = false;
	printf("backup: %s: %s; nothing was written to '%s'\n", cp->name, err.msg, dir);
	ret = EXIT_NODE_FAILED;
	goto out;
local_fail : {
	int e = errno;
	if (made_tmp)
		remove_backup_dir(tmp);
	made_tmp = false;
	printf("backup: cannot write '%s': %s; nothing was kept\n", tmp, strerror(e));
}
	ret = EXIT_LOCAL;
out:
	free_ids(ids, nr_ids);
	strbuf_release(&manifest);
	strbuf_release(&rm);
	free(priv);
	free(dir);
	free(tmp);
	free(final);
	fflush(stdout);
	return ret;
}

/* The control plane backup and restore run on: the first, or backup's healthy member. */
static const struct node *chosen_cp;

static int select_cp(const struct cli_plan_args *a, const struct inventory *inv,
		     const struct node ***nodes, size_t *nr)
{
	const struct node *cp = chosen_cp ? chosen_cp : inventory_control_plane(inv);

	if (!cp) {
		fprintf(stderr, "provision %s: the inventory has no control plane\n", a->cmd_name);
		return EXIT_USAGE;
	}
	free(*nodes);
	*nodes = xcalloc(1, sizeof(**nodes));
	(*nodes)[0] = cp;
	*nr = 1;
	return 0;
}

/*
 * Several control planes: the snapshot comes from one healthy member, the
 * first in the inventory's order whose etcd answers `etcdctl endpoint
 * health` there (kubeadm's client certificate, as 10-snapshot); each one
 * asked is a step "etcd-backup › etcd health" of its node.  Every etcd
 * member holds the whole keyspace, and the PKI's shared part (the CAs,
 * the service-account keys) is the same on every control plane.  None
 * answers: the first, whose run then says why.
 */
#define HEALTH_PROBE                                                                               \
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; "                      \
	"K=/etc/kubernetes/pki; c=$K/etcd/healthcheck-client; "                                    \
	"[ -f $c.key ] || c=$K/apiserver-etcd-client; "                                            \
	"ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=$K/etcd/ca.crt "        \
	"--cert=$c.crt --key=$c.key --dial-timeout=3s --command-timeout=10s endpoint health "      \
	"2>&1 | grep -v '^{' | head -n 2 | tr '\\n' ' '"

static const struct node *healthy_member(struct cli_session *s)
{
	const struct inventory *inv = s->inv;
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *n = &inv->nodes[i];
		const char *why;

		if (!(n->roles & NODE_ROLE_CONTROL_PLANE))
			continue;
		strbuf_reset(&out);
		if (cli_session_capture(s, n, "etcd-backup", "etcd health", HEALTH_PROBE, 60000,
					4096, &out, &err) == 0 &&
		    strstr(out.buf ? out.buf : "", "is healthy")) {
			printf("backup: %zu control planes: the snapshot is taken from %s (its "
			       "etcd member answers)\n",
			       inventory_nr_control_planes(inv), n->name);
			strbuf_release(&out);
			return n;
		}
		strbuf_rtrim(&out);
		why = out.len ? out.buf : err.msg;
		printf("backup: %s: its etcd member does not answer (%s); the next control plane\n",
		       n->name, why && *why ? why : "no answer");
	}
	strbuf_release(&out);
	printf("backup: no control plane's etcd member answers; the snapshot is tried on %s\n",
	       inventory_control_plane(inv)->name);
	return inventory_control_plane(inv);
}

int cli_backup_pass(struct cli_session *s, const struct cli_plan_args *view)
{
	struct cli_plan_args a = {
		.cmd_name = "backup",
		.inventory = view->inventory,
		.roles = view->roles,
		.state = view->state,
		.output = view->output ? view->output : "text",
		.no_tui = view->no_tui,
		.verbose = view->verbose,
		.ask_sudo = view->ask_sudo,
		.channels = view->channels,
		.forks = 1,
		.skip_preflight = true,
		.select = select_cp,
		.after = backup_after,
	};
	time_t now = time(NULL);
	struct tm tm;
	int ret;

	gmtime_r(&now, &tm);
	strftime(backup_id, sizeof(backup_id), "%Y%m%dT%H%M%SZ", &tm);
	free(env_id);
	env_id = xasprintf("PROVISION_BACKUP_ID=%s", backup_id);
	env[0] = env_id;
	env[1] = NULL;
	a.env = env;
	a.phase_bits = PHASE_BIT(PHASE_BACKUP);
	chosen_cp = NULL;
	if (inventory_nr_control_planes(s->inv) > 1) {
		ret = cli_session_secrets(s);
		if (ret)
			goto out;
		fflush(stdout);
		chosen_cp = healthy_member(s);
		fflush(stdout);
	}
	ret = cli_session_pass(s, &a);
out:
	chosen_cp = NULL;
	free(env_id);
	env_id = NULL;
	return ret;
}

static int backup_exec(int nr_pos, char **pos)
{
	struct cli_session s;
	int ret;

	(void)nr_pos;
	(void)pos;
	ret = cli_session_open(&s, &backup_args);
	if (!ret)
		ret = cli_backup_pass(&s, &backup_args);
	cli_session_close(&s);
	return ret;
}

const struct cmd cmd_backup = {
	.name = "backup",
	.summary = "take an etcd snapshot of the control plane and keep it with its PKI here",
	.usage = "-i FILE [--state DIR] [--no-tui] [-o json]",
	.description =
		"On the control plane: an etcd snapshot (etcdctl snapshot save against\n"
		"https://127.0.0.1:2379 with kubeadm's etcd client certificate), verified\n"
		"there (etcdutl or etcdctl snapshot status); then copied with\n"
		"/etc/kubernetes/pki to this machine's state folder, private/backups/ID/\n"
		"(files 0600, folders 0700; never in the run record, which notes the\n"
		"backup's id, SHA-256 and size), checked against the node's hash and\n"
		"etcd's own, and removed from the node.  The last cluster.backups_keep\n"
		"backups are kept (default 5).  A backup that fails leaves nothing behind.\n"
		"Several control planes: from the first whose etcd member answers.",
	.options = backup_options,
	.exec = backup_exec,
	.min_pos = 0,
	.max_pos = 0,
};

/* ---- provision restore ---- */

static char *restore_id_env;
static const char *restore_env[2];

static int restore_after(const struct cli_plan_args *a, const struct cli_plan_done *d)
{
	struct error err = {0};

	/* The uploads hold the cluster's secrets: gone whatever the steps did. */
	if (d->nr && node_run(d->session, d->nodes[0], "etcd-restore", "remove the upload",
			      "rm -f " RESTORE_DIR "/snapshot.db " RESTORE_DIR "/pki.tar",
			      &err) < 0)
		printf("restore: warning: the uploaded backup in %s on %s was not removed: %s\n",
		       RESTORE_DIR, d->nodes[0]->name, err.msg);
	if (d->ret == EXIT_OK && inventory_nr_control_planes(d->inv) > 1)
		printf("restore: %s: the cluster's CAs and service-account keys and /var/lib/etcd "
		       "(a new one-member etcd) are the backup's.  Next: provision up -i %s -- it "
		       "prepares the control planes, runs kubeadm init on %s from them (its own "
		       "certificates made anew), deletes the Nodes of the other control planes "
		       "(their machines were reinstalled) and joins them again with "
		       "--control-plane, one etcd member each.\n",
		       d->nodes[0]->name, a->inventory, d->nodes[0]->name);
	else if (d->ret == EXIT_OK)
		printf("restore: %s: /etc/kubernetes/pki and /var/lib/etcd are the backup's.  "
		       "Next: provision up -i %s -- on a reinstalled machine it prepares the "
		       "node and runs kubeadm init on them (the certificates on disk are used, "
		       "etcd starts from the restored data); where the control plane's manifests "
		       "are still there, the kubelet starts etcd from them.  The workers keep "
		       "their certificates (same CAs) and reconnect once the API answers at the "
		       "same address.\n",
		       d->nr ? d->nodes[0]->name : "the control plane", a->inventory);
	return d->ret;
}

/* The value of "KEY sha256 HEX bytes N" in a manifest. */
static int manifest_get(const char *manifest, const char *key, char sha[65], size_t *size)
{
	char pat[64];
	const char *p;
	unsigned long long n;

	snprintf(pat, sizeof(pat), "\n%s sha256 ", key);
	p = strstr(manifest, pat);
	if (!p || sscanf(p + strlen(pat), "%64[0-9a-f] bytes %llu", sha, &n) != 2 ||
	    strlen(sha) != 64)
		return -1;
	*size = (size_t)n;
	return 0;
}

static int check_file(const char *dir, const char *name, const char *manifest, size_t max,
		      struct strbuf *out, struct error *err)
{
	char *path = xasprintf("%s/%s", dir, name), want[65], sha[65];
	size_t size;
	struct stat st;
	int rc = -1;

	if (manifest_get(manifest, name, want, &size) < 0)
		error_set(err, -1, "'%s/manifest' names no SHA-256 and size of %s", dir, name);
	else if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		error_set(err, -1, "'%s': %s", path, strerror(errno ? errno : EINVAL));
	else if ((size_t)st.st_size > max)
		error_set(err, -1, "'%s': %lld bytes is more than provision restores", path,
			  (long long)st.st_size);
	else if (read_file(path, out) < 0)
		error_set(err, -1, "cannot read '%s': %s", path, strerror(errno));
	else if (out->len != size)
		error_set(err, -1, "'%s' is %zu bytes; the backup recorded %zu: truncated or changed",
			  path, out->len, size);
	else if (transport_sha256_hex(sha, out->buf, out->len), memcmp(sha, want, 64))
		error_set(err, -1, "'%s' does not have the SHA-256 the backup recorded: corrupt or "
				   "changed",
			  path);
	else
		rc = 0;
	free(path);
	return rc;
}

/*
 * Several control planes: the snapshot becomes a new one-member etcd on
 * the first (kubeadm's way for stacked etcd); the others join it again
 * with provision up, so none may still hold a member of the old cluster
 * (its etcd would keep the old cluster's peers).  Each is asked, a step
 * "etcd-restore › no etcd member" of its node; one that holds a member or
 * cannot be asked refuses the restore before anything is uploaded.
 */
#define MEMBER_PROBE                                                                               \
	"for f in /etc/kubernetes/manifests/etcd.yaml /var/lib/etcd/member; do "                   \
	"[ ! -e $f ] || printf '%s ' $f; done"

static int others_reinstalled(struct cli_session *s, const struct node *first)
{
	const struct inventory *inv = s->inv;
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	int ret = 0;
	size_t i;

	for (i = 0; i < inv->nr_nodes; i++) {
		const struct node *n = &inv->nodes[i];

		if (!(n->roles & NODE_ROLE_CONTROL_PLANE) || n == first)
			continue;
		strbuf_reset(&out);
		if (cli_session_capture(s, n, "etcd-restore", "no etcd member", MEMBER_PROBE, 60000,
					4096, &out, &err) < 0) {
			fprintf(stderr,
				"provision restore: %s: cannot see whether it still holds an etcd "
				"member: %s; nothing was changed\n",
				n->name, err.msg);
			ret = EXIT_NODE_FAILED;
		} else if (out.len) {
			strbuf_rtrim(&out);
			fprintf(stderr,
				"provision restore: %s still holds an etcd member of the cluster "
				"(%s): the backup is restored onto %s as a new one-member etcd "
				"that the other control planes join again, so they must be "
				"reinstalled machines; nothing was changed\n"
				"  hint: reinstall %s, or 'kubeadm reset -f' there (it leaves the "
				"cluster), then provision restore again\n",
				n->name, out.buf, first->name, n->name);
			ret = EXIT_NODE_FAILED;
		}
	}
	strbuf_release(&out);
	return ret;
}

static int restore_exec(int nr_pos, char **pos)
{
	struct cli_session s;
	const struct node *cp;
	struct strbuf manifest = STRBUF_INIT, snap = STRBUF_INIT, pki = STRBUF_INIT,
		      q = STRBUF_INIT;
	struct error err = {0};
	char *dir = NULL, *mpath = NULL;
	const char *id, *state;
	char **ids = NULL;
	size_t nr_ids = 0;
	int ret;

	/* one session: the upload, the run and the clean-up on one SSH session */
	ret = cli_session_open(&s, &restore_args);
	if (ret) {
		cli_session_close(&s);
		return ret;
	}
	cp = inventory_control_plane(s.inv);
	if (!cp) {
		fprintf(stderr, "provision restore: the inventory has no control plane\n");
		ret = EXIT_USAGE;
		goto out;
	}
	state = s.state_dir;
	if (nr_pos && strchr(pos[0], '/')) {
		size_t n = strlen(pos[0]);
		while (n > 1 && pos[0][n - 1] == '/')
			n--;
		dir = xstrndup(pos[0], n);
	} else {
		char *bdir = xasprintf("%s/private/backups", state);
		ids = list_backups(bdir, &nr_ids, false);
		if (nr_pos && !is_backup_id(pos[0])) {
			fprintf(stderr, "provision restore: '%s' is neither a backup id "
					"(20261127T101500Z) nor a path; nothing was changed\n",
				pos[0]);
			ret = EXIT_USAGE;
		} else if (!nr_pos && !nr_ids) {
			fprintf(stderr, "provision restore: no backup in '%s'; nothing was changed\n"
					"  hint: provision backup -i %s takes one\n",
				bdir, restore_args.inventory);
			ret = EXIT_USAGE;
		} else {
			dir = xasprintf("%s/%s", bdir, nr_pos ? pos[0] : ids[nr_ids - 1]);
		}
		free(bdir);
		if (ret)
			goto out;
	}
	id = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	mpath = xasprintf("%s/manifest", dir);
	if (read_file(mpath, &manifest) < 0) {
		fprintf(stderr, "provision restore: cannot read '%s': %s; nothing was changed\n",
			mpath, strerror(errno));
		ret = EXIT_USAGE;
		goto out;
	}
	if (check_file(dir, "snapshot.db", manifest.buf, SNAPSHOT_MAX, &snap, &err) < 0 ||
	    backup_snapshot_verify((const unsigned char *)snap.buf, snap.len, &err) < 0 ||
	    check_file(dir, "pki.tar", manifest.buf, PKI_MAX, &pki, &err) < 0) {
		fprintf(stderr,
			"provision restore: %s: %s; refused before reaching any node: nothing was "
			"changed\n",
			dir, err.msg);
		ret = EXIT_USAGE;
		goto out;
	}
	printf("restore: backup %s checked here: snapshot %zu bytes (etcd's hash and the "
	       "recorded SHA-256 match), PKI %zu bytes\n",
	       id, snap.len, pki.len);
	fflush(stdout); /* before any node's ssh is started: it must not inherit the line */
	strbuf_addf(&q,
		    "restore: on %s (%s), /etc/kubernetes/pki and /var/lib/etcd are replaced by "
		    "backup %s (what is there is moved aside to NAME.before-restore-TIME); etcd "
		    "then holds the cluster as it was at the backup: objects made since are "
		    "gone%s.  Go on?",
		    cp->name, cp->address, id,
		    inventory_nr_control_planes(s.inv) > 1
			? "; a new one-member etcd that the other control planes, reinstalled, "
			  "join again with provision up"
			: "");
	if (!restore_args.yes && !isatty(STDIN_FILENO))
		fprintf(stderr, "%.*s\n", (int)(q.len - strlen("  Go on?")), q.buf);
	ret = cli_confirm("restore", restore_args.yes, q.buf);
	if (ret)
		goto out;

	/* Upload; the role's steps do the rest, recorded like any run. */
	ret = cli_session_secrets(&s);
	if (ret)
		goto out;
	ret = others_reinstalled(&s, cp);
	if (ret)
		goto out;
	if (node_run(&s, cp, "etcd-restore", "upload",
		     "umask 077 && mkdir -p " RESTORE_DIR " && chmod 0700 " RESTORE_DIR
		     " && rm -f " RESTORE_DIR "/pki.done",
		     &err) < 0 ||
	    cli_session_put_file(&s, cp, "etcd-restore", "upload snapshot.db",
				 RESTORE_DIR "/snapshot.db", snap.buf, snap.len, 0600, &err) < 0 ||
	    cli_session_put_file(&s, cp, "etcd-restore", "upload pki.tar", RESTORE_DIR "/pki.tar",
				 pki.buf, pki.len, 0600, &err) < 0) {
		fprintf(stderr, "provision restore: %s: cannot upload the backup: %s\n", cp->name,
			err.msg);
		ret = EXIT_NODE_FAILED;
		goto out;
	}
	free(restore_id_env);
	restore_id_env = xasprintf("PROVISION_RESTORE_ID=%s", id);
	restore_env[0] = restore_id_env;
	restore_env[1] = NULL;
	restore_args.env = restore_env;
	restore_args.phase_bits = PHASE_BIT(PHASE_RESTORE);
	restore_args.skip_preflight = true;
	restore_args.select = select_cp;
	restore_args.after = restore_after;
	ret = cli_session_pass(&s, &restore_args);
out:
	wipe(&snap);
	wipe(&pki);
	strbuf_release(&manifest);
	strbuf_release(&q);
	free_ids(ids, nr_ids);
	free(restore_id_env);
	restore_id_env = NULL;
	free(mpath);
	free(dir);
	cli_session_close(&s);
	return ret;
}

const struct cmd cmd_restore = {
	.name = "restore",
	.summary = "put a backup's PKI and etcd data onto the (reinstalled) control plane",
	.usage = "-i FILE [BACKUP] [--yes] [--state DIR] [--no-tui] [-o json]",
	.description =
		"BACKUP: an id from private/backups/ of the state folder, or a backup\n"
		"folder's path; default the newest.  The snapshot is checked here first\n"
		"(whole pages, etcd's appended SHA-256, the SHA-256 and size the backup\n"
		"recorded): a corrupt or truncated one is refused before any node is\n"
		"reached (exit 2).  Then, after confirmation (--yes when not on a\n"
		"terminal), on the control plane: /etc/kubernetes/pki from the backup and\n"
		"etcd's data restored into a fresh /var/lib/etcd (etcdutl, or etcdctl for\n"
		"etcd 3.4, snapshot restore, member name and peer URL as kubeadm's);\n"
		"what was there is moved aside, never deleted.  Several control planes:\n"
		"onto the first, as a new one-member etcd with the shared PKI (the CAs,\n"
		"the service-account keys); the others must be reinstalled (refused\n"
		"while one holds an etcd member); provision up then joins them again.",
	.options = restore_options,
	.exec = restore_exec,
	.min_pos = 0,
	.max_pos = 1,
};
