/* libFuzzer harness: the step protocol (::set, ::secret, ::skip, ::hint, ::fetch, ::progress). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "secrets.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	struct protocol_msg m;

	protocol_parse(&m, line, size);
	switch (m.kind) {
	case PROTOCOL_SET:
	case PROTOCOL_SECRET:
	case PROTOCOL_FETCH:
		/* The pieces lie inside the line. */
		if (m.name < line || m.name + m.name_len > line + size || m.value < line ||
		    m.value + m.value_len > line + size || !m.name_len)
			abort();
		break;
	case PROTOCOL_PROGRESS:
		/* the reference lies in the line, bounded, printable; the counts bounded and
		 * ordered */
		if (m.name < line || m.name + m.name_len > line + size || !m.name_len ||
		    m.name_len > PROTOCOL_PROGRESS_REF_MAX)
			abort();
		for (size_t i = 0; i < m.name_len; i++)
			if ((unsigned char)m.name[i] <= ' ' || (unsigned char)m.name[i] >= 0x7f)
				abort();
		if (m.done > PROTOCOL_PROGRESS_BYTES_MAX || m.total > PROTOCOL_PROGRESS_BYTES_MAX ||
		    (m.total && m.done > m.total))
			abort();
		break;
	case PROTOCOL_MALFORMED:
		if (!m.error)
			abort();
		break;
	default:
		break;
	}
	if (m.kind == PROTOCOL_SECRET && m.value_len >= SECRETS_MIN_LEN) {
		/* What is registered never comes out of the redactor. */
		struct secrets *s = secrets_new();
		struct strbuf sb = STRBUF_INIT;
		secrets_add(s, m.value, m.value_len);
		strbuf_add(&sb, line, size);
		strbuf_add(&sb, m.value, m.value_len);
		secrets_redact(s, &sb);
		/*
		 * The mask itself may contain the value ("secret" in "[secret]"):
		 * take the masks out, then nothing of the value may be left.
		 */
		{
			struct strbuf rest = STRBUF_INIT;
			const char *p = sb.buf, *end = sb.buf + sb.len, *hit;
			size_t ml = strlen(SECRETS_MASK);
			while ((hit = memmem(p, (size_t)(end - p), SECRETS_MASK, ml))) {
				strbuf_add(&rest, p, (size_t)(hit - p));
				strbuf_addch(&rest, '\n');
				p = hit + ml;
			}
			strbuf_add(&rest, p, (size_t)(end - p));
			if (memmem(rest.buf, rest.len, m.value, m.value_len) && !memchr(m.value, '\n', m.value_len))
				abort();
			strbuf_release(&rest);
		}
		strbuf_release(&sb);
		secrets_free(s);
	}
	return 0;
}
