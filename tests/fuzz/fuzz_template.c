/* libFuzzer harness: the template parser and renderer on arbitrary text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tval *values(void)
{
	struct tval *v = tval_new_map(), *n, *list;

	n = tval_map_at(v, "node");
	tval_set_str(n, "name", "b-2");
	tval_set_str(n, "gpu", "true");
	tval_set_str(tval_map_at(v, "cluster"), "pod_cidr", "10.244.0.0/16");
	list = tval_set(v, "nodes", tval_new_list());
	tval_set_str(tval_push(list, tval_new_map()), "name", "b-0");
	tval_set_str(tval_push(list, tval_new_map()), "name", "b'1\"\\");
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tval *vars;
	struct template *t = NULL;
	struct strbuf out = STRBUF_INIT;
	struct error err = {0};
	char **names = NULL;
	size_t nr = 0, i;

	if (!vars)
		vars = values();
	if (template_parse(&t, "fuzz.tmpl", (const char *)data, size, &err) == 0) {
		template_names(t, &names, &nr);
		for (i = 0; i < nr; i++)
			free(names[i]);
		free(names);
		(void)template_render(t, vars, &out, &err);
		template_free(t);
	} else if (!err.msg[0]) {
		abort();
	}
	strbuf_release(&out);
	return 0;
}
