/* opt: see opt.h. */
#include "opt.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "cmd.h"

void opt_usage_error(const struct cmd *cmd, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	strbuf_addf(&sb, "provision %s: ", cmd->name);
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	strbuf_addf(&sb, "\nusage: provision %s %s\n", cmd->name, cmd->usage);
	strbuf_addf(&sb, "try 'provision %s --help' for more\n", cmd->name);
	fputs(sb.buf, stderr);
	strbuf_release(&sb);
}

static bool choice_ok(const char *choices, const char *v)
{
	size_t n = strlen(v);
	const char *p = choices;

	while (*p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return true;
		if (!bar)
			break;
		p = bar + 1;
	}
	return false;
}

static const struct opt *find_long(const struct opt *o, const char *name, size_t len)
{
	for (; o->type != OPT_TYPE_END; o++)
		if (o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, name, len))
			return o;
	return NULL;
}

static const struct opt *find_short(const struct opt *o, char c)
{
	for (; o->type != OPT_TYPE_END; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

static const char *opt_name(const struct opt *o, char *buf, size_t size)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
	return buf;
}

static int store(const struct cmd *cmd, const struct opt *o, const char *arg)
{
	char name[64];
	char *end;
	long v;

	switch (o->type) {
	case OPT_TYPE_BOOL:
		*(bool *)o->value = true;
		return 0;
	case OPT_TYPE_STRING:
		*(const char **)o->value = arg;
		return 0;
	case OPT_TYPE_CHOICE:
		if (!choice_ok(o->choices, arg)) {
			opt_usage_error(cmd, "%s takes one of %s, not '%s'",
					opt_name(o, name, sizeof(name)), o->choices, arg);
			return -1;
		}
		*(const char **)o->value = arg;
		return 0;
	case OPT_TYPE_INT:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < o->min || v > o->max) {
			opt_usage_error(cmd, "%s takes a whole number from %d to %d, not '%s'",
					opt_name(o, name, sizeof(name)), o->min, o->max, arg);
			return -1;
		}
		*(int *)o->value = (int)v;
		return 0;
	case OPT_TYPE_END:
		break;
	}
	return -1;
}

int opt_parse(const struct cmd *cmd, int argc, char **argv, char ***pos, int *nr_pos)
{
	char **out = xcalloc((size_t)argc + 1, sizeof(*out));
	int n = 0, i;

	*pos = NULL;
	*nr_pos = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct opt *o;

		if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				out[n++] = argv[i];
			break;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			free(out);
			opt_print_help(cmd);
			return 1;
		}
		if (a[0] == '-' && a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			const char *arg = NULL;

			o = find_long(cmd->options, a + 2, len);
			if (!o) {
				opt_usage_error(cmd, "unknown option '%.*s'", (int)len + 2, a);
				goto fail;
			}
			if (o->type == OPT_TYPE_BOOL) {
				if (eq) {
					opt_usage_error(cmd, "option '--%s' takes no value",
							o->long_name);
					goto fail;
				}
			} else if (eq) {
				arg = eq + 1;
			} else if (i + 1 < argc) {
				arg = argv[++i];
			} else {
				opt_usage_error(cmd, "option '--%s' needs a value (%s)",
						o->long_name, o->arg_name);
				goto fail;
			}
			if (store(cmd, o, arg) < 0)
				goto fail;
			continue;
		}
		if (a[0] == '-' && a[1] != '\0') {
			/* Bundled short options: -vq, -iFILE, -i FILE. */
			const char *p;
			for (p = a + 1; *p; p++) {
				o = find_short(cmd->options, *p);
				if (!o) {
					opt_usage_error(cmd, "unknown option '-%c'", *p);
					goto fail;
				}
				if (o->type == OPT_TYPE_BOOL) {
					store(cmd, o, NULL);
					continue;
				}
				if (p[1]) {
					if (store(cmd, o, p + 1) < 0)
						goto fail;
				} else if (i + 1 < argc) {
					if (store(cmd, o, argv[++i]) < 0)
						goto fail;
				} else {
					opt_usage_error(cmd, "option '-%c' needs a value (%s)", *p,
							o->arg_name);
					goto fail;
				}
				break;
			}
			continue;
		}
		out[n++] = argv[i];
	}
	if (n < cmd->min_pos || (cmd->max_pos >= 0 && n > cmd->max_pos)) {
		if (n < cmd->min_pos)
			opt_usage_error(cmd, "missing argument");
		else
			opt_usage_error(cmd, "unexpected argument '%s'", out[cmd->max_pos]);
		goto fail;
	}
	*pos = out;
	*nr_pos = n;
	return 0;
fail:
	free(out);
	return -1;
}

void opt_print_help(const struct cmd *cmd)
{
	struct strbuf sb = STRBUF_INIT;
	const struct opt *o;

	strbuf_addf(&sb, "usage: provision %s %s\n\n%s\n", cmd->name, cmd->usage,
		    cmd->description);
	strbuf_addstr(&sb, "\noptions:\n");
	for (o = cmd->options; o->type != OPT_TYPE_END; o++) {
		struct strbuf left = STRBUF_INIT;
		if (o->short_name)
			strbuf_addf(&left, "-%c", o->short_name);
		if (o->short_name && o->long_name)
			strbuf_addstr(&left, ", ");
		if (o->long_name)
			strbuf_addf(&left, "--%s", o->long_name);
		if (o->arg_name)
			strbuf_addf(&left, " %s", o->arg_name);
		strbuf_addf(&sb, "  %-28s %s\n", left.buf, o->help);
		strbuf_release(&left);
	}
	strbuf_addf(&sb, "  %-28s %s\n", "-h, --help", "show this help and exit");
	fputs(sb.buf, stdout);
	strbuf_release(&sb);
	cmd_print_exit_codes();
}
