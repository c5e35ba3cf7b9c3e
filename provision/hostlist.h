/*
 * hostlist: pdsh-style host ranges.
 *
 * Expansion: "b-[2-4,7]" -> b-2 b-3 b-4 b-7; "192.168.10.[52-54]" likewise;
 * zero padding is kept ("n[01-03]" -> n01 n02 n03): an item whose lower
 * bound is written with a leading zero is padded to that bound's width.
 * At most one bracket group per pattern (enough for node names and
 * addresses; the error says so).  Compression is the reverse, used by
 * `run --group` and by messages about many nodes ("b-[2-4,7]").
 *
 * Pure functions; no shared state.
 */
#ifndef PROVISION_HOSTLIST_H
#define PROVISION_HOSTLIST_H

#include <stddef.h>

struct error;

/*
 * Upper bound on the items one pattern may expand to, and on an inventory's
 * nodes: 5000 is the largest cluster Kubernetes supports ("Considerations
 * for large clusters").  Beyond it a range is a typo, and expanding it
 * would only cost time (the fuzzer found 100000-name ranges taking seconds).
 */
#define HOSTLIST_MAX 5000

/*
 * Expand `pattern` into a NULL-terminated array of strings (*out, *nr).
 * A pattern without brackets expands to itself.  Returns 0, or -1 with a
 * message in err (empty or malformed range, reversed bounds, too many);
 * err->hint then says what a range looks like.  *out is NULL on failure.
 * The caller frees with hostlist_free().
 */
int hostlist_expand(char ***out, size_t *nr, const char *pattern, struct error *err);
/* Free an array from hostlist_expand(); accepts NULL. */
void hostlist_free(char **list);

/*
 * Compress names into "prefix[a-b,c]" groups joined by ","; caller frees.
 * Names are grouped by the text around their last run of digits (and the
 * zero padding of those digits); groups appear in the order of their first
 * name, numbers ascending, duplicates dropped.  Expanding the result with
 * hostlist_expand() (one group at a time) gives back the same set.
 */
char *hostlist_compress(const char *const *names, size_t nr);

/*
 * Split a comma-separated list of patterns at the commas outside brackets
 * ("b-[2-4,7],a-1" -> "b-[2-4,7]" "a-1").  Returns a NULL-terminated array
 * of fresh strings (free with hostlist_free()); empty items are kept so the
 * caller can reject them.
 */
char **hostlist_split(const char *list, size_t *nr);

#endif
