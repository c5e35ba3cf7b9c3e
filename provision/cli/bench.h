/*
 * bench: what `provision bench` and `check --bench` share (cmd_bench.c):
 * the limited container's CPU before the run, the figures after it.
 */
#ifndef PROVISION_CLI_BENCH_H
#define PROVISION_CLI_BENCH_H

#include "../inventory.h"
#include "session.h"

/* bench, check --bench: the figures per node (a table, or one JSON object per node). */
int cli_bench_after(const struct cli_plan_args *a, const struct cli_plan_done *d);
/*
 * The limited container's CPU in millicores: `given` (--cpu-limit) when not
 * 0, else the smallest cpu_guarantee of the hub's profiles as the last run
 * that deployed the hub rendered them (the control plane's
 * /etc/provision/jupyterhub/values.yaml in the state folder), else 0 (the
 * bench computes it from the nodes' facts).  What it was taken from is
 * kept for the report.  (cli_plan_args.bench_limit)
 */
unsigned cli_bench_limit(unsigned given, const char *state_dir, const struct inventory *inv);

#endif
