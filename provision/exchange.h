/*
 * exchange: the values handed between steps, roles and nodes during one
 * run, and the one place that knows who may hand what to whom.
 *
 * A node is untrusted (/work/shared/DESIGN.md, "Trust"): what its steps
 * print is a claim, not an instruction.  Every handed value is kept with
 * its sender (node), its role and its name, and is accepted only when the
 * role that ran declares it in role.yaml (`hands`: NAME, secret or not,
 * to: self | control-plane | node; roles/README.md, "Handing values"):
 *
 *   - the name matches a declared one ({self} = the sender's own name, so
 *     node X hands node_labels_X and no other node's);
 *   - ::set for a plain value, ::secret for a secret one (only declared
 *     secrets are registered for redaction: a node cannot make provision
 *     hide any word it likes);
 *   - `to: node` values carry @NODE (a node of the inventory), the others
 *     none; `about: self` values start with the sender's name;
 *   - `labels: [KEY...]` values are label changes of those keys only
 *     (KEY=VALUE with a Kubernetes label value, or KEY-): they become
 *     `kubectl label` arguments on the control plane, so no other key and
 *     no word starting with '-' (a flag).
 *
 * A consumer -- node N running role C -- reads a value handed by node S in
 * role P when the value is for N (self: N is S; control-plane: N has that
 * role; node: N is the @NODE) and either P is C and S is N (its own
 * earlier steps), or C depends on, waits for or comes after P and S
 * finished P successfully (the value is then published).  Values provision
 * gives itself (exchange_give) reach every role of their node.
 *
 * ::fetch: only a declared NAME from its declared PATH, and each NAME from
 * one node per run (the first to ask), so private/admin.conf comes only
 * from kubeadm-init on the control plane.
 *
 * Threading: every function may be called from any worker thread; the
 * exchange has its own lock.  Values are copied in and out; secret values
 * are wiped when replaced or freed.
 */
#ifndef PROVISION_EXCHANGE_H
#define PROVISION_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>

#include "inventory.h"
#include "role.h"
#include "secrets.h"
#include "util.h"

struct exchange;

/*
 * An exchange for the run's nodes (nodes[0..nr), the indexes every other
 * call takes); inv names the nodes a `to: node` value may be for; secrets
 * (may be NULL) receives the declared secrets.
 */
struct exchange *exchange_new(const struct inventory *inv, const struct node *const *nodes,
			      size_t nr, struct secrets *secrets);
/* Wipe and free; accepts NULL. */
void exchange_free(struct exchange *x);

/* A value from provision itself for node `to` (e.g. the hub's OAuth secret). */
void exchange_give(struct exchange *x, size_t to, const char *name, const char *value);

/*
 * A `::set` (secret false) or `::secret` line's KEY=VALUE (KEY is NAME or
 * NAME@NODE), printed by node `from` in a step of role r.  Returns 0 when
 * r declares it (kept; a secret registered), or -1 with err set to why it
 * is a protocol violation (nothing kept, nothing registered).
 */
int exchange_hand(struct exchange *x, size_t from, const struct role *r, bool secret,
		  const char *key, size_t key_len, const char *value, size_t value_len,
		  struct error *err);

/*
 * Node `from` finished role r: when ok, what it handed in r reaches the
 * roles that read from r; when not, it never does.
 */
void exchange_role_done(struct exchange *x, size_t from, const struct role *r, bool ok);

/*
 * A `::fetch PATH NAME` line of node `from` in a step of role r.  Returns 0
 * when r declares NAME from PATH and no other node fetched NAME in this
 * run (NAME is then that node's), or -1 with err set.
 */
int exchange_fetch(struct exchange *x, size_t from, const struct role *r, const char *path,
		   size_t path_len, const char *name, size_t name_len, struct error *err);

/*
 * Call fn(NAME, VALUE, SECRET, data) for every value node `to` may read
 * while it runs role r (r NULL: only what provision gave it), in the order
 * handed; a later value of the same NAME comes after an earlier one.
 * SECRET: handed with ::secret, or given by provision (exchange_give).
 */
void exchange_each(struct exchange *x, size_t to, const struct role *r,
		   void (*fn)(const char *name, const char *value, bool secret, void *data),
		   void *data);

#endif
