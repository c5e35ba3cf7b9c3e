/*
 * tests/tools/oci: provision's OCI client and bundle (provision/oci.h) from
 * the shell, for tests that put a real registry in front of it and a real
 * containerd behind it.
 *
 *   oci fetch CACHE REF ARCH [ENDPOINT...]   oci_fetch(); ENDPOINT: URL, or
 *                                            URL,insecure / URL,user:password
 *   oci find CACHE REF ARCH                  exit 0 when the bundle has it
 *   oci archive CACHE REF ARCH               the import archive on stdout
 *   oci size CACHE REF ARCH                  its size (what archive writes)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oci.h"
#include "util.h"

static int to_stdout(void *ctx, const void *p, size_t n)
{
	(void)ctx;
	return write_all(STDOUT_FILENO, p, n) < 0 ? 1 : 0;
}

struct eps {
	struct oci_endpoint *v;
	size_t n;
};

static size_t endpoints(void *ctx, const char *registry, const struct oci_endpoint **out)
{
	struct eps *e = ctx;
	(void)registry;
	*out = e->v;
	return e->n;
}

int main(int argc, char **argv)
{
	struct oci_image img;
	struct error err = {0};
	int i;

	if (argc < 5) {
		fprintf(stderr,
			"usage: oci fetch|find|archive|size CACHE REF ARCH [ENDPOINT...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "fetch")) {
		struct eps e = {calloc((size_t)argc, sizeof(struct oci_endpoint)), 0};
		struct oci_opts o = {.cache = argv[2], .endpoints = endpoints, .ctx = &e};
		for (i = 5; i < argc; i++) {
			char *comma = strchr(argv[i], ',');
			struct oci_endpoint *p = &e.v[e.n++];
			if (comma) {
				*comma = '\0';
				if (!strcmp(comma + 1, "insecure")) {
					p->insecure = true;
				} else {
					char *colon = strchr(comma + 1, ':');
					if (colon) {
						*colon = '\0';
						p->password = colon + 1;
					}
					p->username = comma + 1;
				}
			}
			p->url = argv[i];
		}
		if (!e.n)
			o.endpoints = NULL;
		if (getenv("OCI_STALL"))
			o.stall_timeout_s = atoi(getenv("OCI_STALL"));
		if (oci_fetch(&o, argv[3], argv[4], &img, &err) < 0) {
			fprintf(stderr, "oci fetch: %s\n", err.msg);
			free(e.v);
			return 1;
		}
		printf("%s linux/%s %s %s %llu bytes %u blobs %s from %s\n", img.ref, img.arch,
		       img.manifest, img.media_type, (unsigned long long)img.bytes, img.blobs,
		       img.fetched ? "fetched" : "cached", img.endpoint);
		free(e.v);
		return 0;
	}
	if (!oci_bundle_find(argv[2], argv[3], argv[4], &img)) {
		fprintf(stderr, "oci: %s (linux/%s) is not in the bundle\n", argv[3], argv[4]);
		return 1;
	}
	if (!strcmp(argv[1], "find"))
		return 0;
	if (!strcmp(argv[1], "size")) {
		uint64_t size;
		if (oci_archive_size(argv[2], &img, &size, &err) < 0) {
			fprintf(stderr, "oci size: %s\n", err.msg);
			return 1;
		}
		printf("%llu\n", (unsigned long long)size);
		return 0;
	}
	if (!strcmp(argv[1], "archive")) {
		if (oci_archive_write(argv[2], &img, 1 << 20, to_stdout, NULL, &err) != 0) {
			fprintf(stderr, "oci archive: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	fprintf(stderr, "oci: unknown command '%s'\n", argv[1]);
	return 2;
}
