/*
 * libFuzzer harness: `kubectl get nodes -o json` as the hub profiles read it
 * (profiles_nodes_from_json: allocatable quantities, provision.dev/gpus,
 * GPU feature discovery labels, taints, conditions), then the profiles
 * generated from whatever nodes it found.  Checked: every profile's
 * guarantee is at most its limit, every GPU profile asks for at least one GPU.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "profiles.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile_node *n = NULL;
	struct hub_profile *p = NULL;
	struct error err = {0};
	size_t nr = 0, nr_p = 0, i;

	if (profiles_nodes_from_json(&n, &nr, (const char *)data, size, &err) != 0)
		return 0;
	profiles_generate(&p, &nr_p, n, nr);
	for (i = 0; i < nr_p; i++) {
		if (p[i].cpu_guarantee_milli > p[i].cpu_limit_milli ||
		    p[i].mem_guarantee_mib > p[i].mem_limit_mib || !p[i].slug || !p[i].display_name)
			abort();
		if (p[i].selector_key && !p[i].gpus)
			abort();
	}
	profiles_free(p, nr_p);
	profiles_nodes_free(n, nr);
	return 0;
}
