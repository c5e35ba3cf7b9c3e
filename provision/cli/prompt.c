/* prompt: see prompt.h. */
#include "prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "../runner.h"
#include "../secrets.h"
#include "../util.h"
#include "cmd.h"

/* Read one line from the terminal without echo; NULL when there is none or it is empty. */
static char *ask_tty(const char *prompt)
{
	struct termios old, quiet;
	char buf[512];
	FILE *tty;
	size_t len;
	char *r;

	if (!isatty(STDIN_FILENO))
		return NULL;
	tty = fopen("/dev/tty", "r+");
	if (!tty)
		return NULL;
	/* echo off before the prompt shows: what is typed after it is kept */
	tcgetattr(fileno(tty), &old);
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	fputs(prompt, tty);
	fflush(tty);
	if (!fgets(buf, sizeof(buf), tty))
		buf[0] = '\0';
	tcsetattr(fileno(tty), TCSAFLUSH, &old);
	fputs("\n", tty);
	fclose(tty);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	r = len ? xstrdup(buf) : NULL;
	explicit_bzero(buf, sizeof(buf));
	return r;
}

int cli_confirm(const char *cmd_name, bool yes, const char *question)
{
	char buf[64];
	FILE *tty;
	size_t len;

	if (yes)
		return 0;
	if (!isatty(STDIN_FILENO) || !(tty = fopen("/dev/tty", "r+"))) {
		fprintf(
		    stderr,
		    "provision %s: not on a terminal, so nobody can confirm; nothing was changed\n"
		    "  hint: check what the command would do, then run it again with --yes\n",
		    cmd_name);
		return EXIT_USAGE;
	}
	fprintf(tty, "%s [y/N] ", question);
	fflush(tty);
	if (!fgets(buf, sizeof(buf), tty))
		buf[0] = '\0';
	fclose(tty);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (!strcmp(buf, "y") || !strcmp(buf, "Y") || !strcmp(buf, "yes") || !strcmp(buf, "YES"))
		return 0;
	fprintf(stderr, "provision %s: not confirmed; nothing was changed\n", cmd_name);
	return EXIT_USAGE;
}

/* The first line of a password file only its owner can read; NULL (said) when it cannot be used. */
static char *read_password_file(const char *file)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;

	/* As OpenSSH treats a private key: others must not read it. */
	if (stat(file, &st) == 0 && ((st.st_mode & 077) || st.st_uid != getuid())) {
		fprintf(stderr,
			"provision: the sudo password file '%s' is %s (mode %04o): not used\n"
			"  hint: chmod 600 '%s' (and own it)\n",
			file, st.st_uid != getuid() ? "someone else's" : "readable by others",
			(unsigned)(st.st_mode & 07777), file);
		return NULL;
	}
	if (read_file(file, &sb) == 0) {
		sb.len = strcspn(sb.buf, "\r\n");
		sb.buf[sb.len] = '\0';
		if (sb.len)
			return strbuf_detach(&sb, NULL);
	}
	if (sb.alloc)
		explicit_bzero(sb.buf, sb.alloc);
	strbuf_release(&sb);
	fprintf(stderr, "provision: cannot read the sudo password from '%s'\n", file);
	return NULL;
}

char *cli_sudo_password(bool ask, const char *file)
{
	const char *env = getenv("PROVISION_SUDO_PASSWORD");
	char *pw;

	if (env && *env)
		return xstrdup(env);
	if (file && (pw = read_password_file(file)))
		return pw;
	return ask ? ask_tty("sudo password for the nodes: ") : NULL;
}

static bool same_path(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

int cli_node_sudo_passwords(const char *cmd_name, struct inventory *inv, struct secrets *secrets)
{
	size_t i, k;

	for (i = 0; i < inv->nr_nodes; i++) {
		struct node *n = &inv->nodes[i];

		if (n->own_sudo_password ||
		    same_path(n->ssh.sudo_password_file, inv->ssh.sudo_password_file))
			continue;
		n->own_sudo_password = true;
		/* Each file once; the nodes that name it share what it holds. */
		for (k = 0; k < i; k++)
			if (inv->nodes[k].own_sudo_password &&
			    same_path(inv->nodes[k].ssh.sudo_password_file,
				      n->ssh.sudo_password_file))
				break;
		if (k < i) {
			n->sudo_password = inv->nodes[k].sudo_password
					       ? xstrdup(inv->nodes[k].sudo_password)
					       : NULL;
			continue;
		}
		n->sudo_password = read_password_file(n->ssh.sudo_password_file);
		if (n->sudo_password && secrets &&
		    secrets_add(secrets, n->sudo_password, strlen(n->sudo_password)) < 0) {
			fprintf(
			    stderr,
			    "provision %s: the sudo password in '%s' (node %s) is shorter than %d "
			    "characters; provision cannot keep it out of its output\n",
			    cmd_name, n->ssh.sudo_password_file, n->name, SECRETS_MIN_LEN);
			return EXIT_USAGE;
		}
	}
	return 0;
}

char *cli_key_passphrase(const struct inventory *inv)
{
	char *prompt, *r;

	/* ssh-agent may hold the key: then nobody is asked. */
	if (!inv->ssh.identity || getenv("SSH_AUTH_SOCK") ||
	    transport_identity_encrypted(inv->ssh.identity) != 1)
		return NULL;
	prompt = xasprintf("passphrase for %s: ", inv->ssh.identity);
	r = ask_tty(prompt);
	free(prompt);
	return r;
}

void cli_free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}
