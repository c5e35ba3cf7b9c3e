/* opt: see opt.h. */
#include "opt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"

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

static int store(const struct opt *o, const char *arg, struct strbuf *err)
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
			strbuf_addf(err, "%s takes one of %s, not '%s'",
				    opt_name(o, name, sizeof(name)), o->choices, arg);
			return -1;
		}
		*(const char **)o->value = arg;
		return 0;
	case OPT_TYPE_INT:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < o->min || v > o->max) {
			strbuf_addf(err, "%s takes a whole number from %d to %d, not '%s'",
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

int opt_parse(const struct opt *options, int argc, char **argv, char ***pos, int *nr_pos,
	      struct strbuf *err)
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
			return 1;
		}
		if (a[0] == '-' && a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			const char *arg = NULL;

			o = find_long(options, a + 2, len);
			if (!o) {
				strbuf_addf(err, "unknown option '%.*s'", (int)len + 2, a);
				goto fail;
			}
			if (o->type == OPT_TYPE_BOOL) {
				if (eq) {
					strbuf_addf(err, "option '--%s' takes no value",
						    o->long_name);
					goto fail;
				}
			} else if (eq) {
				arg = eq + 1;
			} else if (i + 1 < argc) {
				arg = argv[++i];
			} else {
				strbuf_addf(err, "option '--%s' needs a value (%s)", o->long_name,
					    o->arg_name);
				goto fail;
			}
			if (store(o, arg, err) < 0)
				goto fail;
			continue;
		}
		if (a[0] == '-' && a[1] != '\0') {
			/* Bundled short options: -vq, -iFILE, -i FILE. */
			const char *p;
			for (p = a + 1; *p; p++) {
				o = find_short(options, *p);
				if (!o) {
					strbuf_addf(err, "unknown option '-%c'", *p);
					goto fail;
				}
				if (o->type == OPT_TYPE_BOOL) {
					store(o, NULL, err);
					continue;
				}
				if (p[1]) {
					if (store(o, p + 1, err) < 0)
						goto fail;
				} else if (i + 1 < argc) {
					if (store(o, argv[++i], err) < 0)
						goto fail;
				} else {
					strbuf_addf(err, "option '-%c' needs a value (%s)", *p,
						    o->arg_name);
					goto fail;
				}
				break;
			}
			continue;
		}
		out[n++] = argv[i];
	}
	*pos = out;
	*nr_pos = n;
	return 0;
fail:
	free(out);
	return -1;
}

char *opt_help_text(const struct opt *options)
{
	struct strbuf sb = STRBUF_INIT;
	const struct opt *o;

	for (o = options; o->type != OPT_TYPE_END; o++) {
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
	return strbuf_detach(&sb, NULL);
}
