/* The command-line parser of every tinyc subcommand (tinyc, run, bench, tune, htree).
 *
 * A subcommand describes its options in tables (tinyc_arg: name, value kind, the field it
 * fills, help text), grouped under headings; tinyc_args_parse fills a struct from argv with
 * them and tinyc_args_help prints --help from the same tables, so that the two cannot
 * disagree.  Values are given as "--opt=value" or "--opt value".  Usage errors are printed
 * as "PROG: usage error: ..." and give exit status 2.
 */
#ifndef TINYC_TOOLS_ARGS_H
#define TINYC_TOOLS_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { TINYC_ARGS_OK = 0, TINYC_ARGS_USAGE = 2 };

/* What an option's value is, and how it is stored. */
typedef enum tinyc_arg_kind {
	TINYC_ARG_FLAG,		/* no value: the int field becomes 1 */
	TINYC_ARG_STR,		/* const char * field: the value itself */
	TINYC_ARG_CHOICE,	/* const char * field: one of the '|'-separated choices */
	TINYC_ARG_INT,		/* int field, an integer in min..max */
	TINYC_ARG_I64,		/* int64_t field, an integer in min..max */
	TINYC_ARG_U64,		/* uint64_t field, an unsigned decimal integer */
	TINYC_ARG_DOUBLE,	/* double field, a number */
	TINYC_ARG_FLOAT,	/* float field, a number */
	TINYC_ARG_I64_LIST,	/* int64_t array field: appends an integer in min..max
				 * (repeatable; the int at count counts them, up to cap) */
	TINYC_ARG_CALL,		/* set() stores it (lists, NAME=path pairs) */
	TINYC_ARG_HELP,		/* print --help, exit 0 */
	TINYC_ARG_VERSION,	/* print the version, exit 0 */
} tinyc_arg_kind;

/* set() of a TINYC_ARG_CALL option: 0, or -1 with a message in why. */
typedef int (*tinyc_arg_setter)(void *dst, const char *value, char *why, size_t wsize);

/* One option. */
typedef struct tinyc_arg {
	const char *name;	/* "--bind"; NULL ends a table */
	const char *alias;	/* a short spelling ("-v"), or NULL */
	tinyc_arg_kind kind;	/* what the value is */
	size_t field;		/* offsetof() the field it fills in the command's struct */
	const char *metavar;	/* the value in --help ("M=64,N=32"); NULL without a value */
	int64_t min, max;	/* INT and I64: the accepted range */
	const char *choices;	/* CHOICE: "ref|cpu|cuda|gpuir" */
	tinyc_arg_setter set;	/* CALL: stores the value */
	const char *help;	/* --help text; '\n' continues on the next line */
	size_t count;		/* I64_LIST: offsetof() the int that counts the entries */
	int cap;		/* I64_LIST: the array's length */
} tinyc_arg;

/* Options listed under one heading of --help ("Run options"). */
typedef struct tinyc_arg_group {
	const char *title;	/* the heading; the man page has a section of the same name */
	const tinyc_arg *opts;	/* ends with a NULL name */
} tinyc_arg_group;

/* A subcommand: its name, its help text around the option tables, its operand. */
typedef struct tinyc_command {
	const char *prog;	/* "tinyc run": usage errors and --version say it */
	const char *usage;	/* the usage lines, the first one after "usage: " */
	const char *about;	/* what the command does (before the options), or NULL */
	const tinyc_arg_group *groups[6];	/* the option tables; NULL ends the list */
	const char *operand;	/* the one positional argument ("FILE"), or NULL: none */
	size_t operand_field;	/* offsetof() its const char * field */
	void (*more_help)(FILE *out);	/* printed after the options (computed lists), or NULL */
	const char *footer;	/* printed last, or NULL */
	const struct tinyc_command *const *siblings;	/* other subcommands whose options an
							 * unknown one is looked up in, or NULL */
} tinyc_command;

/* --help and --version, in every subcommand. */
extern const tinyc_arg_group tinyc_args_other;

/* Parse argv[1..argc-1] into dst.  -1: go on; otherwise the exit status (0 after --help or
 * --version, 2 after a usage error, which is printed). */
int tinyc_args_parse(const tinyc_command *cmd, int argc, char **argv, void *dst);

/* Print cmd's --help. */
void tinyc_args_help(const tinyc_command *cmd, FILE *out);

/* Print "PROG: usage error: <message>" and the --help hint; returns TINYC_ARGS_USAGE. */
int tinyc_args_error(const tinyc_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A diagnostics context for a CLI command: colour on a terminal unless NO_COLOR is set
 * (https://no-color.org).  NULL when out of memory. */
struct tinyc_ctx *tinyc_cli_ctx_alloc(void);

struct tinyc_io;
struct tinyc_tensor;

/* Free what a command's run holds: the outputs of io and ref, the input tensors it owns
 * (owned[], io->nin entries, NULL allowed), owned itself and both input arrays (whose
 * entries are borrowed). */
void tinyc_cli_io_free(struct tinyc_io *io, struct tinyc_io *ref, struct tinyc_tensor **owned);

#endif
