/* libFuzzer harness: the parsers of `kubectl get nodes|pods -o json`. */
#include <stddef.h>
#include <stdint.h>

#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct node n[2] = {{0}, {0}};
	const struct node *nodes[2] = {&n[0], &n[1]};
	struct validation v = {0};
	struct error err = {0};

	n[0].name = "b-0";
	n[0].roles = NODE_ROLE_CONTROL_PLANE;
	n[1].name = "b-2";
	n[1].roles = NODE_ROLE_WORKER;
	(void)validate_kube_nodes(&v, (const char *)data, size, nodes, 2, &err);
	(void)validate_kube_pods(&v, (const char *)data, size, nodes, 2, &err);
	validation_release(&v);
	return 0;
}
