/*
 * oci: the images of `provision fetch --images` -- a client of the OCI
 * distribution API (what registries speak: /v2/REPO/manifests/REF,
 * /v2/REPO/blobs/DIGEST, token auth as WWW-Authenticate: Bearer asks) and
 * the bundle it fills in this machine's cache, which `provision up`
 * imports into the nodes that lack an image (`ctr -n k8s.io images import`).
 *
 * Bundle (under the artifact cache, artifacts.h):
 *   CACHE/images/blobs/sha256/HEX   every manifest, config and layer, by digest,
 *                                   each verified (size and SHA-256) before it
 *                                   gets its name; HEX.partial while it comes
 *   CACHE/images/refs/KEY           one image for one platform: "ref REF",
 *                                   "platform linux/ARCH", "manifest DIGEST
 *                                   MEDIATYPE SIZE", "bytes N" (config and
 *                                   layers); KEY = SHA-256 of "REF ARCH"
 * A manifest list / OCI index is resolved to the platform's manifest (the
 * nodes' architectures); only that platform's blobs are fetched.  Bounds: a
 * manifest 4 MiB, OCI_LAYERS_MAX layers, each blob its declared size (at
 * most OCI_BLOB_MAX), timeouts per request and a stall limit.
 *
 * The archive a node imports is made on the fly from the bundle: an OCI
 * image layout (oci-layout, index.json naming the image with
 * io.containerd.image.name, blobs/sha256/...) as one tar stream, never a
 * file here.
 *
 * Threading: oci_fetch() on one thread at a time per cache entry (the
 * CLI's main thread); oci_bundle_find() and oci_archive_write() are
 * read-only and may run on any worker.  Tokens and passwords live in
 * memory only, never in a message.
 */
#ifndef PROVISION_OCI_H
#define PROVISION_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define OCI_MANIFEST_MAX (4u << 20)
#define OCI_LAYERS_MAX	 256
#define OCI_BLOB_MAX	 (UINT64_C(64) << 30)

/* A normalised reference (images_normalize) in pieces. */
struct oci_ref {
	char *registry;	  /* "registry.k8s.io", "docker.io" */
	char *repository; /* "pause", "library/traefik" */
	char *tag;	  /* NULL when by digest only */
	char *digest;	  /* "sha256:HEX" or NULL */
};

int oci_ref_parse(struct oci_ref *r, const char *ref, struct error *err);
void oci_ref_release(struct oci_ref *r);

/* Where a registry is reached: mirrors in order, then (usually) the registry itself. */
struct oci_endpoint {
	const char *url; /* "https://registry-1.docker.io", "http://198.18.0.1:5000" */
	const char *ca_pem;
	size_t ca_len;
	bool insecure;	      /* skip_verify */
	const char *username; /* with password: Basic, or for the token service */
	const char *password;
};

struct oci_opts {
	const char *cache; /* the artifact cache */
	/*
	 * The endpoints for a registry host, in the order to try them; NULL
	 * (or none returned): https://HOST (docker.io: registry-1.docker.io).
	 */
	size_t (*endpoints)(void *ctx, const char *registry, const struct oci_endpoint **out);
	int connect_timeout_ms; /* 0: 30 s */
	int stall_timeout_s;	/* 0: 60 s */
	int blob_timeout_s;	/* one blob's download in all; 0: none */
	uint64_t max_blob_size; /* a larger blob is refused before a byte comes; 0: no bound */
	/* a blob coming in: its digest, bytes so far and in all */
	void (*progress)(void *ctx, const char *ref, const char *digest, uint64_t have,
			 uint64_t total);
	void *ctx;
};

/* One image of the bundle, for one platform. */
struct oci_image {
	char ref[520];
	char arch[16];	     /* "amd64", "arm64" */
	char manifest[72];   /* "sha256:HEX" of the platform's manifest */
	char media_type[96]; /* of that manifest */
	uint64_t manifest_size;
	uint64_t bytes;	    /* config and layers */
	unsigned blobs;	    /* config and layers */
	bool fetched;	    /* oci_fetch: something was downloaded (else all was there) */
	char endpoint[256]; /* oci_fetch: where it came from */
};

/*
 * Make REF for linux/ARCH present in the bundle: the manifest resolved
 * (through an index), every blob present and verified.  0, or -1 with why
 * in err: not found, unauthorized, rate limited (with Retry-After), TLS,
 * the network, a digest that does not match, a bound passed.
 */
int oci_fetch(const struct oci_opts *o, const char *ref, const char *arch, struct oci_image *out,
	      struct error *err);

/* Whether the bundle holds REF for ARCH, complete (every blob there at its size): 1, else 0. */
int oci_bundle_find(const char *cache, const char *ref, const char *arch, struct oci_image *out);

/* The size of img's archive in bytes (what oci_archive_write() writes). */
int oci_archive_size(const char *cache, const struct oci_image *img, uint64_t *size,
		     struct error *err);

/*
 * Write img's archive (a tar: an OCI image layout holding this image
 * alone, named img->ref) to `write` in pieces of at most `chunk` bytes.
 * The blobs are checked against their digests as they are read; a
 * mismatch (a cache changed under us) is an error.  `write` returns 0, or
 * non-zero to stop (its value is returned).
 */
int oci_archive_write(const char *cache, const struct oci_image *img, size_t chunk,
		      int (*write)(void *ctx, const void *p, size_t n), void *ctx,
		      struct error *err);

/* The value of a WWW-Authenticate challenge's parameter (realm, service, scope), or NULL; caller
 * frees. */
char *oci_challenge_param(const char *challenge, const char *name);

#endif
