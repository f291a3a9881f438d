/* Unit tests of the contraction path (sched/matmul.c, codegen/matmul.c, codegen/evt_emit.c):
 *   - the schedule: the seed's candidate set, shared-memory limit, occupancy, the choice of
 *     the tensor-core template where dtypes and target allow it, tails, fused kernels, the
 *     dump (binding, predicate_tail, epilogue, reduction determinism);
 *   - numerics on the CPU: every graph of tests/gpu/epilogue (and transposed, vector-matrix,
 *     matrix-vector, float and bound-size variants) through both templates, run by the GPU
 *     IR interpreter and compared with the reference evaluator on random inputs, at sizes
 *     with tails (m in {8, 37}, n in {8, 29}, k in {8, 40}) and a batched case;
 *   - nvrtc: the CUDA of every graph and template compiles for sm_80 and sm_90;
 *   - the C API: an epilogue graph built by hand, attached to a hand-made matmul problem,
 *     checked against a loop computed in the test.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "codegen/gpu.h"
#include "codegen/matmul.h"
#include "driver/options.h"
#include "ir/tensor.h"
#include "runtime/runtime.h"
#include "sched/matmul.h"

/* ------------------------------------------------------------------ helpers ---- */

/* A parsed, verified graph with run-time bindings. */
typedef struct graph_case {
	tinyc_source *src;
	tinyc_graph *g;
	tinyc_bindings *run;	/* run-time values of the symbols */
	tinyc_bindings *ct;	/* compile-time values (empty unless bound) */
} graph_case;

static void load_text(tinyc_ctx *ctx, graph_case *c, const char *name, const char *text,
		      const char *run_bind, const char *ct_bind)
{
	c->src = tinyc_source_from_string(name, text, strlen(text));
	c->g = tinyc_parse(ctx, c->src);
	if (!c->g) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("parse %s", name);
	}
	c->run = tinyc_bindings_alloc(ctx, c->g);
	c->ct = tinyc_bindings_alloc(ctx, c->g);
	cr_assert(tinyc_bindings_parse(ctx, c->g, run_bind, c->run) == 0, "bind %s", run_bind);
	if (ct_bind)
		cr_assert(tinyc_bindings_parse(ctx, c->g, ct_bind, c->ct) == 0);
	if (tinyc_verify(ctx, c->g, c->run) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("verify %s", name);
	}
}

static void load_file(tinyc_ctx *ctx, graph_case *c, const char *file, const char *run_bind,
		      const char *ct_bind)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/gpu/epilogue/%s", TINYC_SOURCE_DIR, file);
	tinyc_source *s = tinyc_source_read(ctx, path);
	cr_assert(s, "read %s", path);
	load_text(ctx, c, file, s->text, run_bind, ct_bind);
	tinyc_source_free(s);
}

static void case_free(graph_case *c)
{
	tinyc_bindings_free(c->run);
	tinyc_bindings_free(c->ct);
	tinyc_graph_free(c->g);
	tinyc_source_free(c->src);
}

/* The schedule of g: partition, the options record as the driver resolves it (target and
 * the TINYC_* knobs the tests set), the generic and matmul providers, the cheapest. */
static tinyc_schedule *plan(tinyc_ctx *ctx, graph_case *c, const char *target)
{
	tinyc_schedule *s = tinyc_partition(ctx, c->g, c->ct);
	cr_assert(s);
	tinyc_sched_options o;
	tinyc_tune_entry *tune;
	cr_assert(tinyc_options_resolve(ctx, target, &o, &tune) == 0);
	cr_assert(!tune, "a named target has no tuning entries");
	tinyc_schedule_set_options(s, &o);
	for (int i = 0; i < s->nkern; i++) {
		tinyc_skernel *k = &s->kerns[i];
		cr_assert(tinyc_plan_generic.propose(ctx, s, k) == 0);
		if (tinyc_plan_matmul.propose(ctx, s, k) < 0) {
			tinyc_ctx_print_diags(ctx, stderr);
			cr_assert_fail("matmul provider");
		}
		k->choice = -1;
		for (int j = 0; j < k->ncand; j++)
			if (k->choice < 0 || k->cands[j].est_us < k->cands[k->choice].est_us)
				k->choice = j;
	}
	cr_assert(tinyc_schedule_verify(ctx, s) == 0);
	return s;
}

/* The GPU IR module of a planned schedule (the gpuir pass, with the matmul builder). */
static tinyc_gpu_module *build(tinyc_ctx *ctx, tinyc_schedule *s, graph_case *c)
{
	tinyc_indexbook *ib = tinyc_indexbook_build(ctx, c->g, c->ct);
	cr_assert(ib);
	tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
	cr_assert(tinyc_gpu_set_symbols(gm, c->g, c->ct) == 0);
	snprintf(gm->target, sizeof(gm->target), "%s", s->dev.target);
	gm->arch_major = s->dev.arch.major;
	gm->arch_minor = s->dev.arch.minor;
	for (int i = 0; i < s->nbuf; i++) {
		const tinyc_sbuf *sb = &s->bufs[i];
		tinyc_gbuf gb;
		memset(&gb, 0, sizeof(gb));
		gb.name = sb->name;
		gb.role = sb->role == TINYC_SB_INPUT ? TINYC_GB_INPUT
			  : sb->role == TINYC_SB_OUTPUT ? TINYC_GB_OUTPUT : TINYC_GB_TEMP;
		gb.index = sb->index;
		gb.node = sb->node;
		gb.dtype = sb->dtype;
		gb.rank = sb->rank;
		memcpy(gb.shape, sb->shape, sizeof(gb.shape));
		gb.has_strides = sb->has_strides;
		memcpy(gb.strides, sb->strides, sizeof(gb.strides));
		cr_assert(tinyc_gpu_add_buf(gm, &gb) >= 0);
	}
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		int rc = p->kind == TINYC_PLAN_MATMUL ? tinyc_matmul_build(ctx, gm, s, ib, i)
						      : tinyc_isl_kernel_build(ctx, gm, s, ib, i);
		if (rc < 0) {
			tinyc_ctx_print_diags(ctx, stderr);
			cr_assert_fail("building kernel %s", s->kerns[i].name);
		}
	}
	if (tinyc_gpu_verify(ctx, gm, s->dev.smem_per_block_optin) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("GPU IR verifier");
	}
	tinyc_indexbook_free(ib);
	return gm;
}

/* The chosen plan's matmul ext of the first matmul kernel, or NULL. */
static const tinyc_mm_plan *matmul_plan(const tinyc_schedule *s, int *kernel)
{
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		if (p && p->kind == TINYC_PLAN_MATMUL && ((tinyc_mm_plan *)p->ext)->fused_into < 0) {
			if (kernel)
				*kernel = i;
			return p->ext;
		}
	}
	return NULL;
}

/* Run gm on random inputs with the interpreter and compare every output with the reference
 * evaluator.  Returns the number of mismatching outputs. */
static int check_numerics(tinyc_ctx *ctx, graph_case *c, tinyc_gpu_module *gm, const char *what)
{
	const tinyc_graph *g = c->g;
	tinyc_io io;
	memset(&io, 0, sizeof(io));
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].op == TINYC_OP_BUFFER && g->nodes[i].slot + 1 > io.nin)
			io.nin = (int)g->nodes[i].slot + 1;
	io.in = calloc((size_t)io.nin + 1, sizeof(*io.in));
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t shape[TINYC_MAX_RANK];
		for (int d = 0; d < u->rank; d++)
			shape[d] = tinyc_dim_value(&u->shape[d], c->run);
		io.in[u->slot] = tinyc_tensor_alloc(ctx, u->dtype, u->rank, shape);
		tinyc_tensor_fill_random(io.in[u->slot], 77 + (uint64_t)i);
	}
	if (tinyc_eval(ctx, g, c->run, &io) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("reference evaluator");
	}
	tinyc_gpu_mem mem;
	mem.buf = calloc((size_t)gm->nbuf + 1, sizeof(void *));
	mem.buf_elems = calloc((size_t)gm->nbuf + 1, sizeof(int64_t));
	mem.sym = c->run->val;
	tinyc_tensor **dev = calloc((size_t)gm->nbuf + 1, sizeof(*dev));
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		int64_t n = 1;
		for (int d = 0; d < b->rank; d++)
			n *= tinyc_dim_value(&b->shape[d], c->run);
		mem.buf_elems[i] = n;
		if (b->role == TINYC_GB_INPUT) {
			mem.buf[i] = io.in[b->index]->data;
			continue;
		}
		int64_t sh[1] = {n};
		dev[i] = tinyc_tensor_alloc(ctx, b->dtype, 1, sh);
		/* garbage: every element must be written */
		memset(dev[i]->data, 0x7b, (size_t)(n ? n : 1) * (size_t)tinyc_dtype_size(b->dtype));
		mem.buf[i] = dev[i]->data;
	}
	for (int k = 0; k < gm->nkernel; k++)
		if (tinyc_gpu_interp(ctx, gm, gm->kernels[k], &mem) < 0) {
			tinyc_ctx_print_diags(ctx, stderr);
			cr_assert_fail("%s: interpreter on kernel %s", what, gm->kernels[k]->name);
		}
	int bad = 0;
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		if (b->role != TINYC_GB_OUTPUT)
			continue;
		tinyc_tensor *ref = io.out[b->index];
		tinyc_tensor got = *dev[i];
		got.rank = ref->rank;
		memcpy(got.shape, ref->shape, sizeof(got.shape));
		double tol = tinyc_dtype_is_16bit_float(b->dtype) ? 4e-3 : 2e-4;
		tinyc_cmp cmp;
		cr_assert(tinyc_tensor_compare(ctx, &got, ref, tol, tol, &cmp) == 0);
		if (cmp.mismatched) {
			cr_log_error("%s: output %s: %lld mismatches, max abs %.3g at %lld (got %g, want %g)",
				     what, b->name, (long long)cmp.mismatched, cmp.max_abs,
				     (long long)cmp.worst, tinyc_tensor_get(&got, cmp.worst),
				     tinyc_tensor_get(ref, cmp.worst));
			bad++;
		}
	}
	for (int i = 0; i < gm->nbuf; i++)
		tinyc_tensor_free(dev[i]);
	free(dev);
	free(mem.buf);
	free(mem.buf_elems);
	for (int i = 0; i < io.nin; i++)
		tinyc_tensor_free(io.in[i]);
	free(io.in);
	tinyc_io_clear_outputs(&io);
	free(io.out);
	return bad;
}

/* Plan (forcing a template), build and check g at one size. */
static void run_case(const char *file, const char *text, const char *variant, const char *bind,
		     const char *ct_bind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	graph_case c;
	if (file)
		load_file(ctx, &c, file, bind, ct_bind);
	else
		load_text(ctx, &c, "inline.uop", text, bind, ct_bind);
	setenv("TINYC_MATMUL", variant, 1);
	tinyc_schedule *s = plan(ctx, &c, "sm_80");
	const tinyc_mm_plan *mp = matmul_plan(s, NULL);
	cr_assert(mp, "%s: no matmul plan", file ? file : "inline");
	cr_assert_eq(mp->t.variant, strcmp(variant, "mma") ? TINYC_MM_SIMT : TINYC_MM_MMA,
		     "%s: the forced template", file ? file : "inline");
	tinyc_gpu_module *gm = build(ctx, s, &c);
	char what[256];
	snprintf(what, sizeof(what), "%s %s %s", file ? file : "inline", variant, bind);
	cr_assert_eq(check_numerics(ctx, &c, gm, what), 0, "%s", what);
	tinyc_gpu_module_free(gm);
	tinyc_schedule_free(s);
	case_free(&c);
	tinyc_ctx_free(ctx);
}

static const char *const files[] = {
	"bias_relu.uop", "alpha_beta.uop", "beta_c_alpha_aux.uop", "pre_and_act.uop",
	"col_bias.uop", "scalar_tensor.uop", "gelu_tanh.uop", "sigmoid.uop", "clamp.uop",
	"relu_twice.uop", "aux_twice.uop", "reductions.uop", "dead_branch.uop",
};

/* ------------------------------------------------------------------ schedule ---- */

Test(matmul_schedule, candidates_and_choice)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	graph_case c;
	load_file(ctx, &c, "bias_relu.uop", "M=1024,N=1024,K=1024", NULL);
	unsetenv("TINYC_MATMUL");
	tinyc_schedule *s = plan(ctx, &c, "sm_80");
	cr_assert_eq(s->nkern, 1);
	const tinyc_skernel *k = &s->kerns[0];
	int simt = 0, mma = 0;
	for (int i = 0; i < k->ncand; i++) {
		const tinyc_plan *p = &k->cands[i];
		cr_assert_eq(p->kind, TINYC_PLAN_MATMUL, "generic candidates are dropped");
		const tinyc_mm_plan *mp = p->ext;
		const tinyc_mm_tiles *t = &mp->t;
		cr_assert(t->bm == 64 || t->bm == 128 || (t->variant == TINYC_MM_MMA && t->bm == 256));
		cr_assert(t->bn == 64 || t->bn == 128 || (t->variant == TINYC_MM_MMA && t->bn == 256));
		cr_assert(t->bk == 16 || t->bk == 32 || t->bk == 64);
		/* static arrays stay under 80% of 48 KiB; bigger rings use the opt-in dynamic
		 * segment (mma only) */
		cr_assert_leq((double)t->smem, 0.8 * (t->dyn_smem ? s->dev.smem_per_block_optin : 48 * 1024),
			      "shared memory limit");
		cr_assert(!t->dyn_smem || (t->variant == TINYC_MM_MMA && t->smem > 0.8 * 48 * 1024));
		cr_assert_geq(t->ctas_per_sm, 1);
		cr_assert(p->est_us > 0);
		if (t->variant == TINYC_MM_SIMT) {
			simt++;
			cr_assert_eq(t->stages, 1);
			cr_assert_eq(t->tm * 16, t->bm);
			cr_assert_eq(t->smem, (int64_t)(t->bm * t->bk + t->bk * t->bn) * 2);
		} else {
			mma++;
			cr_assert(t->stages >= 2 && t->stages <= 4);
			cr_assert(t->async_a && t->async_b);
		}
	}
	cr_assert_eq(simt, 12, "BM, BN in {64,128}, BK in {16,32,64}");
	cr_assert_gt(mma, 0);
	const tinyc_mm_plan *mp = matmul_plan(s, NULL);
	cr_assert_eq(mp->t.variant, TINYC_MM_MMA, "tensor cores win for fp16");
	/* the estimate is max(compute, memory) over the efficiency */
	const tinyc_plan *p = tinyc_skernel_plan(k);
	double t = fmax(mp->t_compute_us, mp->t_memory_us) / p->eff;
	cr_assert(p->est_us >= t && p->est_us < t + 10);
	cr_assert_float_eq(mp->flops, 2.0 * 1024 * 1024 * 1024, 1);
	tinyc_buf b = {0};
	tinyc_matmul_plan_print(s, p, &b);
	cr_assert(strstr(b.data, "bind: n.o -> block.x, m.o -> block.y, l -> block.z"), "%s", b.data);
	cr_assert(strstr(b.data, "predicate_tail: m n k"), "%s", b.data);
	cr_assert(strstr(b.data, "epilogue: in registers on the accumulator after the k loop, 7 nodes, "
			 "visit 0 1 2 3 4 5 6"), "%s", b.data);
	cr_assert(strstr(b.data, "load bias: row vector"), "%s", b.data);
	cr_assert(strstr(b.data, "store Y: one predicated write per element"), "%s", b.data);
	tinyc_buf_free(&b);
	tinyc_schedule_free(s);
	case_free(&c);
	tinyc_ctx_free(ctx);
}

/* Float operands have no tensor-core candidate; bound sizes that divide the tiles need no
 * tail predicates and get int indices. */
Test(matmul_schedule, float_operands_and_bound_sizes)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	graph_case c;
	const char *text =
		"%0 = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"W\") : float[K,N]\n"
		"%2 = RESHAPE(%0, shape=[M,1,K]) : float[M,1,K]\n"
		"%3 = RESHAPE(%1, shape=[1,K,N]) : float[1,K,N]\n"
		"%4 = PERMUTE(%3, perm=[0,2,1]) : float[1,N,K]\n"
		"%5 = MUL(%2, %4) : float[M,N,K]\n"
		"%6 = REDUCE(%5, op=ADD, axes=[2], keepdim=false) : float[M,N]\n"
		"%7 = OUTPUT(%6, name=\"Y\") : float[M,N]\n";
	load_text(ctx, &c, "f32.uop", text, "M=256,N=128,K=64", "M=256,N=128,K=64");
	/* fp32 operands: SIMT tiles and, on tensor cores, 3xTF32; each forced in turn */
	static const char *const forced[] = {"simt", "tf32x3"};
	static const char *const layout[] = {"threads (16, 16)", "mma.sync m16n8k8 tf32"};
	for (int f = 0; f < 2; f++) {
		unsetenv("TINYC_MATMUL");
		tinyc_schedule *s = plan(ctx, &c, "sm_90");
		int seen[2] = {0, 0};
		for (int i = 0; i < s->kerns[0].ncand; i++) {
			tinyc_mm_variant v = ((tinyc_mm_plan *)s->kerns[0].cands[i].ext)->t.variant;
			cr_assert(v == TINYC_MM_SIMT || v == TINYC_MM_TF32X3, "variant %d", v);
			seen[v == TINYC_MM_TF32X3] = 1;
		}
		cr_assert(seen[0] && seen[1]);
		tinyc_schedule_free(s);
		setenv("TINYC_MATMUL", forced[f], 1);
		s = plan(ctx, &c, "sm_90");
		unsetenv("TINYC_MATMUL");
		const tinyc_mm_plan *mp = matmul_plan(s, NULL);
		cr_assert_eq(mp->t.variant, f ? TINYC_MM_TF32X3 : TINYC_MM_SIMT);
		cr_assert(!mp->t.pred_m && !mp->t.pred_n && !mp->t.pred_k);
		cr_assert_eq(mp->t.index_dtype, TINYC_INT);
		tinyc_buf b = {0};
		tinyc_matmul_plan_print(s, tinyc_skernel_plan(&s->kerns[0]), &b);
		cr_assert(strstr(b.data, "predicate_tail: none"), "%s", b.data);
		cr_assert(strstr(b.data, layout[f]), "%s", b.data);
		tinyc_buf_free(&b);
		tinyc_gpu_module *gm = build(ctx, s, &c);
		cr_assert_eq(check_numerics(ctx, &c, gm, forced[f]), 0);
		tinyc_gpu_module_free(gm);
		tinyc_schedule_free(s);
	}
	case_free(&c);
	tinyc_ctx_free(ctx);
}

/* The kernels of several outputs and reductions are taken over by one matmul kernel. */
Test(matmul_schedule, fused_kernels)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	graph_case c;
	load_file(ctx, &c, "reductions.uop", "M=64,N=64,K=64", NULL);
	unsetenv("TINYC_MATMUL");
	tinyc_schedule *s = plan(ctx, &c, "sm_80");
	int first = -1, fused = 0;
	const tinyc_mm_plan *mp = matmul_plan(s, &first);
	cr_assert(mp);
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		cr_assert_eq(p->kind, TINYC_PLAN_MATMUL, "kernel %s", s->kerns[i].name);
		if (((tinyc_mm_plan *)p->ext)->fused_into == first)
			fused++;
	}
	cr_assert_eq(fused, s->nkern - 1);
	tinyc_buf b = {0};
	tinyc_matmul_plan_print(s, tinyc_skernel_plan(&s->kerns[first]), &b);
	cr_assert(strstr(b.data, "reduce rowsum (RowReduction ADD in float): thread -> warp shuffle"),
		  "%s", b.data);
	cr_assert(strstr(b.data, "deterministic (no atomics)"), "%s", b.data);
	tinyc_buf_free(&b);
	b = (tinyc_buf){0};
	tinyc_matmul_plan_print(s, tinyc_skernel_plan(&s->kerns[first + 1]), &b);
	cr_assert(strstr(b.data, "fused: no kernel of its own"), "%s", b.data);
	tinyc_buf_free(&b);
	/* the module: the matmul kernel and one final pass per reduction */
	tinyc_gpu_module *gm = build(ctx, s, &c);
	cr_assert_eq(gm->nkernel, 4);
	int temps = 0;
	for (int i = 0; i < gm->nbuf; i++)
		temps += gm->bufs[i].role == TINYC_GB_TEMP && !strncmp(gm->bufs[i].name, "ws_", 3);
	cr_assert_eq(temps, 3);
	tinyc_gpu_module_free(gm);
	tinyc_schedule_free(s);
	case_free(&c);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------------ numerics ---- */

/* Every graph, both templates, a small and a tailed size. */
Test(matmul_numerics, epilogue_graphs, .timeout = 600)
{
	static const char *const sizes[] = {"M=8,N=8,K=8", "M=37,N=29,K=40"};
	for (size_t f = 0; f < sizeof(files) / sizeof(*files); f++)
		for (int v = 0; v < 2; v++)
			for (int z = 0; z < 2; z++)
				run_case(files[f], NULL, v ? "mma" : "simt", sizes[z], NULL);
}

/* The tail sizes of the brief, all combinations, for the bias and reduction graphs. */
Test(matmul_numerics, tails, .timeout = 600)
{
	static const int ms[] = {8, 37}, ns[] = {8, 29}, ks[] = {8, 40};
	static const char *const fs[] = {"bias_relu.uop", "reductions.uop"};
	for (int f = 0; f < 2; f++)
		for (int v = 0; v < 2; v++)
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 2; j++)
					for (int q = 0; q < 2; q++) {
						char bind[64];
						snprintf(bind, sizeof(bind), "M=%d,N=%d,K=%d", ms[i], ns[j], ks[q]);
						run_case(fs[f], NULL, v ? "mma" : "simt", bind, NULL);
					}
}

/* Aligned sizes take the cp.async path; larger tails cover several CTAs per axis. */
Test(matmul_numerics, aligned_and_multi_tile, .timeout = 600)
{
	for (int v = 0; v < 2; v++) {
		run_case("aux_twice.uop", NULL, v ? "mma" : "simt", "M=64,N=64,K=64", NULL);
		run_case("reductions.uop", NULL, v ? "mma" : "simt", "M=136,N=72,K=48", NULL);
		run_case("bias_relu.uop", NULL, v ? "mma" : "simt", "M=128,N=128,K=32",
			 "M=128,N=128,K=32");
	}
}

Test(matmul_numerics, batched, .timeout = 300)
{
	for (int v = 0; v < 2; v++) {
		run_case("batched.uop", NULL, v ? "mma" : "simt", "B=3,M=37,N=29,K=40", NULL);
		run_case("batched.uop", NULL, v ? "mma" : "simt", "B=2,M=16,N=32,K=48", NULL);
	}
}

/* Operand layouts: A given transposed ([K,M] in memory), B given as [N,K]. */
Test(matmul_numerics, transposed_operands, .timeout = 300)
{
	const char *text =
		"%0 = BUFFER(slot=0, name=\"XT\") : half[K,M]\n"
		"%1 = BUFFER(slot=1, name=\"WT\") : half[N,K]\n"
		"%2 = PERMUTE(%0, perm=[1,0]) : half[M,K]\n"
		"%3 = RESHAPE(%2, shape=[M,1,K]) : half[M,1,K]\n"
		"%4 = RESHAPE(%1, shape=[1,N,K]) : half[1,N,K]\n"
		"%5 = MUL(%3, %4) : half[M,N,K]\n"
		"%6 = CAST(%5) : float[M,N,K]\n"
		"%7 = REDUCE(%6, op=ADD, axes=[2], keepdim=false) : float[M,N]\n"
		"%b = BUFFER(slot=2, name=\"bias\") : float[N]\n"
		"%s = ADD(%7, %b) : float[M,N]\n"
		"%t = PERMUTE(%s, perm=[1,0]) : float[N,M]\n"
		"%y = OUTPUT(%t, name=\"YT\") : float[N,M]\n";
	for (int v = 0; v < 2; v++) {
		run_case(NULL, text, v ? "mma" : "simt", "M=37,N=29,K=40", NULL);
		run_case(NULL, text, v ? "mma" : "simt", "M=64,N=64,K=64", NULL);
	}
}

/* Vector-matrix and matrix-vector products (M or N absent), seed §11. */
Test(matmul_numerics, vector_forms, .timeout = 300)
{
	const char *vm =
		"%0 = BUFFER(slot=0, name=\"x\") : half[K]\n"
		"%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
		"%2 = PERMUTE(%1, perm=[1,0]) : half[N,K]\n"
		"%3 = MUL(%0, %2) : half[N,K]\n"
		"%4 = CAST(%3) : float[N,K]\n"
		"%5 = REDUCE(%4, op=ADD, axes=[-1], keepdim=false) : float[N]\n"
		"%6 = RELU(%5) : float[N]\n"
		"%7 = OUTPUT(%6, name=\"y\") : float[N]\n";
	const char *mv =
		"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"w\") : half[K]\n"
		"%3 = MUL(%0, %1) : half[M,K]\n"
		"%4 = CAST(%3) : float[M,K]\n"
		"%5 = REDUCE(%4, op=ADD, axes=[-1], keepdim=false) : float[M]\n"
		"%7 = OUTPUT(%5, name=\"y\") : float[M]\n";
	for (int v = 0; v < 2; v++) {
		run_case(NULL, vm, v ? "mma" : "simt", "N=29,K=40", NULL);
		run_case(NULL, mv, v ? "mma" : "simt", "M=37,K=40", NULL);
		run_case(NULL, mv, v ? "mma" : "simt", "M=8,K=16", NULL);
	}
}

/* ------------------------------------------------------------------- nvrtc ---- */

/* The CUDA of every graph, both templates, compiles for sm_80 and sm_90. */
Test(matmul_nvrtc, every_graph_compiles, .timeout = 900)
{
	if (tinyc_nvrtc_version() < 0) {
		cr_log_warn("nvrtc not available: skipped");
		cr_skip_test("no nvrtc");
	}
	static const char *const archs[] = {"sm_80", "sm_90"};
	for (size_t f = 0; f <= sizeof(files) / sizeof(*files); f++)
		for (int v = 0; v < 2; v++) {
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			graph_case c;
			const char *file = f < sizeof(files) / sizeof(*files) ? files[f] : "batched.uop";
			load_file(ctx, &c, file, f < sizeof(files) / sizeof(*files) ? "M=8,N=8,K=8"
										 : "B=2,M=8,N=8,K=8",
				  NULL);
			setenv("TINYC_MATMUL", v ? "mma" : "simt", 1);
			tinyc_schedule *s = plan(ctx, &c, archs[v]);
			tinyc_gpu_module *gm = build(ctx, s, &c);
			tinyc_buf cu = {0};
			cr_assert(tinyc_cuda_print(ctx, gm, &cu) == 0);
			for (int a = 0; a < 2; a++) {
				tinyc_blob blob;
				memset(&blob, 0, sizeof(blob));
				if (tinyc_nvrtc_compile(ctx, cu.data, file, archs[a], 1, &blob) < 0) {
					tinyc_ctx_print_diags(ctx, stderr);
					cr_assert_fail("%s (%s) does not compile for %s", file,
						       v ? "mma" : "simt", archs[a]);
				}
				cr_assert_gt(blob.size, 0);
				tinyc_blob_clear(&blob);
			}
			tinyc_buf_free(&cu);
			tinyc_gpu_module_free(gm);
			tinyc_schedule_free(s);
			case_free(&c);
			tinyc_ctx_free(ctx);
		}
}

/* ------------------------------------------------------------------- C API ---- */

/* D = relu(alpha * acc + C) + bias with the rowmax of D, built by hand (seed 000 style) and
 * attached to a hand-made problem over module buffers; checked against loops. */
Test(matmul_api, hand_built_epilogue, .timeout = 300)
{
	for (int v = 0; v < 2; v++) {
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		tinyc_graph *sg = tinyc_graph_alloc(ctx);	/* only for its symbol table */
		int sm = tinyc_graph_symbol(ctx, sg, "M", 1), sn = tinyc_graph_symbol(ctx, sg, "N", 1);
		int sk = tinyc_graph_symbol(ctx, sg, "K", 1);
		tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
		cr_assert(tinyc_gpu_set_symbols(gm, sg, NULL) == 0);
		snprintf(gm->target, sizeof(gm->target), "sm_80");
		gm->arch_major = 8;
		tinyc_dim M = {0, sm}, N = {0, sn}, K = {0, sk};
		static const char *const names[] = {"A", "B", "C", "bias", "D", "rmax"};
		tinyc_dtype dts[] = {TINYC_HALF, TINYC_HALF, TINYC_FLOAT, TINYC_FLOAT, TINYC_FLOAT,
				     TINYC_FLOAT};
		for (int i = 0; i < 6; i++) {
			tinyc_gbuf gb;
			memset(&gb, 0, sizeof(gb));
			gb.name = (char *)names[i];
			gb.role = i < 4 ? TINYC_GB_INPUT : TINYC_GB_OUTPUT;
			gb.index = i < 4 ? i : i - 4;
			gb.node = -1;
			gb.dtype = dts[i];
			gb.rank = i == 3 ? 1 : i == 5 ? 1 : 2;
			gb.shape[0] = i == 0 ? M : i == 1 ? K : i == 3 ? N : i == 5 ? M : M;
			gb.shape[1] = i == 0 ? K : N;
			cr_assert(tinyc_gpu_add_buf(gm, &gb) == i);
		}
		/* the epilogue: nodes, then the edge tuple */
		tinyc_evt *g = tinyc_evt_alloc(ctx, TINYC_FLOAT);
		const char *syms[3] = {"M", "N", "K"};
		tinyc_evt_set_symbols(ctx, g, 3, syms);
		tinyc_evt_layout full = tinyc_evt_layout_rowmajor(&M, &N), row = full, col = full;
		row.stride[0] = tinyc_evt_poly_const(0);
		row.stride[1] = tinyc_evt_poly_const(1);
		col.stride[0] = tinyc_evt_poly_const(1);
		col.stride[1] = tinyc_evt_poly_const(0);
		tinyc_evt_acc_fetch(ctx, g);						/* 0 */
		tinyc_evt_scalar(ctx, g, TINYC_FLOAT, 0.5);				/* 1 */
		tinyc_evt_compute(ctx, g, TINYC_OP_MUL, TINYC_FLOAT);			/* 2 */
		tinyc_evt_load(ctx, g, TINYC_EVT_SRC_FETCH, "C", 2, TINYC_FLOAT, &full);	/* 3 */
		tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);			/* 4 */
		tinyc_evt_compute(ctx, g, TINYC_OP_RELU, TINYC_FLOAT);			/* 5 */
		tinyc_evt_load(ctx, g, TINYC_EVT_ROW_BCAST, "bias", 3, TINYC_FLOAT, &row);	/* 6 */
		tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);			/* 7 */
		tinyc_evt_store(ctx, g, "D", 4, TINYC_FLOAT, &full);			/* 8 */
		tinyc_evt_reduction(ctx, g, TINYC_EVT_COL_RED, TINYC_RED_MAX, TINYC_FLOAT, "rmax", 5,
				    TINYC_FLOAT, &col);				/* 9 */
		cr_assert(tinyc_evt_set_edge_tuple(ctx, g, "{}, {}, {0, 1}, {}, {2, 3}, {4}, {}, {5, 6}, "
						   "{7}, {8}") == 0);
		cr_assert(tinyc_evt_run_passes(ctx, g) == 0);
		tinyc_mm_problem prob;
		memset(&prob, 0, sizeof(prob));
		prob.reduce = -1;
		prob.m = M, prob.n = N, prob.k = K, prob.l = (tinyc_dim){1, -1};
		prob.a.buf = 0, prob.a.dtype = TINYC_HALF;
		prob.a.stride[0] = tinyc_evt_poly_sym(1, sk);
		prob.a.stride[1] = tinyc_evt_poly_const(1);
		prob.b.buf = 1, prob.b.dtype = TINYC_HALF;
		prob.b.stride[0] = tinyc_evt_poly_sym(1, sn);
		prob.b.stride[1] = tinyc_evt_poly_const(1);
		prob.mul = TINYC_HALF;
		prob.acc = TINYC_FLOAT;
		prob.evt = g;
		tinyc_device_info dev = *tinyc_target_info(ctx, "sm_80");
		tinyc_mm_tiles t;
		cr_assert(tinyc_matmul_tiles(&prob, &dev, NULL, v ? TINYC_MM_MMA : TINYC_MM_SIMT, 64, 64,
					     32, v ? 2 : 1, &t) == 0);
		t.index_dtype = TINYC_LONG;
		cr_assert(tinyc_matmul_emit(ctx, gm, &prob, &t, "mm") == 0);
		cr_assert(tinyc_gpu_verify(ctx, gm, 48 * 1024) == 0);
		cr_assert_eq(gm->nkernel, 2, "matmul and the rmax final pass");
		/* run at M=37, N=29, K=40 */
		int64_t m = 37, n = 29, kk = 40, sym[3];
		sym[sm] = m, sym[sn] = n, sym[sk] = kk;
		int64_t shape[6][2] = {{m, kk}, {kk, n}, {m, n}, {n, 0}, {m, n}, {m, 0}};
		tinyc_tensor *tt[8] = {0};
		for (int i = 0; i < 6; i++) {
			tt[i] = tinyc_tensor_alloc(ctx, dts[i], gm->bufs[i].rank, shape[i]);
			tinyc_tensor_fill_random(tt[i], 5 + (uint64_t)i);
		}
		int64_t wsn = 1;
		for (int d = 0; d < gm->bufs[6].rank; d++)
			wsn *= tinyc_dim_value(&gm->bufs[6].shape[d], &(tinyc_bindings){3, sym});
		tt[6] = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 1, &wsn);
		tinyc_gpu_mem mem;
		void *bufs[7];
		int64_t elems[7];
		for (int i = 0; i < 7; i++)
			bufs[i] = tt[i]->data, elems[i] = tinyc_tensor_numel(tt[i]);
		mem.buf = bufs, mem.buf_elems = elems, mem.sym = sym;
		for (int i = 0; i < gm->nkernel; i++)
			if (tinyc_gpu_interp(ctx, gm, gm->kernels[i], &mem) < 0) {
				tinyc_ctx_print_diags(ctx, stderr);
				cr_assert_fail("interpreter");
			}
		/* the reference, computed here */
		for (int64_t i = 0; i < m; i++) {
			double mx = -INFINITY;
			for (int64_t j = 0; j < n; j++) {
				double acc = 0;
				for (int64_t q = 0; q < kk; q++)
					acc += tinyc_tensor_get(tt[0], i * kk + q) * tinyc_tensor_get(tt[1], q * n + j);
				double d = 0.5 * acc + tinyc_tensor_get(tt[2], i * n + j);
				d = (d > 0 ? d : 0) + tinyc_tensor_get(tt[3], j);
				cr_assert_float_eq(tinyc_tensor_get(tt[4], i * n + j), d, 1e-4, "D[%lld,%lld]",
						   (long long)i, (long long)j);
				mx = fmax(mx, (float)d);
			}
			cr_assert_float_eq(tinyc_tensor_get(tt[5], i), mx, 1e-4, "rmax[%lld]", (long long)i);
		}
		for (int i = 0; i < 7; i++)
			tinyc_tensor_free(tt[i]);
		tinyc_evt_free(g);
		tinyc_gpu_module_free(gm);
		tinyc_graph_free(sg);
		tinyc_ctx_free(ctx);
	}
}

/* The template refuses what it cannot do, with a diagnostic. */
Test(matmul_api, refusals)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_mm_problem prob;
	memset(&prob, 0, sizeof(prob));
	prob.m = prob.n = prob.k = prob.l = (tinyc_dim){64, -1};
	prob.a.dtype = prob.b.dtype = TINYC_FLOAT;
	prob.mul = TINYC_FLOAT;
	prob.acc = TINYC_FLOAT;
	tinyc_device_info dev = *tinyc_target_info(ctx, "sm_80");
	tinyc_mm_tiles t;
	cr_assert_eq(tinyc_matmul_tiles(&prob, &dev, NULL, TINYC_MM_MMA, 64, 64, 32, 2, &t), -1,
		     "no tensor cores for fp32 operands");
	cr_assert_eq(tinyc_matmul_tiles(&prob, &dev, NULL, TINYC_MM_SIMT, 128, 128, 64, 1, &t), -1,
		     "64 KiB of fp32 tiles exceed the limit");
	cr_assert_eq(tinyc_matmul_tiles(&prob, &dev, NULL, TINYC_MM_SIMT, 64, 64, 32, 1, &t), 0);
	tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
	cr_assert_eq(tinyc_matmul_emit(ctx, gm, &prob, &t, "mm"), -1, "no epilogue graph");
	cr_assert_gt(tinyc_ctx_error_count(ctx), 0);
	tinyc_gpu_module_free(gm);
	tinyc_ctx_free(ctx);
}
