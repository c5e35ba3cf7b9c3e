/*
 * diag: the list of problems found in a file a person wrote (the inventory,
 * role.yaml, roles/artifacts.yaml, roles/kubernetes.yaml, a kubeconfig),
 * each with its file and 1-based line and column, printed as
 * `file:line:col: error: message` and an optional `  hint: ...` line.
 *
 * Readers add to a list and carry on, so that one run shows every mistake;
 * the caller prints the list once (cli_print_diags) and decides the exit
 * status from `errors`.
 *
 * Ownership: the list owns every string in it; diag_list_release() frees
 * them.  Threading: a list belongs to one thread.
 */
#ifndef PROVISION_DIAG_H
#define PROVISION_DIAG_H

#include <stdarg.h>
#include <stddef.h>

/* Where something was written (1-based; 0 when it has no place, e.g. a default). */
struct source_pos {
	unsigned line, col;
};

enum diag_level { DIAG_ERROR, DIAG_WARNING };

struct diag {
	enum diag_level level;
	char *file;
	unsigned line, col; /* 1-based; 0 when the problem has no position */
	char *msg;
	char *hint; /* NULL or a "did you mean"/how-to-fix sentence */
};

struct diag_list {
	size_t nr, alloc;
	struct diag *items;
	size_t errors;
};

void diag_list_init(struct diag_list *dl);
void diag_list_release(struct diag_list *dl);
/* Add one; `hint` NULL or "" for none; col is dropped when line is 0. */
void diag_add(struct diag_list *dl, enum diag_level level, const char *file, unsigned line,
	      unsigned col, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
void diag_vadd(struct diag_list *dl, enum diag_level level, const char *file, unsigned line,
	       unsigned col, const char *hint, const char *fmt, va_list ap)
    __attribute__((format(printf, 7, 0)));
/*
 * Format one diagnostic as "FILE:LINE:COL: error: MESSAGE" ("warning" for
 * warnings; no LINE:COL when line is 0, no "FILE:" without a file) followed,
 * when there is a hint, by "\n  hint: HINT".  Caller frees.
 */
char *diag_format(const struct diag *d);
/* Order the diagnostics from index `first` on by line and column, ties kept in order. */
void diag_sort_from(struct diag_list *dl, size_t first);

#endif
