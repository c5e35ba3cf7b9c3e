/*
 * hostlist: pdsh-style host ranges.
 *
 * Expansion: "b-[2-4,7]" -> b-2 b-3 b-4 b-7; "192.168.10.[52-54]" likewise;
 * zero padding is kept ("n[01-03]" -> n01 n02 n03).  At most one bracket
 * group per pattern (enough for node names and addresses; say so in errors).
 * Compression is the reverse, used by `run --group` ("b-[2-4,7]").
 *
 * Pure functions; no shared state.
 */
#ifndef PROVISION_HOSTLIST_H
#define PROVISION_HOSTLIST_H

#include <stddef.h>

struct error;

/* Upper bound on the items one pattern may expand to. */
#define HOSTLIST_MAX 100000

/*
 * Expand `pattern` into a NULL-terminated array of strings (*out, *nr).
 * A pattern without brackets expands to itself.  Returns 0, or -1 with a
 * message in err (empty or malformed range, reversed bounds, too many).
 * The caller frees with hostlist_free().
 */
int hostlist_expand(char ***out, size_t *nr, const char *pattern, struct error *err);
void hostlist_free(char **list);

/* Compress names into "prefix[a-b,c]" groups joined by ","; caller frees. */
char *hostlist_compress(const char *const *names, size_t nr);

#endif
