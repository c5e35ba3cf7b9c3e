/*
 * artifacts: everything a role needs from outside the lab (the Helm
 * release archive, chart archives...), declared once in a manifest under version control
 * (roles/artifacts.yaml) with its URL and SHA-256, fetched once into a
 * cache on this machine, verified, and pushed to the nodes over SSH by
 * the roles that name them: nodes never need the internet.
 *
 * Manifest (roles/artifacts.yaml): a mapping of names to entries,
 *
 *   helm-linux-amd64:
 *     url: https://get.helm.sh/helm-v3.18.4-linux-amd64.tar.gz
 *     sha256: f8180838...       # 64 hex digits, or `pending` until recorded
 *     description: Helm's release archive
 *
 * The shipped manifest carries the digests the projects publish.  A
 * `pending` hash (a version an administrator chose) is filled in by
 * `provision fetch --record` on a machine that can reach the URL, which
 * trusts that download and says so; `provision up` refuses to push an
 * artifact whose hash is pending.
 *
 * Cache: CACHE/sha256/HEX holds verified artifacts by content, so a file is
 * fetched once whatever its name or cluster; CACHE/partial/NAME is a
 * download in progress (resumed with an HTTP Range request, locked with
 * flock against a second fetch of the same artifact).
 *
 * Threading: the manifest is read-only once loaded and may be shared;
 * artifact_fetch() is for the main thread (it prints nothing itself:
 * progress goes to the caller's callback).
 */
#ifndef PROVISION_ARTIFACTS_H
#define PROVISION_ARTIFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inventory.h"
#include "util.h"

enum {
	ARTIFACT_ERR = -1,
	ARTIFACT_ERR_CHECKSUM = -2, /* what came is not what the manifest pins */
	ARTIFACT_ERR_PENDING = -3,  /* the manifest has no hash for it yet */
	ARTIFACT_ERR_FETCH = -4,    /* the download failed (HTTP status, network, timeout) */
};

struct artifact {
	char *name, *url;
	char *sha256; /* 64 lowercase hex digits; NULL while `pending` */
	char *description;
	unsigned line; /* of its entry in the manifest */
	/* Where the sha256 value sits in the manifest file (artifact_manifest_record). */
	size_t sha_offset, sha_len;
};

struct artifact_manifest {
	char *path;
	struct artifact *items;
	size_t nr;
};

/*
 * Load the manifest at path; a missing file is an empty manifest.  Returns
 * 0, or -1 with every problem in dl (file:line:col).
 */
int artifact_manifest_load(struct artifact_manifest *m, const char *path, struct diag_list *dl);
void artifact_manifest_release(struct artifact_manifest *m);
const struct artifact *artifact_find(const struct artifact_manifest *m, const char *name);

/*
 * The cache folder: `opt` (--cache), else $PROVISION_CACHE, else
 * $XDG_CACHE_HOME/provision/artifacts, else ~/.cache/provision/artifacts;
 * without HOME, /var/cache/provision/artifacts for root and NULL for anyone
 * else (never a folder of /tmp, which every user may write: a file or link
 * put there first would be read or written through).  Caller frees.
 */
char *artifact_cache_dir(const char *opt);

/* The most one artifact may be (bytes), and the longest one fetch may take (seconds, every
 * resumed attempt included), unless the caller says otherwise. */
#define ARTIFACT_MAX_SIZE   ((uint64_t)1 << 30)
#define ARTIFACT_MAX_TIME_S 1800
/* CACHE/sha256/HEX; caller frees. */
char *artifact_cache_path(const char *cache, const char *sha256);

/*
 * Read a cached artifact into out and check its hash again.  Returns 0,
 * ARTIFACT_ERR when it is not in the cache, ARTIFACT_ERR_CHECKSUM when the
 * cached bytes no longer match (the file is then removed).
 */
int artifact_read(const char *cache, const struct artifact *a, struct strbuf *out,
		  struct error *err);

struct artifact_fetch_opts {
	const char *cache;
	int retries;		/* resumed attempts after an interrupted download; 0: 3 */
	int connect_timeout_ms; /* 0: 30 s */
	int stall_timeout_s;	/* 0: 60 s */
	int timeout_s;		/* 0: none */
	uint64_t max_size;	/* bytes; 0: ARTIFACT_MAX_SIZE */
	int max_time_s;		/* the whole fetch, attempts included; 0: ARTIFACT_MAX_TIME_S */
	/* Progress of a download (not called for a cached artifact). */
	void (*progress)(void *ctx, const struct artifact *a, uint64_t have, uint64_t total);
	void *ctx;
};

struct artifact_fetch_result {
	bool cached;	 /* it was already in the cache, verified */
	char sha256[65]; /* of what is in the cache */
	uint64_t size;
	unsigned attempts;     /* downloads started (1 unless it had to resume) */
	uint64_t resumed_from; /* bytes kept from an interrupted download, at the last attempt */
};

/*
 * Make the artifact present and verified in the cache.  For a pinned
 * artifact a checksum mismatch is ARTIFACT_ERR_CHECKSUM naming the URL,
 * the expected and the actual hash (the download is discarded).  For a
 * pending one (a->sha256 NULL) the download is kept under its own hash,
 * given in res->sha256: the caller records it (artifact_manifest_record).
 */
int artifact_fetch(const struct artifact *a, const struct artifact_fetch_opts *o,
		   struct artifact_fetch_result *res, struct error *err);

/*
 * Write sha256 as the hash of artifact `a` into the manifest file (in
 * place of its `pending`, or of an older hash), keeping every other byte.
 */
int artifact_manifest_record(const struct artifact_manifest *m, const struct artifact *a,
			     const char *sha256, struct error *err);

#endif
