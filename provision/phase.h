/*
 * phase: the phases of a run as an enum, with the one table of their names.
 *
 * role_phases[p] is the name of phase p: those of `up` first
 * (ROLE_UP_PHASES, role.h), then those of the lifecycle commands;
 * PHASE_ROLES of them, the phases a role may have (role.yaml `phase:`).
 * After them, the run's own stages that are no role's phase but travel in
 * events as one (facts, preflight).  Events, status records and roles carry
 * the enum; a name is read once (role.yaml, --phases: phase_parse) and
 * printed from the table (phase_name: the plain and JSON lines, the record).
 */
#ifndef PROVISION_PHASE_H
#define PROVISION_PHASE_H

#include <stdbool.h>

enum phase {
	PHASE_NONE = -1, /* none: an ad-hoc command, a query of no role's, a file check */
	PHASE_PREP,
	PHASE_KUBE_PACKAGES,
	PHASE_NFS,
	PHASE_INIT,
	PHASE_CNI,
	PHASE_JOIN,
	PHASE_ADDONS,
	PHASE_VALIDATE,
	PHASE_REMOVE,
	PHASE_RESET,
	PHASE_RESET_PREP,
	PHASE_RESET_VERIFY,
	PHASE_UPGRADE,
	PHASE_UPGRADE_WORKERS,
	PHASE_RENEW_CERTS,
	PHASE_BACKUP,
	PHASE_RESTORE,
	PHASE_ROLES, /* the phases roles may have: role_phases' length */
	PHASE_FACTS = PHASE_ROLES,
	PHASE_PREFLIGHT,
};
/* The bit of phase p (< PHASE_ROLES) in a set of phases (plan.h `phases`). */
#define PHASE_BIT(p) (1u << (p))
extern const char *const role_phases[];
/* The role phase named s (one of role_phases), or PHASE_NONE. */
enum phase role_phase_index(const char *s);
/* The name of phase p ("prep", ..., "facts", "preflight"); NULL for PHASE_NONE. */
const char *phase_name(enum phase p);
/* Whether s (a name, may be NULL) names phase p. */
bool phase_is(const char *s, enum phase p);

#endif
