/*
 * protocol: the lines a step prints to talk to provision (roles/README.md):
 *   ::set NAME=VALUE      ::secret NAME=VALUE     (NAME or NAME@NODE)
 *   ::skip REASON         ::hint TEXT             ::fetch /PATH NAME
 *   ::progress image=REF done=BYTES total=BYTES   (a pull's bytes so far)
 *   ::note TEXT
 * A pure parser, so that it can be fuzzed; plan.c acts on the result.
 */
#ifndef PROVISION_PROTOCOL_H
#define PROVISION_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

enum protocol_kind {
	PROTOCOL_NONE = 0, /* an ordinary output line */
	PROTOCOL_SET,
	PROTOCOL_SECRET,
	PROTOCOL_SKIP,
	PROTOCOL_HINT,
	PROTOCOL_FETCH,
	PROTOCOL_PROGRESS,
	PROTOCOL_NOTE,	    /* shown with the result of a step that changed */
	PROTOCOL_MALFORMED, /* looks like a protocol line but is not valid: `error` says why */
};

struct protocol_msg {
	enum protocol_kind kind;
	/* Pointers into the line (not NUL-terminated) with their lengths. */
	const char *name,
	    *value; /* SET/SECRET: NAME, VALUE; FETCH: PATH, NAME; SKIP/HINT/NOTE: value */
	size_t name_len, value_len;
	/* PROGRESS: name = the image reference; bytes so far and in all (0: not known yet) */
	uint64_t done, total;
	const char *error; /* MALFORMED: a static message */
};

/*
 * Bounds of a ::progress line: the reference (checked for its characters
 * here, for being one of the node's images by the caller) and the byte
 * counts (decimal, at most 2^53: no image is 9 PB).
 */
#define PROTOCOL_PROGRESS_REF_MAX   512
#define PROTOCOL_PROGRESS_BYTES_MAX (UINT64_C(1) << 53)

/* Parse one output line (without its newline). */
void protocol_parse(struct protocol_msg *m, const char *line, size_t len);

#endif
