/*
 * prompt: what a command asks the person at the terminal, and the secrets
 * it reads from files: the sudo password (-K, $PROVISION_SUDO_PASSWORD,
 * ssh.sudo_password_file), the nodes' own sudo password files, the
 * passphrase of ssh.identity, and a y/N confirmation.  Read once per
 * command: the run session (session.h) asks, and keeps the answers for all
 * of its passes.  Main thread only.
 */
#ifndef PROVISION_CLI_PROMPT_H
#define PROVISION_CLI_PROMPT_H

#include <stdbool.h>

#include "../inventory.h"

struct secrets;

/*
 * The sudo password: $PROVISION_SUDO_PASSWORD, else the first line of
 * `file` (the inventory's ssh.sudo_password_file, may be NULL), else, when
 * `ask` is set and standard input is a terminal, read once without echo.
 * Returns NULL when none.  The caller wipes and frees it with
 * cli_free_secret().
 */
char *cli_sudo_password(bool ask, const char *file);
/*
 * The nodes' own sudo passwords: each node whose ssh.sudo_password_file is
 * not the inventory's default one gets the first line of its file in
 * node->sudo_password (own_sudo_password set), each file read once and each
 * password registered in secrets (may be NULL).  Neither
 * $PROVISION_SUDO_PASSWORD nor the terminal stand in for such a file: a file
 * that cannot be used is said, and its nodes get no password.  Returns 0,
 * or EXIT_USAGE when a password is too short to keep out of the output.
 */
int cli_node_sudo_passwords(const char *cmd_name, struct inventory *inv, struct secrets *secrets);
void cli_free_secret(char *s);

/*
 * Ask `question` (a y/N prompt) on the terminal, unless `yes` (--yes).
 * Returns 0 when confirmed; EXIT_USAGE after saying so when declined or
 * when standard input is not a terminal (then --yes is required).
 */
int cli_confirm(const char *cmd_name, bool yes, const char *question);

/*
 * The passphrase of the inventory's ssh.identity, asked once on the terminal
 * when the key is encrypted and no ssh-agent is running; NULL otherwise.
 */
char *cli_key_passphrase(const struct inventory *inv);

#endif
