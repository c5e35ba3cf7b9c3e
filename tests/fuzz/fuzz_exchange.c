/*
 * libFuzzer harness: the exchange (provision/exchange.h) fed sequences of
 * protocol lines from several nodes.  Each input line is one event: its
 * first byte picks the node (cp, w-1, w-2), the role (join-tokens-,
 * kubeadm-join-, node-labels-, kubeadm-init- and jupyterhub-like, as
 * declared in the shipped roles) and what happens -- a protocol line (the
 * rest of the line, parsed by protocol_parse), the role finishing (ok or
 * not), or a read of what the node may see.  Checked on every read: each
 * value a node sees is one a role it reads from declares, about the right
 * node, for that node; a secret value is always redacted.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
#include "inventory.h"
#include "protocol.h"
#include "role.h"
#include "secrets.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char inventory_text[] = "cluster:\n"
				     "  name: fuzz\n"
				     "  kubernetes_version: \"1.30.4\"\n"
				     "nodes:\n"
				     "  - name: cp\n"
				     "    address: 198.18.0.10\n"
				     "    roles: [control-plane]\n"
				     "  - name: w-[1-2]\n"
				     "    address: 198.18.0.[11-12]\n"
				     "    roles: [worker]\n";

/* roles/kubeadm-join's keys: the labels check is fuzzed too */
static char *label_keys[] = {(char *)"node-role.kubernetes.io/worker",
			     (char *)"provision.dev/gpu-count", (char *)"provision.dev/gpu-model",
			     NULL};
static struct role_hand tokens_hands[] = {
    {(char *)"join_command", true, ROLE_TO_NODE, false, NULL},
    {(char *)"join_token", true, ROLE_TO_NODE, false, NULL},
};
static struct role_hand join_hands[] = {
    {(char *)"node_labels_{self}", false, ROLE_TO_CONTROL_PLANE, true, label_keys},
    {(char *)"node_gpus_{self}", false, ROLE_TO_CONTROL_PLANE, true, NULL},
};
static struct role_hand hub_hands[] = {
    {(char *)"hub_cookie_secret", true, ROLE_TO_SELF, false, NULL},
    {(char *)"hub_nodes", false, ROLE_TO_SELF, false, NULL},
    {(char *)"hub_node_{n}", false, ROLE_TO_SELF, false, NULL},
};
static struct role_fetch init_fetches[] = {
    {(char *)"admin.conf", (char *)"/etc/kubernetes/admin.conf"},
};
static char *join_deps[] = {(char *)"tokens", NULL};
static char *labels_after[] = {(char *)"joiner", NULL};

static struct role roles[5];
static struct inventory *inv;
static const struct node *nodes[3];

static void init(void)
{
	struct diag_list dl;

	diag_list_init(&dl);
	if (inventory_load_buffer(&inv, "fuzz.yaml", inventory_text, strlen(inventory_text), &dl) <
		0 ||
	    inv->nr_nodes != 3)
		abort();
	diag_list_release(&dl);
	nodes[0] = &inv->nodes[0];
	nodes[1] = &inv->nodes[1];
	nodes[2] = &inv->nodes[2];
	roles[0].name = (char *)"tokens";
	roles[0].hands = tokens_hands;
	roles[0].nr_hands = 2;
	roles[1].name = (char *)"joiner";
	roles[1].hands = join_hands;
	roles[1].nr_hands = 2;
	roles[1].depends_on = join_deps;
	roles[1].wait_for = join_deps;
	roles[2].name = (char *)"labels";
	roles[2].after = labels_after;
	roles[3].name = (char *)"init";
	roles[3].fetches = init_fetches;
	roles[3].nr_fetches = 1;
	roles[4].name = (char *)"hub";
	roles[4].hands = hub_hands;
	roles[4].nr_hands = 3;
}

struct seen {
	struct secrets *secrets;
	size_t to;
	const struct role *r;
};

/* Every value a node reads must be one that some role it reads from declares, secret as declared. */
static void check_value(const char *name, const char *value, bool secret, void *data)
{
	struct seen *s = data;
	size_t p, h, n;
	/* provision gives this one, always as a secret (a file on the node) */
	bool ok = !strcmp(name, "hub_github_client_secret") && s->to == 0 && secret;
	struct strbuf sb = STRBUF_INIT;

	for (p = 0; p < 5 && !ok; p++) {
		if (!s->r || !role_reads_from(s->r, &roles[p]))
			continue;
		for (h = 0; h < roles[p].nr_hands && !ok; h++)
			for (n = 0; n < 3 && !ok; n++) {
				const struct role_hand *rh = &roles[p].hands[h];
				if (!role_hand_match(rh, name, strlen(name), nodes[n]->name))
					continue;
				/* for this node, and about its sender */
				if (rh->to == ROLE_TO_SELF && n != s->to)
					continue;
				/* a secret hand's value is read as a secret (never the environment) */
				if (rh->secret != secret)
					continue;
				if (rh->to == ROLE_TO_CONTROL_PLANE && s->to != 0)
					continue;
				if (rh->about_self &&
				    strncmp(value, nodes[n]->name, strlen(nodes[n]->name)))
					continue;
				ok = true;
				if (rh->secret && strlen(value) >= SECRETS_MIN_LEN) {
					strbuf_addstr(&sb, value);
					secrets_redact(s->secrets, &sb);
					if (strstr(sb.buf, value) && !strstr(SECRETS_MASK, value))
						abort(); /* a secret read but not redacted */
				}
			}
	}
	strbuf_release(&sb);
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct secrets *secrets;
	struct exchange *x;
	const char *p = (const char *)data, *end = p + size;

	if (!inv)
		init();
	secrets = secrets_new();
	x = exchange_new(inv, nodes, 3, secrets);
	exchange_give(x, 0, "hub_github_client_secret", "github-client-secret-0042");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		unsigned char b = len ? (unsigned char)p[0] : 0;
		size_t node = b % 3;
		const struct role *r = &roles[(b / 3) % 5];
		struct error err = {0};
		struct protocol_msg m;
		struct seen s = {secrets, node, r};

		switch ((b / 15) % 4) {
		case 0:
		case 1:
			protocol_parse(&m, p + (len ? 1 : 0), len ? len - 1 : 0);
			if (m.kind == PROTOCOL_SET || m.kind == PROTOCOL_SECRET)
				exchange_hand(x, node, (b & 0x80) ? NULL : r,
					      m.kind == PROTOCOL_SECRET, m.name, m.name_len,
					      m.value, m.value_len, &err);
			else if (m.kind == PROTOCOL_FETCH)
				exchange_fetch(x, node, (b & 0x80) ? NULL : r, m.name, m.name_len,
					       m.value, m.value_len, &err);
			break;
		case 2:
			exchange_role_done(x, node, r, !(b & 0x80));
			break;
		default:
			exchange_each(x, node, (b & 0x80) ? NULL : r, check_value, &s);
			break;
		}
		p += len + (nl ? 1 : 0);
	}
	exchange_free(x);
	secrets_free(secrets);
	return 0;
}
