/* secrets: see secrets.h. */
#include "secrets.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct secrets {
	pthread_mutex_t lock;
	char **values;
	size_t *lens;
	size_t nr, alloc;
};

struct secrets *secrets_new(void)
{
	struct secrets *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void secrets_free(struct secrets *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr; i++) {
		explicit_bzero(s->values[i], s->lens[i]);
		free(s->values[i]);
	}
	free(s->values);
	free(s->lens);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int secrets_add(struct secrets *s, const char *value, size_t len)
{
	size_t i, alloc;

	if (len < SECRETS_MIN_LEN)
		return -1;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nr; i++) {
		if (s->lens[i] == len && !memcmp(s->values[i], value, len)) {
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
	}
	alloc = s->alloc;
	ALLOC_GROW(s->values, s->nr + 1, s->alloc);
	s->lens = xgrow(s->lens, s->nr + 1, &alloc, sizeof(*s->lens));
	/* Exactly len bytes: a value may hold a NUL (xstrndup would stop there). */
	s->values[s->nr] = xmalloc(len + 1);
	memcpy(s->values[s->nr], value, len);
	s->values[s->nr][len] = '\0';
	s->lens[s->nr++] = len;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

size_t secrets_count(struct secrets *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nr;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void secrets_redact(struct secrets *s, struct strbuf *sb)
{
	size_t i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nr; i++) {
		char *hit;
		size_t from = 0;

		while (from < sb->len &&
		       (hit = memmem(sb->buf + from, sb->len - from, s->values[i], s->lens[i]))) {
			struct strbuf out = STRBUF_INIT;
			size_t at = (size_t)(hit - sb->buf);

			strbuf_add(&out, sb->buf, at);
			strbuf_addstr(&out, SECRETS_MASK);
			from = out.len;
			strbuf_add(&out, hit + s->lens[i], sb->len - at - s->lens[i]);
			explicit_bzero(sb->buf, sb->len);
			strbuf_release(sb);
			*sb = out;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void secrets_scrub(struct secrets *s, struct strbuf *sb)
{
	secrets_redact(s, sb);
	if (text_make_safe(sb))
		secrets_redact(s, sb);
}

void secrets_scrub_str(struct secrets *s, char **text)
{
	struct strbuf sb = STRBUF_INIT;
	bool unsafe;

	if (!*text)
		return;
	unsafe = text_unsafe(*text, strlen(*text)) != NULL;
	if (!unsafe && (!s || !secrets_count(s)))
		return;
	strbuf_addstr(&sb, *text);
	secrets_redact(s, &sb);
	if (unsafe && text_make_safe(&sb))
		secrets_redact(s, &sb);
	if (sb.len == strlen(*text) && !memcmp(sb.buf, *text, sb.len)) {
		strbuf_release(&sb);
		return;
	}
	explicit_bzero(*text, strlen(*text));
	free(*text);
	*text = strbuf_detach(&sb, NULL);
}

int secrets_handed_ok(const char *value, size_t len, struct error *err)
{
	bool seen[256] = {false}, letter = false, digit = false;
	size_t i, distinct = 0;

	if (len < SECRETS_HANDED_MIN_LEN)
		return error_set(err, -1, "shorter than %d characters", SECRETS_HANDED_MIN_LEN);
	if (text_unsafe(value, len) || memchr(value, '\t', len))
		return error_set(err, -1, "holds control characters");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];
		letter = letter || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		digit = digit || (c >= '0' && c <= '9');
		distinct += !seen[c];
		seen[c] = true;
	}
	if (!letter || (!digit && memchr(value, ' ', len)) || distinct < 8)
		return error_set(err, -1,
				 "does not look like a secret (letters, and digits or no space; at "
				 "least 8 different characters): words are not registered");
	return 0;
}
