/* protocol: see protocol.h. */
#include "protocol.h"

#include <ctype.h>
#include <string.h>

/* NAME, or NAME@NODE (a value for that node only). */
static int valid_set_name(const char *s, size_t len)
{
	const char *at = memchr(s, '@', len);
	size_t i, name_len = at ? (size_t)(at - s) : len;

	if (!name_len || name_len > 64 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (i = 0; i < name_len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	if (at) {
		if (len - name_len - 1 == 0 || len - name_len - 1 > 63)
			return 0;
		for (i = name_len + 1; i < len; i++)
			if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
				return 0;
	}
	return 1;
}

static int prefix(const char *line, size_t len, const char *p)
{
	size_t n = strlen(p);
	return len > n && !memcmp(line, p, n);
}

/* A decimal byte count: digits only, no leading zero but "0", at most 2^53. */
static int parse_bytes(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len || len > 16 || (len > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > PROTOCOL_PROGRESS_BYTES_MAX)
		return -1;
	*out = v;
	return 0;
}

/* "image=REF done=N total=N": each key once, in any order, one blank between. */
static void parse_progress(struct protocol_msg *m, const char *p, size_t len)
{
	const char *end = p + len;
	unsigned seen = 0;

	m->kind = PROTOCOL_MALFORMED;
	m->error = "malformed '::progress image=REF done=BYTES total=BYTES' line";
	while (p < end) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *w_end = sp ? sp : end;
		const char *eq = memchr(p, '=', (size_t)(w_end - p));
		size_t kl, vl, i;

		if (!eq)
			return;
		kl = (size_t)(eq - p);
		vl = (size_t)(w_end - eq - 1);
		if (kl == 5 && !memcmp(p, "image", 5) && !(seen & 1)) {
			if (!vl || vl > PROTOCOL_PROGRESS_REF_MAX)
				return;
			for (i = 0; i < vl; i++) {
				unsigned char c = (unsigned char)eq[1 + i];
				if (c <= ' ' || c >= 0x7f)
					return;
			}
			m->name = eq + 1;
			m->name_len = vl;
			seen |= 1;
		} else if (kl == 4 && !memcmp(p, "done", 4) && !(seen & 2)) {
			if (parse_bytes(eq + 1, vl, &m->done) < 0)
				return;
			seen |= 2;
		} else if (kl == 5 && !memcmp(p, "total", 5) && !(seen & 4)) {
			if (parse_bytes(eq + 1, vl, &m->total) < 0)
				return;
			seen |= 4;
		} else {
			return;
		}
		if (!sp)
			break;
		p = sp + 1;
		if (p == end)
			return; /* a trailing blank */
	}
	if (seen != 7 || (m->total && m->done > m->total))
		return;
	m->kind = PROTOCOL_PROGRESS;
	m->error = NULL;
}

void protocol_parse(struct protocol_msg *m, const char *line, size_t len)
{
	memset(m, 0, sizeof(*m));
	if (len < 3 || line[0] != ':' || line[1] != ':')
		return;
	if (prefix(line, len, "::set ") || prefix(line, len, "::secret ")) {
		int secret = line[2] == 's' && line[3] == 'e' && line[4] == 'c';
		const char *p = line + (secret ? 9 : 6);
		const char *eq = memchr(p, '=', len - (size_t)(p - line));

		if (!eq || !valid_set_name(p, (size_t)(eq - p))) {
			m->kind = PROTOCOL_MALFORMED;
			m->error = secret ? "malformed '::secret NAME=VALUE' line"
					  : "malformed '::set NAME=VALUE' line";
			return;
		}
		m->kind = secret ? PROTOCOL_SECRET : PROTOCOL_SET;
		m->name = p;
		m->name_len = (size_t)(eq - p);
		m->value = eq + 1;
		m->value_len = len - (size_t)(eq + 1 - line);
		return;
	}
	if (prefix(line, len, "::skip ") || prefix(line, len, "::hint ") ||
	    prefix(line, len, "::note ")) {
		m->kind = line[2] == 's'   ? PROTOCOL_SKIP
			  : line[2] == 'h' ? PROTOCOL_HINT
					   : PROTOCOL_NOTE;
		m->value = line + 7;
		m->value_len = len - 7;
		return;
	}
	if (prefix(line, len, "::progress ")) {
		parse_progress(m, line + 11, len - 11);
		return;
	}
	if (prefix(line, len, "::fetch ")) {
		const char *path = line + 8;
		const char *sp = memchr(path, ' ', len - 8);
		size_t i, nlen;

		m->kind = PROTOCOL_MALFORMED;
		m->error = "malformed '::fetch /PATH NAME' line (NAME: letters, digits, . _ -)";
		if (!sp || sp == path || path[0] != '/')
			return;
		nlen = len - (size_t)(sp + 1 - line);
		if (!nlen || sp[1] == '.')
			return;
		for (i = 0; i < nlen; i++)
			if (!isalnum((unsigned char)sp[1 + i]) && !strchr("._-", sp[1 + i]))
				return;
		if (memchr(path, '\0', (size_t)(sp - path)))
			return;
		m->kind = PROTOCOL_FETCH;
		m->error = NULL;
		m->name = path;
		m->name_len = (size_t)(sp - path);
		m->value = sp + 1;
		m->value_len = nlen;
	}
}
