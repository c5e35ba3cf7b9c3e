/* libFuzzer harness: the inventory parser and validator on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inventory *inv = NULL;
	struct diag_list dl;
	size_t i;

	diag_list_init(&dl);
	if (inventory_load_buffer(&inv, "fuzz.yaml", (const char *)data, size, &dl) == 0) {
		/* A valid inventory has exactly one control plane. */
		if (!inventory_control_plane(inv))
			abort();
		inventory_free(inv);
	} else if (!dl.errors) {
		abort(); /* a failure must say why */
	}
	for (i = 0; i < dl.nr; i++)
		free(diag_format(&dl.items[i]));
	diag_list_release(&dl);
	return 0;
}
