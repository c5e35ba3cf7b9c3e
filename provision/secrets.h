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

struct secrets;

struct secrets *secrets_new(void);
/* Wipe every value and free; accepts NULL. */
void secrets_free(struct secrets *s);
/* Register a value; returns 0, or -1 when it is too short to redact safely. */
int secrets_add(struct secrets *s, const char *value, size_t len);
/* Replace every occurrence of a registered value in sb with SECRETS_MASK. */
void secrets_redact(struct secrets *s, struct strbuf *sb);
/* Number of registered values. */
size_t secrets_count(struct secrets *s);

#endif
