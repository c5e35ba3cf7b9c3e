/*
 * opt: the option tables that both parse a command line and print --help.
 *
 * Each command declares one `static const struct opt[]` ending in OPT_END;
 * entries point at the command's own storage (git's parse-options shape).
 * Because --help, the man page test and the completion test all read the
 * same table, an option cannot exist in one and not the others.
 *
 * Parsing stops at "--"; the words after it, and every non-option word, are
 * returned as positional arguments.  This room knows options only: the
 * command that owns a table prints its errors and help (cmd.h).
 */
#ifndef PROVISION_OPT_H
#define PROVISION_OPT_H

#include <stdbool.h>

#include "../util.h"

enum opt_type {
	OPT_TYPE_END = 0,
	OPT_TYPE_BOOL,   /* bool *: set to true */
	OPT_TYPE_STRING, /* const char **: the argument */
	OPT_TYPE_INT,    /* int *: a decimal integer within [min, max] */
	OPT_TYPE_CHOICE, /* const char **: one of `choices` (NULL-terminated, "|"-separated) */
};

struct opt {
	char short_name; /* 0: long only */
	const char *long_name;
	enum opt_type type;
	void *value;
	const char *arg_name; /* "FILE", "N"; NULL for booleans */
	const char *help;
	const char *choices; /* OPT_TYPE_CHOICE: "text|json" */
	int min, max;	     /* OPT_TYPE_INT bounds */
};

#define OPT_BOOL(s, l, v, h) {(s), (l), OPT_TYPE_BOOL, (v), NULL, (h), NULL, 0, 0}
#define OPT_STRING(s, l, v, a, h) {(s), (l), OPT_TYPE_STRING, (v), (a), (h), NULL, 0, 0}
#define OPT_INT(s, l, v, a, lo, hi, h) {(s), (l), OPT_TYPE_INT, (v), (a), (h), NULL, (lo), (hi)}
#define OPT_CHOICE(s, l, v, a, c, h) {(s), (l), OPT_TYPE_CHOICE, (v), (a), (h), (c), 0, 0}
#define OPT_END {0, NULL, OPT_TYPE_END, NULL, NULL, NULL, NULL, 0, 0}

/*
 * Parse argv[1..argc) (argv[0] is the command's name) against `options`,
 * storing each option's value where its entry points.  Returns 0 with the
 * positional words (pointers into argv) in *pos / *nr_pos (caller frees
 * *pos); 1 when --help or -h was given; -1 with what was wrong in err
 * ("unknown option '--x'").  What a command accepts besides (how many
 * positional words) and how it tells a person are cmd.h's.
 */
int opt_parse(const struct opt *options, int argc, char **argv, char ***pos, int *nr_pos,
	      struct strbuf *err);

/* The option lines of a --help, -h/--help's last (caller frees). */
char *opt_help_text(const struct opt *options);

#endif
