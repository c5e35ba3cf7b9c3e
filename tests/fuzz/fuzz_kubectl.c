/* libFuzzer harness: the parsers of `kubectl get nodes|pods|storageclasses|pvc -o json`. */
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
	struct gpu g = {(char *)"NVIDIA GeForce RTX 3070", 8192, (char *)"550.107.02", NULL};
	struct facts f = {0};
	const struct facts *facts[2] = {NULL, &f};
	static const char empty[] = "{\"kind\":\"List\",\"items\":[]}";

	n[0].name = "b-0";
	n[0].roles = NODE_ROLE_CONTROL_PLANE;
	n[1].name = "b-2";
	n[1].roles = NODE_ROLE_WORKER;
	(void)validate_kube_nodes(&v, (const char *)data, size, nodes, 2, &err);
	(void)validate_kube_pods(&v, (const char *)data, size, nodes, 2, &err);
	f.gpus = &g;
	f.nr_gpus = 1;
	(void)validate_gpus(&v, (const char *)data, size, (const char *)data, size, nodes, facts, 2,
			    &err);
	(void)validate_storage(&v, (const char *)data, size, empty, sizeof(empty) - 1, "x\ny",
			       &err);
	(void)validate_storage(&v, empty, sizeof(empty) - 1, (const char *)data, size, NULL, &err);
	validation_release(&v);
	return 0;
}
