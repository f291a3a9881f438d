/* Shared by the test programs that compile every graph of the checkout through the library
 * API (tests/unit/test_codegen.c, tests/gpu/gpu_graphs.c): one graph compiled down to GPU
 * IR, its seeded random inputs, and the list of graph files.  Header-only: each program is
 * one translation unit. */
#ifndef TINYC_TESTS_GRAPH_HARNESS_H
#define TINYC_TESTS_GRAPH_HARNESS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "driver/options.h"
#include "ir/gpuir.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "sched/rowfuse.h"
#include "sched/schedule.h"

/* One graph compiled down to GPU IR through the library API. */
typedef struct compiled {
	tinyc_source *src;	/* the file */
	tinyc_graph *g;		/* its graph */
	tinyc_bindings *b;	/* compile-time bindings */
	tinyc_indexbook *ib;	/* AxisMaps */
	tinyc_schedule *s;	/* kernels and plans */
	tinyc_gpu_module *gm;	/* the GPU IR */
	tinyc_sched_options opt;	/* the options record the driver resolves */
	tinyc_tune_entry *tune;	/* its tuning entries (owned) */
} compiled;

/* Free everything c holds (c may be partly filled). */
static inline void compiled_free(compiled *c)
{
	tinyc_gpu_module_free(c->gm);
	tinyc_schedule_free(c->s);
	free(c->tune);
	tinyc_indexbook_free(c->ib);
	tinyc_bindings_free(c->b);
	tinyc_graph_free(c->g);
	tinyc_source_free(c->src);
	memset(c, 0, sizeof(*c));
}

/* Free a checked run: the reference's and the run's outputs, the nin inputs and their
 * array, and the compiled graph. */
static inline void checked_run_free(compiled *c, tinyc_io *ref, tinyc_io *got, tinyc_tensor **in,
				    int nin)
{
	tinyc_io_clear_outputs(ref);
	tinyc_io_clear_outputs(got);
	for (int i = 0; i < nin; i++)
		tinyc_tensor_free(in[i]);
	free(in);
	compiled_free(c);
}

/* Compile path (with compile-time bindings `bind`, may be NULL) for target (NULL: the
 * device's).  Returns 0, 1 when the graph (or the binding) is not valid, -1 when the back
 * end failed; diagnostics on ctx. */
static inline int compile(tinyc_ctx *ctx, const char *path, const char *bind, const char *target,
			  compiled *c)
{
	memset(c, 0, sizeof(*c));
	if (!(c->src = tinyc_source_read(ctx, path)) || !(c->g = tinyc_parse(ctx, c->src)))
		return 1;
	if (!(c->b = tinyc_bindings_alloc(ctx, c->g)))
		return -1;
	if (bind && tinyc_bindings_parse(ctx, c->g, bind, c->b) < 0)
		return 1;
	if (tinyc_verify(ctx, c->g, c->b) < 0)
		return 1;
	if (!(c->ib = tinyc_indexbook_build(ctx, c->g, c->b)) || tinyc_indexbook_verify(ctx, c->ib) < 0)
		return 1;
	/* partition, row groups and plans, as the schedule pass does */
	if (tinyc_options_resolve(ctx, target, &c->opt, &c->tune) < 0)
		return -1;
	if (!(c->s = tinyc_schedule_build(ctx, c->g, c->b, &c->opt, NULL, NULL)) ||
	    tinyc_schedule_verify(ctx, c->s) < 0 || !(c->gm = tinyc_gpuir_build(ctx, c->s, c->ib)) ||
	    tinyc_gpu_verify(ctx, c->gm, c->s->dev.smem_per_block_optin) < 0)
		return -1;
	return 0;
}

/* Seeded random inputs for the BUFFERs of g under bindings rb: one tensor per slot (a
 * strided BUFFER gets flat storage over the span its strides reach), filled from
 * seed * 1000003 + slot.  The array (*nin entries and a NULL, NULL where no BUFFER), or NULL
 * when out of memory; free each entry and the array. */
static inline tinyc_tensor **graph_inputs(tinyc_ctx *ctx, const tinyc_graph *g,
					  const tinyc_bindings *rb, uint64_t seed, int *nin)
{
	int n = 0;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].op == TINYC_OP_BUFFER && g->nodes[i].slot + 1 > n)
			n = (int)g->nodes[i].slot + 1;
	tinyc_tensor **in = calloc((size_t)n + 1, sizeof(*in));
	for (int i = 0; in && i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t shape[TINYC_MAX_RANK], span = 1;
		for (int d = 0; d < u->rank; d++) {
			shape[d] = tinyc_dim_value(&u->shape[d], rb);
			if (u->strides)
				span += (shape[d] - 1) * tinyc_dim_value(&u->strides[d], rb);
		}
		in[u->slot] = u->strides ? tinyc_tensor_alloc(ctx, u->dtype, 1, &span)
					 : tinyc_tensor_alloc(ctx, u->dtype, u->rank, shape);
		if (!in[u->slot]) {
			for (int s = 0; s < n; s++)
				tinyc_tensor_free(in[s]);
			free(in);
			return NULL;
		}
		tinyc_tensor_fill_random(in[u->slot], seed * 1000003u + (uint64_t)u->slot);
	}
	*nin = n;
	return in;
}

/* Append the .uop files of dir (and of its sub-folders when depth > 0; not Inputs/, Output/
 * or hidden ones) to (*v, *n). */
static inline void graph_files_add(char ***v, int *n, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[1200];
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "Inputs") || !strcmp(e->d_name, "Output"))
			continue;
		int w = snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (w < 0 || w >= (int)sizeof(path))
			continue;	/* too long for a test path */
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".uop")) {
			*v = realloc(*v, sizeof(char *) * (size_t)(*n + 1));
			(*v)[(*n)++] = strdup(path);
		} else if (depth > 0) {
			graph_files_add(v, n, path, depth - 1);
		}
	}
	if (d)
		closedir(d);
}

/* qsort comparison of two file names. */
static inline int graph_files_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every graph file of the checkout at root, sorted: examples/NAME.uop, tests/lit/[DIR/]NAME.uop,
 * tests/gpu/[DIR/]NAME.uop.  Returns their number; free with graph_files_free. */
static inline int graph_files(const char *root, char ***out)
{
	char **v = NULL, dir[1024];
	int n = 0;
	snprintf(dir, sizeof(dir), "%s/examples", root);
	graph_files_add(&v, &n, dir, 0);
	snprintf(dir, sizeof(dir), "%s/tests/lit", root);
	graph_files_add(&v, &n, dir, 1);
	snprintf(dir, sizeof(dir), "%s/tests/gpu", root);
	graph_files_add(&v, &n, dir, 1);
	if (n > 1)
		qsort(v, (size_t)n, sizeof(char *), graph_files_cmp);
	*out = v;
	return n;
}

static inline void graph_files_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

#endif
