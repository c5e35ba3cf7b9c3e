/*
 * upgrade: what `provision upgrade` reads from the control plane before each
 * stage, parsed and checked (cli/cmd_upgrade.c).  A worker controls its own
 * Node object, kubeletVersion included: the answer is read as JSON, only
 * the inventory's nodes are looked at, and a version is used only when it
 * is vMAJOR.MINOR.PATCH (digits), so no node can speak for another or put
 * its text on the terminal.
 */
#ifndef PROVISION_CLI_UPGRADE_H
#define PROVISION_CLI_UPGRADE_H

#include <stddef.h>

#include "../inventory.h"
#include "../util.h"

#define UPGRADE_VERSION_MAX 24 /* "65535.65535.65535" and the NUL, with room */

struct upgrade_versions {
	char control_plane[UPGRADE_VERSION_MAX]; /* the API server's, "1.30.4" (no 'v') */
	/* per node of the inventory (inv->nodes order): its kubelet's, "" when not in the cluster
	 */
	char (*kubelet)[UPGRADE_VERSION_MAX];
	size_t nr;
};

/*
 * Parse the control plane's answer: `kubectl get --raw /version` (a JSON
 * object with gitVersion), then `kubectl get nodes -o json` (a List or
 * NodeList).  Nodes that are not in inv are left out.  0, or -1 with err
 * naming what is wrong (a node of the inventory reporting a kubelet version
 * that is not vX.Y.Z is named; its text is not shown).  Release with
 * upgrade_versions_release() either way.
 */
int upgrade_versions_parse(const struct inventory *inv, const char *text, size_t len,
			   struct upgrade_versions *v, struct error *err);
void upgrade_versions_release(struct upgrade_versions *v);

/* Whether s is MAJOR.MINOR.PATCH, an optional 'v' first, 1-5 digits each. */
bool upgrade_version_valid(const char *s);

#endif
