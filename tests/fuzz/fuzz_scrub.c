/*
 * libFuzzer harness: state_scrub(), the last line of defence before anything
 * reaches the state folder or a bundle: kubeadm's join lines (--token,
 * --certificate-key), `key: value` lines whose key names a secret
 * (kubeconfigs, YAML, logs) and PEM private key blocks.  Checked:
 * scrubbing twice changes nothing the second time (a mask is never taken
 * for a secret).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf sb = STRBUF_INIT, again = STRBUF_INIT;

	strbuf_add(&sb, (const char *)data, size);
	(void)state_scrub(&sb);
	strbuf_add(&again, sb.buf, sb.len);
	if (state_scrub(&again) != 0 || again.len != sb.len || memcmp(again.buf, sb.buf, sb.len))
		abort();
	strbuf_release(&again);
	strbuf_release(&sb);
	return 0;
}
