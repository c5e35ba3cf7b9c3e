/*
 * libFuzzer harness: the check of a kubeconfig fetched from a node
 * (http_kubeconfig_check), which reads it with the schema reader (schema.c:
 * load, one document, repeated keys, key look-ups) -- node text, untrusted.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err = {0};
	size_t i;

	if (http_kubeconfig_check((const char *)data, size, "10.0.0.1", 6443, &err) == 0)
		return 0;
	if (!err.msg[0])
		abort(); /* a refusal must say why */
	/* node text reaches the screen cleaned (text_make_safe keeps a tab) */
	for (i = 0; err.msg[i]; i++)
		if (((unsigned char)err.msg[i] < 0x20 && err.msg[i] != '\t') || err.msg[i] == 0x7f)
			abort();
	return 0;
}
