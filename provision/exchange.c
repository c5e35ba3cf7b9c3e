/* exchange: values handed between steps, roles and nodes. */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

/*
 * The name under which a handed value reaches `node`, or NULL when it is
 * not for it: "NAME@NODE" values go to NODE only, as NAME.
 */
const char *exchange_value_for(const char *key, const char *node, char *buf, size_t size)
{
	const char *at = strchr(key, '@');

	if (!at)
		return key;
	if (strcmp(at + 1, node))
		return NULL;
	snprintf(buf, size, "%.*s", (int)(at - key), key);
	return buf;
}

void exchange_export_set(struct strbuf *sb, const struct tval *set, const char *node)
{
	size_t i;

	for (i = 0; set && i < set->nr; i++) {
		char name[160], key[128];
		const char *k = exchange_value_for(set->keys[i], node, key, sizeof(key));
		if (!k)
			continue;
		snprintf(name, sizeof(name), "PROVISION_SET_%s", k);
		plan_env_export(sb, name, set->items[i]->str);
	}
}

