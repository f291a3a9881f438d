/* libFuzzer target: the public C API (include/tinyc.h) from its compile entry point on.
 *
 * An input is "FLAGS BIND\n" then graph text.  FLAGS is a decimal number picking the
 * options (bits 0-1: device cpu, ref, gpuir, cuda; bit 2: target sm_90a instead of sm_80;
 * bit 3: verify_each; bit 4: runtime_sizes; bit 5: run the program on zeroed host arrays
 * when every size is known and small; bit 6: also fetch the CUDA text), BIND is the bind
 * string ("-" for none).  A compiled program is then asked for every input and output
 * (tinyc_program_*_info, find by name), its sizes are set again, and it may run (never on
 * "cuda": no GPU while fuzzing).  A failing call must leave diagnostics with a kind and the
 * status must say why; nothing may crash, hang or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/tinyc.h"
#include "ir/uop.h"

enum { MAX_RUN_ELEMS = 1 << 14 };	/* the largest value a fuzz input may run on */

static const char *const devices[] = {"cpu", "ref", "gpuir", "cuda"};

/* Abort unless a failed call left an error with a kind and a status that is not OK. */
static void check_failure(tinyc_context *c, tinyc_status s)
{
	if (s == TINYC_OK)
		return;
	if (s != TINYC_ERROR_USAGE && !tinyc_context_error_kind(c))
		abort();	/* every failure on valid arguments says what went wrong */
	if (!*tinyc_context_diagnostics(c) && s != TINYC_ERROR_USAGE)
		abort();
}

/* Whether every value of the graph in `text` has at most MAX_RUN_ELEMS elements under
 * `bind` (the interpreters take time in the largest intermediate, which the API does not
 * show: parse the text again with the internal parser to see it). */
static int small_graph(const char *text, const char *bind)
{
	int small = 0;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src = ctx ? tinyc_source_from_string("fuzz.uop", text, strlen(text)) : NULL;
	tinyc_graph *g = src ? tinyc_parse(ctx, src) : NULL;
	tinyc_bindings *b = g ? tinyc_bindings_alloc(ctx, g) : NULL;
	if (b && (!bind || tinyc_bindings_parse(ctx, g, bind, b) == 0)) {
		small = 1;
		for (int i = 0; i < g->n && small; i++) {
			int64_t n = 1;
			for (int d = 0; d < g->nodes[i].rank && small; d++) {
				int64_t v = tinyc_dim_value(&g->nodes[i].shape[d], b);
				small = v >= 0 && v <= MAX_RUN_ELEMS && (n *= v) <= MAX_RUN_ELEMS;
			}
		}
	}
	tinyc_bindings_free(b);
	tinyc_graph_free(g);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
	return small;
}

/* The bytes of every input and output into in_bytes/out_bytes; -1 when one is unknown. */
static int tensor_bytes(tinyc_program *p, int64_t *in_bytes, int64_t *out_bytes)
{
	for (int io = 0; io < 2; io++) {
		int n = io ? tinyc_program_num_outputs(p) : tinyc_program_num_inputs(p);
		for (int i = 0; i < n; i++) {
			tinyc_tensor_info t;
			tinyc_status s = io ? tinyc_program_output_info(p, i, &t)
					    : tinyc_program_input_info(p, i, &t);
			if (s != TINYC_OK || t.storage < 0 || t.storage > MAX_RUN_ELEMS)
				return -1;
			(io ? out_bytes : in_bytes)[i] = t.storage * t.elem_size;
		}
	}
	return 0;
}

/* Run p once on zeroed host arrays when every size is known and small. */
static void run_small(tinyc_context *c, tinyc_program *p, const char *text, const char *bind)
{
	int nin = tinyc_program_num_inputs(p), nout = tinyc_program_num_outputs(p);
	if (nin > 64 || nout > 64)
		return;
	int64_t in_bytes[64], out_bytes[64];
	if (!small_graph(text, bind) || tensor_bytes(p, in_bytes, out_bytes) < 0)
		return;
	const void *in[64];
	void *out[64];
	int ok = 1;
	for (int i = 0; i < nin; i++)
		ok &= (in[i] = calloc(1, (size_t)in_bytes[i] + 1)) != NULL;
	for (int i = 0; i < nout; i++)
		ok &= (out[i] = calloc(1, (size_t)out_bytes[i] + 1)) != NULL;
	if (ok)
		check_failure(c, tinyc_program_run(p, in, out));
	for (int i = 0; i < nin; i++)
		free((void *)in[i]);
	for (int i = 0; i < nout; i++)
		free(out[i]);
}

/* Ask a compiled program everything a caller would before running it. */
static void query(tinyc_context *c, tinyc_program *p, const char *text, const char *bind,
		  unsigned flags)
{
	int nin = tinyc_program_num_inputs(p), nout = tinyc_program_num_outputs(p);
	for (int io = 0; io < 2; io++)
		for (int i = 0; i < (io ? nout : nin); i++) {
			tinyc_tensor_info t;
			tinyc_status s = io ? tinyc_program_output_info(p, i, &t)
					    : tinyc_program_input_info(p, i, &t);
			if (s != TINYC_OK)
				abort();	/* an index in range always has a description */
			if (!t.name || t.rank < 0 || t.rank > TINYC_MAX_DIMS)
				abort();
			int found = io ? tinyc_program_find_output(p, t.name)
				       : tinyc_program_find_input(p, t.name);
			if (*t.name && found < 0)
				abort();	/* a named tensor is found by its name */
		}
	tinyc_tensor_info t;
	if (tinyc_program_input_info(p, nin, &t) != TINYC_ERROR_USAGE)
		abort();	/* an index out of range is a usage error */
	check_failure(c, tinyc_program_set_sizes(p, bind));
	if ((flags & 32) && strcmp(tinyc_program_device(p), "cuda"))
		run_small(c, p, text, bind);
	if ((flags & 64) && !strcmp(tinyc_program_device(p), "gpuir")) {
		char *cuda = NULL;
		check_failure(c, tinyc_program_cuda_source(p, &cuda));
		tinyc_string_free(cuda);
	}
}

/* Compile one input with the options its first line picks. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	char *nl = memchr(buf, '\n', size);
	const char *text = nl ? nl + 1 : "";
	if (nl)
		*nl = 0;
	unsigned flags = (unsigned)strtoul(buf, NULL, 10);
	char *sp = strchr(buf, ' ');
	const char *bind = sp && strcmp(sp + 1, "-") ? sp + 1 : NULL;
	tinyc_compile_options opt = {0};
	opt.device = devices[flags & 3];
	opt.target = flags & 4 ? "sm_90a" : "sm_80";
	opt.verify_each = (flags >> 3) & 1;
	opt.runtime_sizes = (flags >> 4) & 1;
	opt.bind = bind;
	tinyc_context *c = tinyc_context_new();
	if (c) {
		tinyc_program *p = NULL;
		tinyc_status s = tinyc_program_compile(c, text, "fuzz.uop", &opt, &p);
		check_failure(c, s);
		if ((s == TINYC_OK) != (p != NULL))
			abort();	/* a program exactly when the compile succeeded */
		if (p)
			query(c, p, text, bind, flags);
		tinyc_program_free(p);
		tinyc_context_free(c);
	}
	free(buf);
	return 0;
}
