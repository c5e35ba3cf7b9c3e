/*
 * backup: etcd backups of the control plane (provision backup, restore,
 * and upgrade's backup first).  The node's work is roles/etcd-backup and
 * roles/etcd-restore, run by the same engine as up; this module moves the
 * snapshot and the PKI between the node and this machine's state folder:
 *
 *   STATE/private/backups/ID/snapshot.db   etcdctl's snapshot (mode 0600)
 *   STATE/private/backups/ID/pki.tar       /etc/kubernetes/pki (0600)
 *   STATE/private/backups/ID/manifest      id, node, SHA-256 and size of both
 *
 * ID is the UTC time of the backup (20261127T101500Z), so names sort by
 * age.  A backup is written as ID.tmp and renamed when complete; the last
 * cluster.backups_keep are kept.  private/ never enters the run record: the
 * record gets a `backup` file with the id and the hashes and sizes only.
 * Main thread only.
 */
#ifndef PROVISION_CLI_BACKUP_H
#define PROVISION_CLI_BACKUP_H

#include <stddef.h>

#include "../sha256.h"
#include "../util.h"

/* Defined in session.h. */
struct cli_plan_args;
struct cli_session;

/*
 * Take a backup in session s (one pass) with the view options of `view`
 * (output, no_tui, verbose; its other fields are ignored).  Returns an
 * enum exit_status; prints what it did.
 */
int cli_backup_pass(struct cli_session *s, const struct cli_plan_args *view);

/*
 * Whether data is a whole etcd snapshot as `etcdctl snapshot save` writes
 * it: a bbolt database (magic 0xED0CDAED, whole pages) followed by the
 * SHA-256 of the database.  0, or -1 with the reason in err.
 */
int backup_snapshot_verify(const unsigned char *data, size_t len, struct error *err);

/*
 * The same on a snapshot that arrives in pieces (backup streams it to disk):
 * init, update with every piece in order, then final (0, or -1 with the
 * reason in err).  Bounded memory whatever the size.
 */
struct backup_snapshot_check {
	struct transport_sha256 sha; /* of the database: every byte but the last 32 */
	unsigned char head[32];	     /* the first 32 bytes (bbolt's meta) */
	unsigned char tail[32];	     /* the last bytes seen, up to 32: etcd's hash */
	size_t tail_len;
	unsigned long long len;
};
void backup_snapshot_check_init(struct backup_snapshot_check *c);
void backup_snapshot_check_update(struct backup_snapshot_check *c, const unsigned char *p,
				  size_t n);
int backup_snapshot_check_final(struct backup_snapshot_check *c, struct error *err);

#endif
