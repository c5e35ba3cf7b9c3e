/*
 * record_files: the run record's files in the state repository (record.h
 * writes them, state.h stores them): their paths and formats, in one room.
 * Whoever reads a run's files (the estimate, the history commands, the
 * recorded facts of nodes a run leaves out) reads them through here, not
 * by spelling a path or splitting a line of its own.  Below the plan and
 * the record: it imports only facts.h and util.h.
 */
#ifndef PROVISION_RECORD_FILES_H
#define PROVISION_RECORD_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "facts.h"

enum record_node_file {
	RECORD_FACTS,	 /* facts->text of the node's last facts (facts.h) */
	RECORD_BENCH,	 /* bench_record() (bench.h) */
	RECORD_RESULTS,	 /* "role › step\tresult", details indented below; "node\tSTATE" last */
	RECORD_TIMINGS,	 /* "role\tstep\tms\tresult[\tcheck_ms]" (struct record_timing) */
	RECORD_PULLS,	 /* "role\tref\tbytes\tms\tdone|incomplete" (struct record_pull) */
	RECORD_DEPLOYED, /* "sha256 mode owner dest template|artifact role/source" */
};
#define RECORD_SUMMARY	  "summary"    /* "key: value" lines (state.h state_runs) */
#define RECORD_VALIDATION "validation" /* "id\tnode\tstatus\tobserved\texpected" */
#define RECORD_INVENTORY  "inventory.yaml"
#define RECORD_LOGS	  "logs" /* the folder of the node logs, in a run and in the state folder */

/* "nodes/NODE/facts", ... (a new string). */
char *record_node_path(const char *node, enum record_node_file f);
/* "nodes/NODE/files/DEST": a file as it was deployed (dest: an absolute path). */
char *record_file_path(const char *node, const char *dest);
/* "logs/NODE.log": the node's log of the run. */
char *record_log_path(const char *node);
/* The node whose log a file of the logs folder is ("NODE.log"; not a dot file): NODE (a new
 * string), or NULL for another name. */
char *record_log_node(const char *file_name);

/*
 * What a path of a run's files is, for those who go through a run's list
 * (bundle, diff) instead of asking for one file.
 */
enum record_path_kind {
	RECORD_PATH_OTHER, /* none of the below */
	RECORD_PATH_SUMMARY,
	RECORD_PATH_VALIDATION,
	RECORD_PATH_INVENTORY,
	RECORD_PATH_LOG,	/* logs/...: a node's log (node set for logs/NODE.log) */
	RECORD_PATH_NODE,	/* nodes/NODE/FILE, one of enum record_node_file (in file) */
	RECORD_PATH_NODE_COPY,	/* nodes/NODE/files/DEST: a file as deployed (dest: "/DEST") */
	RECORD_PATH_NODE_OTHER, /* nodes/NODE/...: another file of the node */
};
struct record_path {
	enum record_path_kind kind;
	const char *node; /* NODE, within the path (node_len bytes); NULL when none */
	size_t node_len;
	enum record_node_file file; /* RECORD_PATH_NODE */
	const char *dest;	    /* RECORD_PATH_NODE_COPY: within the path */
};
/* Classify `path` (a path of state_list(), state.h); out points into it. */
void record_path_parse(const char *path, struct record_path *out);
/* Both paths are files of the same node (nodes/NODE/...: not its log); (p, p): p is a
 * file of a node. */
bool record_path_same_node(const struct record_path *a, const struct record_path *b);

/*
 * The facts the last run recorded for a node, from the state folder's
 * files (STATE/nodes/NODE/facts): 0 with *out filled (facts_release), or
 * -1 when there are none, or none usable (they do not parse, or hold a
 * line that is not data: poisoned facts are not reused).
 */
int record_facts_read(const char *state_dir, const char *node, struct facts *out);
/* The same from the text of a recorded facts file (a run's nodes/NODE/facts, state_read()). */
int record_facts_parse(const char *text, size_t len, struct facts *out);

/* One line of a node's timings: a step's time in the run. */
struct record_timing {
	char *role, *step, *result;
	int64_t ms;
	int64_t check_ms; /* its first check's share; -1: not said */
};
/* The lines of a timings file (fields split at tabs; lines of fewer than 4 skipped). */
size_t record_timings_parse(const char *text, struct record_timing **out);
void record_timings_free(struct record_timing *t, size_t nr);

/* One line of a node's pulls: an image a pull role pulled. */
struct record_pull {
	char *role, *ref;
	uint64_t bytes;
	int64_t ms;
	bool done; /* "done"; else "incomplete" */
};
size_t record_pulls_parse(const char *text, struct record_pull **out);
void record_pulls_free(struct record_pull *p, size_t nr);

#endif
