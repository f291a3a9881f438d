/* The table-driven command-line parser of every tinyc subcommand, and what the subcommands
 * share (tinyc_args.h). */
#include "tinyc_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"
#include "ir/tensor.h"

#ifndef TINYC_VERSION
#define TINYC_VERSION "0.0.0"
#endif

#define HELP_COLUMN 24	/* where the help text of an option starts */

static const tinyc_arg other_opts[] = {
	{"--help", "-h", TINYC_ARG_HELP, 0, NULL, 0, 0, NULL, NULL, "this text"},
	{"--version", NULL, TINYC_ARG_VERSION, 0, NULL, 0, 0, NULL, NULL, "print the version"},
	{0},
};
const tinyc_arg_group tinyc_args_other = {"Other options", other_opts};

/* Print "PROG: usage error: ..." and the --help hint. */
int tinyc_args_error(const tinyc_command *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: usage error: ", cmd->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see %s --help)\n", cmd->prog);
	return TINYC_ARGS_USAGE;
}

/* An option's spelling in --help: "-v, --verbose", "--target=sm_XY", "-o FILE", "--in
 * NAME=x.npy" (a short option's value, and one that holds '=' itself, after a space). */
static void arg_spelling(const tinyc_arg *a, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s%s", a->alias ? a->alias : "", a->alias ? ", " : "",
			 a->name);
	if (a->metavar && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%c%s", strchr(a->metavar, '=') || a->name[1] != '-' ? ' ' : '=',
			 a->metavar);
}

/* Print cmd's --help: usage, about, every option group, the computed lists, the footer. */
void tinyc_args_help(const tinyc_command *cmd, FILE *out)
{
	fprintf(out, "usage: %s", cmd->usage);	/* ends with a newline */
	if (cmd->about)
		fprintf(out, "\n%s", cmd->about);
	for (int g = 0; g < 6 && cmd->groups[g]; g++) {
		fprintf(out, "\n%s:\n", cmd->groups[g]->title);
		for (const tinyc_arg *a = cmd->groups[g]->opts; a->name; a++) {
			char spell[128];
			arg_spelling(a, spell, sizeof(spell));
			int width = fprintf(out, "  %s", spell);
			const char *h = a->help;
			if (width + 1 > HELP_COLUMN) {	/* too long: the text goes below */
				fputc('\n', out);
				width = 0;
			}
			/* the help text, its lines aligned at HELP_COLUMN */
			while (h) {
				const char *nl = strchr(h, '\n');
				int len = nl ? (int)(nl - h) : (int)strlen(h);
				fprintf(out, "%*s%.*s\n", HELP_COLUMN - width, "", len, h);
				width = 0;
				h = nl ? nl + 1 : NULL;
			}
		}
	}
	if (cmd->more_help)
		cmd->more_help(out);
	if (cmd->footer)
		fprintf(out, "\n%s", cmd->footer);
}

/* The option of cmd spelled s (up to len characters), or NULL. */
static const tinyc_arg *find_arg(const tinyc_command *cmd, const char *s, size_t len)
{
	for (int g = 0; g < 6 && cmd->groups[g]; g++)
		for (const tinyc_arg *a = cmd->groups[g]->opts; a->name; a++)
			if ((strlen(a->name) == len && !strncmp(a->name, s, len)) ||
			    (a->alias && strlen(a->alias) == len && !strncmp(a->alias, s, len)))
				return a;
	return NULL;
}

/* Is value one of the '|'-separated choices? */
static int is_choice(const char *choices, const char *value)
{
	size_t n = strlen(value);
	for (const char *c = choices; c && *c;) {
		const char *bar = strchr(c, '|');
		size_t len = bar ? (size_t)(bar - c) : strlen(c);
		if (len == n && !strncmp(c, value, n))
			return 1;
		c = bar ? bar + 1 : NULL;
	}
	return 0;
}

/* Parse a decimal integer (no sign when unsigned_only); 0 or -1. */
static int parse_integer(const char *s, int unsigned_only, long long *sv, unsigned long long *uv)
{
	char *end;
	errno = 0;
	if (!*s || (unsigned_only && *s == '-'))
		return -1;
	if (unsigned_only)
		*uv = strtoull(s, &end, 10);
	else
		*sv = strtoll(s, &end, 10);
	return *end || errno ? -1 : 0;
}

/* The usage error of an integer outside a's range (or not an integer). */
static int range_error(const tinyc_command *cmd, const tinyc_arg *a, const char *v)
{
	if (a->min == INT64_MIN && a->max == INT64_MAX)
		return tinyc_args_error(cmd, "%s expects an integer, got '%s'", a->name, v);
	if (a->max == INT64_MAX)
		return tinyc_args_error(cmd, "%s expects an integer >= %lld, got '%s'", a->name,
					(long long)a->min, v);
	return tinyc_args_error(cmd, "%s expects an integer in %lld..%lld, got '%s'", a->name,
				(long long)a->min, (long long)a->max, v);
}

/* Store the value of option a in dst; 0, or a usage error's exit status. */
static int set_value(const tinyc_command *cmd, const tinyc_arg *a, const char *v, void *dst)
{
	char *field = (char *)dst + a->field;
	long long sv = 0;
	unsigned long long uv = 0;
	switch (a->kind) {
	case TINYC_ARG_STR:
		*(const char **)field = v;
		return 0;
	case TINYC_ARG_CHOICE:
		if (!is_choice(a->choices, v))
			return tinyc_args_error(cmd, "%s expects one of %s, got '%s'", a->name,
						a->choices, v);
		*(const char **)field = v;
		return 0;
	case TINYC_ARG_INT:
	case TINYC_ARG_I64:
		if (parse_integer(v, 0, &sv, &uv) < 0 || sv < a->min || sv > a->max)
			return range_error(cmd, a, v);
		if (a->kind == TINYC_ARG_INT)
			*(int *)field = (int)sv;
		else
			*(int64_t *)field = sv;
		return 0;
	case TINYC_ARG_I64_LIST: {
		int *n = (int *)((char *)dst + a->count);
		if (parse_integer(v, 0, &sv, &uv) < 0 || sv < a->min || sv > a->max)
			return range_error(cmd, a, v);
		if (*n >= a->cap)
			return tinyc_args_error(cmd, "more than %d %s values at '%s'", a->cap, a->name, v);
		((int64_t *)field)[(*n)++] = sv;
		return 0;
	}
	case TINYC_ARG_U64:
		if (parse_integer(v, 1, &sv, &uv) < 0)
			return tinyc_args_error(cmd, "%s expects an unsigned integer, got '%s'",
						a->name, v);
		*(uint64_t *)field = uv;
		return 0;
	case TINYC_ARG_DOUBLE:
	case TINYC_ARG_FLOAT: {
		char *end;
		errno = 0;
		double x = strtod(v, &end);
		if (!*v || *end || errno)
			return tinyc_args_error(cmd, "%s expects a number, got '%s'", a->name, v);
		if (a->kind == TINYC_ARG_DOUBLE)
			*(double *)field = x;
		else
			*(float *)field = (float)x;
		return 0;
	}
	case TINYC_ARG_CALL: {
		char why[256] = "";
		if (a->set(dst, v, why, sizeof(why)) < 0)
			return tinyc_args_error(cmd, "%s", why);
		return 0;
	}
	default:
		return 0;
	}
}

/* The sibling subcommand that has an option spelled s, or NULL. */
static const tinyc_command *owner_of(const tinyc_command *cmd, const char *s, size_t len)
{
	for (int i = 0; cmd->siblings && cmd->siblings[i]; i++)
		if (cmd->siblings[i] != cmd && find_arg(cmd->siblings[i], s, len))
			return cmd->siblings[i];
	return NULL;
}

/* Parse argv into dst with cmd's tables (see tinyc_args.h). */
int tinyc_args_parse(const tinyc_command *cmd, int argc, char **argv, void *dst)
{
	int have_operand = 0;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (s[0] != '-' || !s[1]) {	/* the operand ("-" is standard input) */
			if (!cmd->operand)
				return tinyc_args_error(cmd, "unexpected argument '%s'", s);
			if (have_operand)
				return tinyc_args_error(cmd, "more than one input %s ('%s')",
							cmd->operand, s);
			*(const char **)((char *)dst + cmd->operand_field) = s;
			have_operand = 1;
			continue;
		}
		const char *eq = strchr(s, '=');
		size_t len = eq ? (size_t)(eq - s) : strlen(s);
		const tinyc_arg *a = find_arg(cmd, s, len);
		if (!a) {
			const tinyc_command *o = owner_of(cmd, s, len);
			if (o)
				return tinyc_args_error(cmd, "unknown option '%.*s' (an option of %s)",
							(int)len, s, o->prog);
			return tinyc_args_error(cmd, "unknown option '%.*s'", (int)len, s);
		}
		int takes_value = a->metavar != NULL;
		if (!takes_value && eq)
			return tinyc_args_error(cmd, "%s takes no value, got '%s'", a->name, s);
		const char *v = NULL;
		if (takes_value) {
			if (eq)
				v = eq + 1;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				return tinyc_args_error(cmd, "%s needs a value: %s %s", a->name, a->name,
							a->metavar);
		}
		if (a->kind == TINYC_ARG_HELP) {
			tinyc_args_help(cmd, stdout);
			return TINYC_ARGS_OK;
		}
		if (a->kind == TINYC_ARG_VERSION) {
			printf("%s %s (tinyc-uop v0)\n", cmd->prog, TINYC_VERSION);
			return TINYC_ARGS_OK;
		}
		if (a->kind == TINYC_ARG_FLAG) {
			*(int *)((char *)dst + a->field) = 1;
			continue;
		}
		int rc = set_value(cmd, a, v, dst);
		if (rc)
			return rc;
	}
	if (cmd->operand && !have_operand)
		return tinyc_args_error(cmd, "no input %s", cmd->operand);
	return -1;
}

struct tinyc_ctx *tinyc_cli_ctx_alloc(void)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	const char *nc = getenv("NO_COLOR");
	if (ctx)
		tinyc_ctx_set_no_color(ctx, nc && *nc);
	return ctx;
}

/* Free a run's inputs and outputs (tinyc_args.h). */
void tinyc_cli_io_free(struct tinyc_io *io, struct tinyc_io *ref, struct tinyc_tensor **owned)
{
	tinyc_io_clear_outputs(io);
	tinyc_io_clear_outputs(ref);
	for (int i = 0; owned && i < io->nin; i++)
		tinyc_tensor_free(owned[i]);
	free(owned);
	free(io->in);
	free(ref->in);
}
