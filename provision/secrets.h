/*
 * secrets: values that must never be shown, logged or recorded -- handed
 * with `::secret`, the sudo password, join tokens, hub secrets.
 *
 * Every line of node output passes through secrets_redact() before it
 * becomes an event, so no view, log or record can see a registered value.
 * Values shorter than SECRETS_MIN_LEN are refused (they would redact
 * ordinary words); callers treat such a value as an error.
 *
 * Threading: all functions may be called from any thread (one mutex).
 */
#ifndef PROVISION_SECRETS_H
#define PROVISION_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

#define SECRETS_MIN_LEN 6
#define SECRETS_MASK "[secret]"
/* A value a node hands as a secret: at least this long (secrets_handed_ok). */
#define SECRETS_HANDED_MIN_LEN 16

struct secrets;

struct secrets *secrets_new(void);
/* Wipe every value and free; accepts NULL. */
void secrets_free(struct secrets *s);
/*
 * Whether a value a node hands with ::secret may be registered: what is
 * registered is masked in every line, message and record of the run, so a
 * node must not make provision hide words ("failed").  A secret a step
 * makes (a token, a key, a command that carries one) is at least
 * SECRETS_HANDED_MIN_LEN bytes, has letters and either digits or no
 * space (a bootstrap token is [a-z0-9]{6}.[a-z0-9]{16}: about 1 in 1300
 * has no digit), at least 8 different characters, and no control
 * character (TAB included): a phrase is not.  0, or -1 with why in err.
 * The admin's own secrets (the
 * sudo password, a file's client secret) are not held to it.
 */
int secrets_handed_ok(const char *value, size_t len, struct error *err);
/* Register a value; returns 0, or -1 when it is too short to redact safely. */
int secrets_add(struct secrets *s, const char *value, size_t len);
/* Replace every occurrence of a registered value in sb with SECRETS_MASK. */
void secrets_redact(struct secrets *s, struct strbuf *sb);
/*
 * Node text as it enters provision: cleaned (util.h text_make_safe) and
 * redacted, before the cleaning (a value holding a TAB, which the cleaning
 * of an unsafe line expands) and after it (a value split by escape
 * sequences, whole again once they are dropped).  s may be NULL (cleaned
 * only).
 */
void secrets_scrub(struct secrets *s, struct strbuf *sb);
/* The same on a heap string (NULL stays NULL); *text is replaced when it changes. */
void secrets_scrub_str(struct secrets *s, char **text);
/* Number of registered values. */
size_t secrets_count(struct secrets *s);

#endif
