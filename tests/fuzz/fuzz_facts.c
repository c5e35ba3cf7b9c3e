/* libFuzzer harness: the facts parser (facts.sh output, nvidia-smi CSV lines in it). */
#include <stddef.h>
#include <stdint.h>

#include "facts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct facts f;
	struct error err = {0};
	size_t i;

	if (facts_parse(&f, (const char *)data, size, &err) == 0) {
		for (i = 0; i < f.nr_gpus; i++)
			(void)gpu_short_model(f.gpus[i].model);
		(void)facts_package(&f, "kubeadm");
		(void)facts_sysctl(&f, "net.ipv4.ip_forward");
		facts_release(&f);
	}
	return 0;
}
