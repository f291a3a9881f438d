/* The pipeline: the plain list of passes, their adapters from the typed module to each
 * stage's builder, verifier and printer, and the glue that runs them (written once). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/module.h"
#include "ir/rbssa.h"
#include "lower/lower.h"
#include "poly/poly.h"
#include "sched/schedule.h"
#include "sched/rowfuse.h"
#include "codegen/gpu.h"
#include "driver/options.h"

/* ---- stage "uop": the UOp DAG and its bindings ---- */

/* Parse the text; the module's bindings are rebuilt with the graph. */
static void *uop_build(tinyc_module *m)
{
	tinyc_bindings_free(m->bind);
	m->bind = NULL;
	tinyc_graph *g = tinyc_parse(m->ctx, m->src);
	if (!g)
		return NULL;
	m->bind = tinyc_bindings_alloc(m->ctx, g);
	if (!m->bind || (m->opt.bind && tinyc_bindings_parse(m->ctx, g, m->opt.bind, m->bind) < 0)) {
		tinyc_graph_free(g);
		return NULL;
	}
	return g;
}

static int uop_verify(const tinyc_module *m)
{
	return tinyc_verify(m->ctx, m->uop, m->bind);
}

static int uop_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt == TINYC_FMT_DOT)
		tinyc_print_dot(m->uop, out);
	else
		tinyc_print(m->uop, out);
	return 0;
}

static void uop_free(void *ir)
{
	tinyc_graph_free(ir);
}

/* ---- stage "indexbook" ---- */

static void *indexbook_build(tinyc_module *m)
{
	return tinyc_indexbook_build(m->ctx, m->uop, m->bind);
}

static int indexbook_verify(const tinyc_module *m)
{
	return tinyc_indexbook_verify(m->ctx, m->indexbook);
}

static int indexbook_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_indexbook_print(m->indexbook, out);
	return 0;
}

static void indexbook_free(void *ir)
{
	tinyc_indexbook_free(ir);
}

/* ---- stage "polyview" ---- */

static void *polyview_build(tinyc_module *m)
{
	return tinyc_polyview_build(m->ctx, m->indexbook, NULL);
}

static int polyview_verify(const tinyc_module *m)
{
	return tinyc_polyview_verify(m->ctx, m->polyview);
}

static int polyview_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_polyview_print(m->polyview, out);
	return 0;
}

static void polyview_free(void *ir)
{
	tinyc_polyview_free(ir);
}

/* ---- stage "rbssa" (an analysis) ---- */

/* From the UOp graph and the module's IndexBook (rbssa builds its own when absent). */
static void *rbssa_build(tinyc_module *m)
{
	return tinyc_rbssa_build(m->ctx, m->uop, m->bind, m->indexbook);
}

/* The verifier, then the IndexBook cross-check of seed §3.3. */
static int rbssa_verify(const tinyc_module *m)
{
	if (tinyc_rbssa_verify(m->ctx, m->rbssa) < 0)
		return -1;
	tinyc_indexbook *ib = m->indexbook, *own = NULL;
	if (!ib && !(ib = own = tinyc_indexbook_build(m->ctx, m->uop, m->bind)))
		return -1;
	int rc = tinyc_rbssa_check_indexbook(m->ctx, m->rbssa, ib);
	tinyc_indexbook_free(own);
	return rc;
}

static int rbssa_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_rbssa_print(m->rbssa, out);
	return 0;
}

static void rbssa_free(void *ir)
{
	tinyc_rbssa_free(ir);
}

/* ---- stage "polycore" (an analysis) ---- */

static void *polycore_build(tinyc_module *m)
{
	return tinyc_polycore_build(m->ctx, m->polyview);
}

static int polycore_verify(const tinyc_module *m)
{
	return tinyc_polycore_verify(m->ctx, m->polycore);
}

static int polycore_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_polycore_print(m->polycore, out);
	return 0;
}

static void polycore_free(void *ir)
{
	tinyc_polycore_free(ir);
}

/* ---- stage "evt" ---- */

static void *evt_build(tinyc_module *m)
{
	return tinyc_evt_extract(m->ctx, m->polyview);
}

static int evt_verify(const tinyc_module *m)
{
	return tinyc_evt_set_verify(m->ctx, m->evt);
}

static int evt_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_evt_set_print(m->evt, out);
	return 0;
}

static void evt_free(void *ir)
{
	tinyc_evt_set_free(ir);
}

/* ---- stage "schedule" ---- */

/* Partition, row groups (sched/rowfuse.c), plans; the earlier stages are only lent to the
 * providers (they may be freed before the schedule). */
static void *schedule_build(tinyc_module *m)
{
	if (tinyc_module_resolve_options(m) < 0)
		return NULL;
	return tinyc_schedule_build(m->ctx, m->uop, m->bind, &m->sched_opt, m->polyview, m->evt);
}

static int schedule_verify(const tinyc_module *m)
{
	return tinyc_schedule_verify(m->ctx, m->schedule);
}

static int schedule_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_schedule_print(m->schedule, out);
	return 0;
}

static void schedule_free(void *ir)
{
	tinyc_schedule_free(ir);
}

/* ---- stage "gpuir" ---- */

static void *gpuir_build(tinyc_module *m)
{
	return tinyc_gpuir_build(m->ctx, m->schedule, m->indexbook);
}

/* The verifier, against the shared memory the schedule's device allows. */
static int gpuir_verify(const tinyc_module *m)
{
	return tinyc_gpu_verify(m->ctx, m->gpuir,
				m->schedule ? m->schedule->dev.smem_per_block_optin : 0);
}

static int gpuir_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_gpu_print(m->gpuir, out);
	return 0;
}

static void gpuir_free(void *ir)
{
	tinyc_gpu_module_free(ir);
}

/* ---- stage "cuda" ---- */

static void *cuda_build(tinyc_module *m)
{
	return tinyc_cuda_text_build(m->ctx, m->gpuir);
}

static int cuda_verify(const tinyc_module *m)
{
	return tinyc_cuda_text_verify(m->ctx, m->cuda, m->gpuir);
}

static int cuda_print(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out)
{
	if (fmt != TINYC_FMT_TEXT)
		return -1;
	tinyc_buf_puts(out, m->cuda->text);
	return 0;
}

static void cuda_free(void *ir)
{
	tinyc_cuda_text_free(ir);
}

/* ---- the list ---- */

#define FIELD(f) offsetof(tinyc_module, f)
#define B(st) TINYC_BIT(TINYC_STAGE_##st)

static const tinyc_pass passes[] = {
	{"uop", "the UOp DAG, canonical form (text or dot)", TINYC_STAGE_UOP, FIELD(uop), 0, 0,
	 uop_build, uop_verify, uop_print, uop_free},
	{"indexbook", "per value: axes, AxisMaps (affine + floordiv), domains",
	 TINYC_STAGE_INDEXBOOK, FIELD(indexbook), B(UOP), 0,
	 indexbook_build, indexbook_verify, indexbook_print, indexbook_free},
	{"polyview", "isl domains and access relations, contraction tags",
	 TINYC_STAGE_POLYVIEW, FIELD(polyview), B(INDEXBOOK), 0,
	 polyview_build, polyview_verify, polyview_print, polyview_free},
	{"rbssa", "Region-Buffer SSA: read/reshape/transpose/broadcast_in_dim/ewise/reduce/yield",
	 TINYC_STAGE_RBSSA, FIELD(rbssa), B(UOP), B(INDEXBOOK),
	 rbssa_build, rbssa_verify, rbssa_print, rbssa_free, 1},
	{"polycore", "parallel/reduce/tail axes, isl dependences, buffer estimates, barriers",
	 TINYC_STAGE_POLYCORE, FIELD(polycore), B(POLYVIEW), 0,
	 polycore_build, polycore_verify, polycore_print, polycore_free, 1},
	{"evt", "epilogue graphs: nodes, kinds, dtypes, edges (seed 000), visit order",
	 TINYC_STAGE_EVT, FIELD(evt), B(POLYVIEW), 0,
	 evt_build, evt_verify, evt_print, evt_free},
	{"schedule", "kernels, buffers, plan candidates with estimates, the choice",
	 TINYC_STAGE_SCHEDULE, FIELD(schedule), B(UOP), B(POLYVIEW) | B(EVT),
	 schedule_build, schedule_verify, schedule_print, schedule_free},
	{"gpuir", "GPU IR: kernels, params, shared memory, loops, predicated loads/stores",
	 TINYC_STAGE_GPUIR, FIELD(gpuir), B(INDEXBOOK) | B(SCHEDULE), 0,
	 gpuir_build, gpuir_verify, gpuir_print, gpuir_free},
	{"cuda", "the CUDA C text handed to nvrtc (with grid/block/smem per kernel)",
	 TINYC_STAGE_CUDA, FIELD(cuda), B(GPUIR), 0,
	 cuda_build, cuda_verify, cuda_print, cuda_free},
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

/* ---- the glue ---- */

/* The module field that holds pass p's stage. */
static void **stage_slot(tinyc_module *m, const tinyc_pass *p)
{
	return (void **)((char *)m + p->field);
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

/* Free every stage's IR, latest first: the module is as tinyc_module_alloc made it. */
void tinyc_module_reset(tinyc_module *m)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	for (int i = n - 1; i >= 0; i--) {
		void **slot = stage_slot(m, &p[i]);
		if (*slot)
			p[i].free(*slot);
		*slot = NULL;
	}
	tinyc_bindings_free(m->bind);
	m->bind = NULL;
}

void tinyc_module_free(tinyc_module *m)
{
	if (!m)
		return;
	tinyc_module_reset(m);
	free(m->tune);
	free(m);
}

int tinyc_module_resolve_options(tinyc_module *m)
{
	if (m->resolved)
		return 0;
	if (tinyc_options_resolve(m->ctx, m->opt.target, &m->sched_opt, &m->tune) < 0)
		return -1;
	m->resolved = 1;
	return 0;
}

int tinyc_module_run_pass(tinyc_module *m, int i)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	if (i < 0 || i >= n)
		return tinyc_error(m->ctx, "UnknownStage", "no stage number %d", i);
	for (int j = 0; j < n; j++)
		if ((p[i].requires & TINYC_BIT(p[j].produces)) && !*stage_slot(m, &p[j]))
			return tinyc_error(m->ctx, "PipelineError", "the %s pass needs the %s stage",
					   p[i].name, p[j].name);
	void **slot = stage_slot(m, &p[i]);
	if (*slot)
		p[i].free(*slot);
	*slot = p[i].build(m);
	return *slot ? 0 : -1;
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
		if (tinyc_module_run_pass(m, i) < 0)
			return -1;
		double t1 = now_ms();
		if ((i == 0 || i == last || m->opt.verify_each) && p[i].verify(m) < 0)
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
