/* The pipeline: the plain list of passes, and the driver that runs it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/pass.h"
#include "lower/lower.h"
#include "poly/poly.h"
#include "sched/schedule.h"
#include "codegen/gpu.h"

/* Stage "uop": parse the text into a UOp DAG. */
static int uop_run(tinyc_module *m)
{
	m->uop = tinyc_parse(m->ctx, m->src);
	if (!m->uop)
		return -1;
	m->bind = tinyc_bindings_alloc(m->ctx, m->uop);
	if (!m->bind)
		return -1;
	if (m->opt.bind && tinyc_bindings_parse(m->ctx, m->uop, m->opt.bind, m->bind) < 0)
		return -1;
	return 0;
}

static int uop_verify(tinyc_module *m)
{
	return tinyc_verify(m->ctx, m->uop, m->bind);
}

static int uop_print(tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt == TINYC_FMT_DOT)
		tinyc_print_dot(m->uop, out);
	else
		tinyc_print(m->uop, out);
	return 0;
}

static const tinyc_pass passes[] = {
	{"uop", "the UOp DAG, canonical form (text or dot)", uop_run, uop_verify, uop_print, NULL},
	{"indexbook", "per value: axes, AxisMaps (affine + floordiv), domains",
	 tinyc_indexbook_pass_run, tinyc_indexbook_pass_verify, tinyc_indexbook_pass_print,
	 tinyc_indexbook_pass_free},
	{"polyview", "isl domains and access relations, contraction tags",
	 tinyc_polyview_pass_run, tinyc_polyview_pass_verify, tinyc_polyview_pass_print,
	 tinyc_polyview_pass_free},
	{"rbssa", "Region-Buffer SSA: read/reshape/transpose/broadcast_in_dim/ewise/reduce/yield",
	 tinyc_rbssa_pass_run, tinyc_rbssa_pass_verify, tinyc_rbssa_pass_print,
	 tinyc_rbssa_pass_free, 1},
	{"polycore", "parallel/reduce/tail axes, isl dependences, buffer estimates, barriers",
	 tinyc_polycore_pass_run, tinyc_polycore_pass_verify, tinyc_polycore_pass_print,
	 tinyc_polycore_pass_free, 1},
	{"evt", "epilogue graphs: nodes, kinds, dtypes, edges (seed 000), visit order",
	 tinyc_evt_pass_run, tinyc_evt_pass_verify, tinyc_evt_pass_print, tinyc_evt_pass_free},
	{"schedule", "kernels, buffers, plan candidates with estimates, the choice",
	 tinyc_schedule_pass_run, tinyc_schedule_pass_verify, tinyc_schedule_pass_print,
	 tinyc_schedule_pass_free},
	{"gpuir", "GPU IR: kernels, params, shared memory, loops, predicated loads/stores",
	 tinyc_gpuir_pass_run, tinyc_gpuir_pass_verify, tinyc_gpuir_pass_print,
	 tinyc_gpuir_pass_free},
	{"cuda", "the CUDA C text handed to nvrtc (with grid/block/smem per kernel)",
	 tinyc_cuda_pass_run, tinyc_cuda_pass_verify, tinyc_cuda_pass_print, tinyc_cuda_pass_free},
};

const tinyc_pass *tinyc_pipeline(int *n)
{
	*n = (int)(sizeof(passes) / sizeof(passes[0]));
	return passes;
}

int tinyc_pass_find(const char *name)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return i;
	return -1;
}

tinyc_module *tinyc_module_alloc(tinyc_ctx *ctx, const tinyc_source *src,
				 const tinyc_options *opt)
{
	tinyc_module *m = tinyc_calloc(ctx, 1, sizeof(*m));
	if (!m)
		return NULL;
	m->ctx = ctx;
	m->src = src;
	if (opt)
		m->opt = *opt;
	return m;
}

/* Free every stage's IR: the module is as tinyc_module_alloc made it. */
void tinyc_module_reset(tinyc_module *m)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	for (int i = n - 1; i >= 0; i--) {
		if (p[i].free && m->stage[i])
			p[i].free(m->stage[i]);
		m->stage[i] = NULL;
	}
	tinyc_bindings_free(m->bind);
	tinyc_graph_free(m->uop);
	m->bind = NULL;
	m->uop = NULL;
}

void tinyc_module_free(tinyc_module *m)
{
	if (!m)
		return;
	tinyc_module_reset(m);
	free(m);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run passes 0..last, verifying the uop stage always, every stage with verify_each,
 * and the last stage always; with opt.kernels_only the leaf stages before `last` are
 * skipped (unless every stage is printed). */
int tinyc_module_run_until(tinyc_module *m, int last, int print_after_all, tinyc_buf *dumps)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	if (last < 0 || last >= n)
		return tinyc_error(m->ctx, "UnknownStage", "no stage number %d", last);
	for (int i = 0; i <= last; i++) {
		if (m->opt.kernels_only && p[i].leaf && i != last && !print_after_all) {
			if (m->opt.verbose)
				fprintf(stderr, "tinyc: pass %-10s skipped (an analysis no later stage "
					"reads)\n", p[i].name);
			continue;
		}
		double t0 = now_ms();
		if (p[i].run(m) < 0)
			return -1;
		double t1 = now_ms();
		if ((i == 0 || i == last || m->opt.verify_each) && p[i].verify && p[i].verify(m) < 0)
			return -1;
		if (m->opt.verbose)
			fprintf(stderr, "tinyc: pass %-10s %8.3f ms (verify %.3f ms)\n", p[i].name,
				t1 - t0, now_ms() - t1);
		if (print_after_all && dumps) {
			tinyc_buf_printf(dumps, "// ----- after %s -----\n", p[i].name);
			p[i].print(m, TINYC_FMT_TEXT, dumps);
		}
	}
	return 0;
}
