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
