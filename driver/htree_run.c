/* htree forward on the GPU, host side (see htree_run.h): validation, the tree-build graph,
 * kernel compilation through the cache, device buffers, launches, traces.
 *
 * A prepared forward (tinyc_htree_gpu) owns its kernels, the tree layers 1..L-1, the RoPE
 * table and the query positions; tinyc_htree_gpu_run only enqueues the tree build and one
 * htree_forward launch (one block per query group), so it is what a benchmark times.
 */
#include "driver/htree_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "driver/module.h"
#include "sched/schedule.h"

#define POOL_THREADS 256	/* block size of the pooling kernels */
#define POOL_MAX_BLOCKS (1 << 20)	/* grid cap (the kernels loop) */
#define TREE_MAX_PARAMS 64	/* parameters of a pipeline tree kernel */

/* One kernel of the tree-build graph, compiled by the pipeline, ready to launch. */
typedef struct tree_kernel {
	tinyc_kernel *k;		/* the loaded function */
	tinyc_dim3 grid, block;		/* launch geometry (constant: the graph has no symbols) */
	unsigned smem;			/* dynamic shared memory */
	int nparam;			/* parameters */
	int *param_buf;			/* per parameter: the module buffer it points to (owned) */
} tree_kernel;

/* Where a buffer of the tree-build module lives. */
typedef struct tree_buf {
	int role;			/* TINYC_GB_INPUT / OUTPUT / TEMP */
	int input;			/* INPUT: 0 = k, 1 = v */
	tinyc_devptr ptr;		/* OUTPUT: a tree layer; TEMP: owned storage */
} tree_buf;

struct tinyc_htree_gpu {
	tinyc_ctx *ctx;				/* diagnostics (kept) */
	tinyc_cuda *cu;				/* the device (kept) */
	tinyc_htree_kernel_config kc;		/* what the kernels are specialised for */
	int64_t B, T, H, Hkv, K, V;		/* shapes */
	int64_t rows;				/* query rows: T, or the number of positions */
	int L;					/* tree layers */
	int64_t N[TINYC_HTREE_MAX_LAYERS];	/* layer sizes */
	int64_t table_rows;			/* rows of the RoPE table on the device */
	float scale;				/* score scale */
	int threads;				/* htree_forward block size */
	int64_t smem;				/* its dynamic shared memory */
	tinyc_kernel *kfwd;			/* htree_forward */
	tinyc_kernel *kpool_in;			/* htree_pool_in: layer 1 from k, v */
	tinyc_kernel *kpool_f32;		/* htree_pool_f32: deeper layers */
	tinyc_kernel *krot_top;			/* htree_rot_top: the top layer's keys rotated */
	tinyc_devptr kl[TINYC_HTREE_MAX_LAYERS];	/* pooled keys, layers >= 1 (owned) */
	tinyc_devptr vl[TINYC_HTREE_MAX_LAYERS];	/* pooled values, layers >= 1 (owned) */
	tinyc_devptr krot;			/* float [B,N_top,Hkv,K]: rotated top keys, L > 1 (owned) */
	tinyc_devptr cos_tab, sin_tab;		/* RoPE table (owned) */
	tinyc_devptr positions;			/* int [rows] query positions, or 0 (owned) */
	tinyc_devptr prof;			/* u64 [TINYC_HTREE_NPHASES] profile, or 0 (owned) */
	int no_pipeline;			/* build the tree with the pooling kernels */
	int ntk;				/* pipeline tree build: kernels */
	tree_kernel *tk;			/* in launch order (owned) */
	int ntb;				/* its module buffers */
	tree_buf *tb;				/* (owned) */
	tinyc_htree_gpu_info info;		/* facts for reports */
};

/* Whether x is a power of two (x >= 1). */
static int is_pow2(int64_t x)
{
	return x >= 1 && (x & (x - 1)) == 0;
}

/* ------------------------------------------------------------- the tree graph ---- */

/* Append the nodes of one pooled layer: `in` is float [B,n,D] (node id), the result node
 * is "<x><l>" float [B,m,D] with m = ceil(n/r), followed by its OUTPUT. */
static void pool_layer_text(tinyc_buf *b, const char *x, int l, const char *in, int64_t B,
			    int64_t n, int64_t D, int r)
{
	int64_t m = (n + r - 1) / r, last = n - (m - 1) * r;
	const char *src = in;
	char pad[32];
	if (m * r != n) {
		snprintf(pad, sizeof pad, "%s%d_pad", x, l);
		tinyc_buf_printf(b, "%%%s = PAD(%%%s, pads=[[0,0],[0,%lld],[0,0]]) : float[%lld,%lld,%lld]\n",
				 pad, in, (long long)(m * r - n), (long long)B, (long long)(m * r),
				 (long long)D);
		src = pad;
	}
	tinyc_buf_printf(b, "%%%s%d_grp = RESHAPE(%%%s, shape=[%lld,%lld,%d,%lld]) : float[%lld,%lld,%d,%lld]\n",
			 x, l, src, (long long)B, (long long)m, r, (long long)D, (long long)B,
			 (long long)m, r, (long long)D);
	tinyc_buf_printf(b, "%%%s%d_sum = REDUCE(%%%s%d_grp, op=ADD, axes=[2], keepdim=false) : "
			 "float[%lld,%lld,%lld]\n", x, l, x, l, (long long)B, (long long)m,
			 (long long)D);
	/* the valid count of each group: r, except `last` for the final one */
	if (last == r || m == 1) {
		tinyc_buf_printf(b, "%%%s%d_cnt = CONST(%lld.0) : float[]\n", x, l, (long long)last);
	} else {
		tinyc_buf_printf(b, "%%%s%d_r = CONST(%d.0) : float[]\n", x, l, r);
		tinyc_buf_printf(b, "%%%s%d_r1 = RESHAPE(%%%s%d_r, shape=[1]) : float[1]\n", x, l, x, l);
		tinyc_buf_printf(b, "%%%s%d_rs = EXPAND(%%%s%d_r1, shape=[%lld]) : float[%lld]\n", x, l,
				 x, l, (long long)(m - 1), (long long)(m - 1));
		tinyc_buf_printf(b, "%%%s%d_full = PAD(%%%s%d_rs, pads=[[0,1]]) : float[%lld]\n", x, l,
				 x, l, (long long)m);
		tinyc_buf_printf(b, "%%%s%d_l = CONST(%lld.0) : float[]\n", x, l, (long long)last);
		tinyc_buf_printf(b, "%%%s%d_l1 = RESHAPE(%%%s%d_l, shape=[1]) : float[1]\n", x, l, x, l);
		tinyc_buf_printf(b, "%%%s%d_tail = PAD(%%%s%d_l1, pads=[[%lld,0]]) : float[%lld]\n", x,
				 l, x, l, (long long)(m - 1), (long long)m);
		tinyc_buf_printf(b, "%%%s%d_cm = ADD(%%%s%d_full, %%%s%d_tail) : float[%lld]\n", x, l, x,
				 l, x, l, (long long)m);
		tinyc_buf_printf(b, "%%%s%d_cnt = RESHAPE(%%%s%d_cm, shape=[%lld,1]) : float[%lld,1]\n",
				 x, l, x, l, (long long)m, (long long)m);
	}
	tinyc_buf_printf(b, "%%%s%d = FDIV(%%%s%d_sum, %%%s%d_cnt) : float[%lld,%lld,%lld]\n", x, l,
			 x, l, x, l, (long long)B, (long long)m, (long long)D);
	tinyc_buf_printf(b, "%%%s%d_out = OUTPUT(%%%s%d, name=\"%s%d\") : float[%lld,%lld,%lld]\n", x,
			 l, x, l, x, l, (long long)B, (long long)m, (long long)D);
}

/* The tree build graph (see htree_run.h). */
int tinyc_htree_pool_graph_text(tinyc_ctx *ctx, tinyc_dtype dtype, int64_t B, int64_t T,
				int64_t Hkv, int64_t K, int64_t V, int r, int64_t max_top_nodes,
				tinyc_buf *out)
{
	int64_t N[TINYC_HTREE_MAX_LAYERS];
	if (!tinyc_htree_dtype_ok(dtype))
		return tinyc_error(ctx, "HtreeUnsupportedDtype", "htree takes float, half or bfloat16");
	if (B < 1 || Hkv < 1 || K < 1 || V < 1 || !is_pow2(r))
		return tinyc_error(ctx, "HtreeInvalidConfig", "invalid sizes for the tree graph");
	int L = tinyc_htree_layer_sizes(T, r, max_top_nodes, N);
	if (L < 0)
		return tinyc_error(ctx, "HtreeInvalidConfig", "invalid tree sizes (T %lld, r %d)",
				   (long long)T, r);
	if (L < 2)
		return tinyc_error(ctx, "HtreeNoTree",
				   "T = %lld <= max_top_nodes: the tree has one layer, nothing to pool",
				   (long long)T);
	const char *dt = tinyc_dtype_name(dtype);
	tinyc_buf_printf(out, "# tinyc-uop v0\n# htree tree build: %d layers (", L);
	for (int l = 0; l < L; l++)
		tinyc_buf_printf(out, "%s%lld", l ? ", " : "", (long long)N[l]);
	tinyc_buf_printf(out, "), valid-count mean over groups of %d\n", r);
	static const char *const xs[2] = {"k", "v"};
	const int64_t dims[2] = {K, V};
	for (int i = 0; i < 2; i++) {
		const char *x = xs[i];
		int64_t D = Hkv * dims[i];
		tinyc_buf_printf(out, "%%%s_in = BUFFER(slot=%d, name=\"%s\") : %s[%lld,%lld,%lld,%lld]\n",
				 x, i, x, dt, (long long)B, (long long)T, (long long)Hkv,
				 (long long)dims[i]);
		const char *src = "_in";
		if (dtype != TINYC_FLOAT) {
			tinyc_buf_printf(out, "%%%s_f = CAST(%%%s_in) : float[%lld,%lld,%lld,%lld]\n", x, x,
					 (long long)B, (long long)T, (long long)Hkv, (long long)dims[i]);
			src = "_f";
		}
		tinyc_buf_printf(out, "%%%s0 = RESHAPE(%%%s%s, shape=[%lld,%lld,%lld]) : float[%lld,%lld,%lld]\n",
				 x, x, src, (long long)B, (long long)T, (long long)D, (long long)B,
				 (long long)T, (long long)D);
		for (int l = 1; l < L; l++) {
			char in[16];
			snprintf(in, sizeof in, "%s%d", x, l - 1);
			pool_layer_text(out, x, l, in, B, N[l - 1], D, r);
		}
	}
	if (out->oom)
		return tinyc_error(ctx, "OutOfMemory", "no memory for the tree graph");
	return 0;
}

/* ---------------------------------------------------------- prepared forward ---- */

/* The most candidates any layer holds, as the CPU reference computes it: the RoPE table
 * needs this many rows. */
static int64_t run_rows(const int64_t *N, int L, int64_t top_k, int r)
{
	int64_t R = N[L - 1];
	for (int l = 0; l < L - 1; l++) {
		int64_t parents = top_k < N[l + 1] ? top_k : N[l + 1];
		int64_t c = parents * r < N[l] ? parents * r : N[l];
		if (c > R)
			R = c;
	}
	return R;
}

/* Upload the RoPE table: the given one (checked), or computed like the reference's. */
static int upload_table(tinyc_htree_gpu *h, const tinyc_htree_config *cfg, int64_t need)
{
	int64_t half = h->K / 2;
	const float *cs, *sn;
	float *own = NULL;
	int64_t rows = need;
	if (cfg->rope_cos) {
		const tinyc_tensor *c = cfg->rope_cos, *s = cfg->rope_sin;
		if (c->dtype != TINYC_FLOAT || s->dtype != TINYC_FLOAT || c->rank != 2 ||
		    s->rank != 2 || c->shape[0] != s->shape[0] || c->shape[1] != s->shape[1])
			return tinyc_error(h->ctx, "HtreeRopeTable",
					   "rope_cos and rope_sin must be float tables of one shape "
					   "[rows, K/2]");
		if (c->shape[1] != half || c->shape[0] < need)
			return tinyc_error(h->ctx, "HtreeRopeTable",
					   "the RoPE table is [%lld, %lld]; this run needs at least "
					   "[%lld, %lld]",
					   (long long)c->shape[0], (long long)c->shape[1],
					   (long long)need, (long long)half);
		cs = c->data;
		sn = s->data;
	} else {
		own = tinyc_malloc(h->ctx, (size_t)(2 * rows * half) * sizeof(float));
		if (!own)
			return -1;
		tinyc_htree_rope_table(h->K, rows, cfg->rope_base, own, own + rows * half);
		cs = own;
		sn = own + rows * half;
	}
	size_t bytes = (size_t)(rows * half) * sizeof(float);
	int rc = 0;
	if (tinyc_cuda_alloc(h->cu, bytes, &h->cos_tab) < 0 ||
	    tinyc_cuda_alloc(h->cu, bytes, &h->sin_tab) < 0 ||
	    tinyc_cuda_upload(h->cu, h->cos_tab, cs, bytes) < 0 ||
	    tinyc_cuda_upload(h->cu, h->sin_tab, sn, bytes) < 0)
		rc = -1;
	free(own);
	h->table_rows = rows;
	return rc;
}

/* Upload n positions as int32 into a new device buffer *dst.  0 or -1. */
static int upload_positions(tinyc_htree_gpu *h, const int64_t *pos, int n, tinyc_devptr *dst)
{
	int *p32 = tinyc_malloc(h->ctx, (size_t)(n > 0 ? n : 1) * sizeof(int));
	if (!p32)
		return -1;
	for (int i = 0; i < n; i++)
		p32[i] = (int)pos[i];
	int rc = tinyc_cuda_alloc(h->cu, (size_t)n * sizeof(int), dst) < 0 ||
			 tinyc_cuda_upload(h->cu, *dst, p32, (size_t)n * sizeof(int)) < 0
		 ? -1 : 0;
	free(p32);
	return rc;
}

/* Compile the kernels for the device (through the cache) and load the three functions. */
static int compile_kernels(tinyc_htree_gpu *h)
{
	const tinyc_device_info *dev = tinyc_cuda_device_info(h->cu);
	tinyc_buf src = {0};
	if (tinyc_htree_emit_cuda(h->ctx, &h->kc, &src) < 0) {
		tinyc_buf_free(&src);
		return -1;
	}
	tinyc_compile_opts opt;
	memset(&opt, 0, sizeof opt);
	opt.driver_version = dev->driver_version;
	tinyc_compile_result res;
	memset(&res, 0, sizeof res);
	int rc = tinyc_kernel_compile_cached(h->ctx, src.data, "htree.cu", dev->target, &opt, &res);
	tinyc_buf_free(&src);
	if (rc < 0) {
		tinyc_compile_result_clear(&res);
		return -1;
	}
	h->info.cache_hit = res.cache_hit;
	h->info.compile_ms = res.compile_ms;
	snprintf(h->info.target, sizeof h->info.target, "%s", dev->target);
	h->kfwd = tinyc_cuda_kernel_load(h->cu, &res.blob, "htree_forward");
	if (h->kfwd && h->L > 1) {
		h->kpool_in = tinyc_cuda_kernel_load(h->cu, &res.blob, "htree_pool_in");
		if (h->kpool_in && h->L > 2)
			h->kpool_f32 = tinyc_cuda_kernel_load(h->cu, &res.blob, "htree_pool_f32");
		h->krot_top = tinyc_cuda_kernel_load(h->cu, &res.blob, "htree_rot_top");
	}
	tinyc_compile_result_clear(&res);
	if (!h->kfwd || (h->L > 1 && (!h->kpool_in || !h->krot_top)) || (h->L > 2 && !h->kpool_f32))
		return -1;
	tinyc_kernel_attrs attrs;
	if (tinyc_kernel_get_attrs(h->cu, h->kfwd, &attrs) == 0)
		h->info.regs = attrs.num_regs;
	return 0;
}

/* The tree build through the generic pipeline: the pooling graph is compiled to GPU IR
 * for the device's target, every kernel through the kernel cache, and the launches are
 * recorded against the prepared forward's own buffers (k, v in; the tree layers out).
 * Problems are collected on a private context: the caller falls back to the pooling
 * kernels and reports why in info.tree_note.  0 or -1. */
static int tree_pipeline_prepare(tinyc_htree_gpu *h)
{
	tinyc_ctx *pc = tinyc_ctx_alloc();
	if (!pc)
		return -1;
	const tinyc_device_info *dev = tinyc_cuda_device_info(h->cu);
	tinyc_buf text = {0};
	tinyc_source *src = NULL;
	tinyc_module *m = NULL;
	int rc = -1;
	if (tinyc_htree_pool_graph_text(pc, h->kc.dtype, h->B, h->T, h->Hkv, h->K, h->V,
					h->kc.compression_rate, h->kc.max_top_nodes, &text) < 0)
		goto done;
	src = tinyc_source_from_string("htree_tree.uop", text.data, text.len);
	tinyc_options opt;
	memset(&opt, 0, sizeof opt);
	opt.target = dev->target;
	if (!src || !(m = tinyc_module_alloc(pc, src, &opt)) ||
	    tinyc_module_run_until(m, tinyc_pass_find("gpuir"), 0, NULL) < 0)
		goto done;
	const tinyc_schedule *sc = tinyc_module_schedule(m);
	const tinyc_gpu_module *gm = tinyc_module_gpuir(m);
	if (!sc || !gm)
		goto done;
	/* the selection needs the reference's sequential pooling sums: a plan that folds a
	 * reduction across threads would change their rounding */
	for (int i = 0; i < sc->nkern; i++)
		if (tinyc_skernel_plan(&sc->kerns[i])->kind == TINYC_PLAN_ROWRED) {
			tinyc_error(pc, "HtreeTreePlan",
				    "kernel %s folds its sums across threads", sc->kerns[i].name);
			goto done;
		}
	h->tb = tinyc_calloc(pc, (size_t)gm->nbuf + 1, sizeof *h->tb);
	h->tk = tinyc_calloc(pc, (size_t)gm->nkernel + 1, sizeof *h->tk);
	if (!h->tb || !h->tk)
		goto done;
	h->ntb = gm->nbuf;
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		tree_buf *t = &h->tb[i];
		t->role = b->role;
		if (b->role == TINYC_GB_INPUT) {
			t->input = b->index;
		} else if (b->role == TINYC_GB_OUTPUT) {
			int l = atoi(b->name + 1);
			if ((b->name[0] != 'k' && b->name[0] != 'v') || l < 1 || l >= h->L) {
				tinyc_error(pc, "HtreeTreePlan", "unexpected output %s", b->name);
				goto done;
			}
			t->ptr = b->name[0] == 'k' ? h->kl[l] : h->vl[l];
		} else {
			int64_t n = 1;
			for (int d = 0; d < b->rank; d++)
				n *= b->shape[d].sym < 0 ? b->shape[d].val : 1;
			if (tinyc_cuda_alloc(h->cu, (size_t)n * (size_t)tinyc_dtype_size(b->dtype), &t->ptr) < 0)
				goto done;
		}
	}
	int64_t nosym[1] = {0};
	for (int i = 0; i < gm->nkernel; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		tree_kernel *tk = &h->tk[h->ntk++];
		tinyc_buf ktext = {0};
		if (tinyc_cuda_print_kernel(pc, gm, i, &ktext) < 0) {
			tinyc_buf_free(&ktext);
			goto done;
		}
		tinyc_compile_opts co;
		memset(&co, 0, sizeof co);
		co.driver_version = dev->driver_version;
		tinyc_compile_result cr;
		memset(&cr, 0, sizeof cr);
		char unit[160];
		snprintf(unit, sizeof unit, "%s.cu", k->name);
		int crc = tinyc_kernel_compile_cached(pc, ktext.data, unit, dev->target, &co, &cr);
		tinyc_buf_free(&ktext);
		if (crc == 0)
			tk->k = tinyc_cuda_kernel_load(h->cu, &cr.blob, k->name);
		tinyc_compile_result_clear(&cr);
		if (!tk->k)
			goto done;
		int64_t g[3];
		for (int d = 0; d < 3; d++)
			if (tinyc_gpu_eval_int(k->grid[d], nosym, &g[d]) < 0 || g[d] < 0 || g[d] > INT32_MAX) {
				tinyc_error(pc, "HtreeTreePlan", "kernel %s: no constant grid", k->name);
				goto done;
			}
		tk->grid = (tinyc_dim3){(unsigned)g[0], (unsigned)g[1], (unsigned)g[2]};
		tk->block = (tinyc_dim3){(unsigned)k->block[0], (unsigned)k->block[1],
					 (unsigned)k->block[2]};
		tk->smem = (unsigned)k->dyn_smem;
		tk->param_buf = tinyc_calloc(pc, (size_t)k->nparam + 1, sizeof(int));
		if (!tk->param_buf)
			goto done;
		tk->nparam = k->nparam;
		for (int p = 0; p < k->nparam; p++) {
			const tinyc_gvar *v = &k->vars[k->params[p]];
			if (v->kind != TINYC_GV_PARAM_PTR || v->buf < 0 || v->buf >= gm->nbuf) {
				tinyc_error(pc, "HtreeTreePlan", "kernel %s: parameter %s is not a buffer",
					    k->name, v->name);
				goto done;
			}
			tk->param_buf[p] = v->buf;
		}
	}
	rc = 0;
done:
	if (rc < 0) {
		const tinyc_diag *d = tinyc_ctx_diag_count(pc) > 0 ? tinyc_ctx_diag(pc, 0) : NULL;
		snprintf(h->info.tree_note, sizeof h->info.tree_note, "%s: %s",
			 d && d->kind ? d->kind : "Error", d && d->msg ? d->msg : "pipeline failed");
	}
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_buf_free(&text);
	tinyc_ctx_free(pc);
	return rc;
}

/* Release what the pipeline tree build holds. */
static void tree_pipeline_free(tinyc_htree_gpu *h)
{
	for (int i = 0; h->tk && i < h->ntk; i++) {
		tinyc_kernel_free(h->tk[i].k);
		free(h->tk[i].param_buf);
	}
	for (int i = 0; h->tb && i < h->ntb; i++)
		if (h->tb[i].role == TINYC_GB_TEMP)
			tinyc_cuda_free(h->cu, h->tb[i].ptr);
	free(h->tk);
	free(h->tb);
	h->tk = NULL;
	h->tb = NULL;
	h->ntk = h->ntb = 0;
}

/* Enqueue the pipeline's tree-build kernels on k, v. */
static int tree_pipeline_run(tinyc_htree_gpu *h, tinyc_devptr k, tinyc_devptr v)
{
	for (int i = 0; i < h->ntb; i++)
		if (h->tb[i].role == TINYC_GB_INPUT)
			h->tb[i].ptr = h->tb[i].input == 0 ? k : v;
	for (int i = 0; i < h->ntk; i++) {
		const tree_kernel *tk = &h->tk[i];
		void *args[TREE_MAX_PARAMS];
		if (tk->nparam > TREE_MAX_PARAMS)
			return tinyc_error(h->ctx, "HtreeTreePlan", "a tree kernel has %d parameters",
					   tk->nparam);
		for (int p = 0; p < tk->nparam; p++)
			args[p] = &h->tb[tk->param_buf[p]].ptr;
		if (tk->grid.x && tk->grid.y && tk->grid.z &&
		    tinyc_cuda_launch(h->cu, tk->k, tk->grid, tk->block, tk->smem, args) < 0)
			return -1;
	}
	return 0;
}

/* Validate everything a prepared forward depends on; fills the shapes of h.  0 or -1. */
static int prepare_check(tinyc_htree_gpu *h, const tinyc_htree_config *cfg)
{
	tinyc_ctx *ctx = h->ctx;
	if (tinyc_htree_config_check(ctx, cfg) < 0)
		return -1;
	if (h->T >= INT32_MAX)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path indexes nodes with 32-bit integers; T = %lld",
				   (long long)h->T);
	h->rows = cfg->num_query_positions > 0 ? cfg->num_query_positions : h->T;
	if (tinyc_htree_check_positions(ctx, cfg->query_positions, cfg->num_query_positions, h->T,
					"query") < 0)
		return -1;
	int64_t groups = h->B * h->rows * h->Hkv;
	if (groups >= INT32_MAX)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "%lld query groups exceed the GPU grid", (long long)groups);
	h->L = tinyc_htree_layer_sizes(h->T, cfg->compression_rate, cfg->max_top_nodes, h->N);
	if (h->L < 0)
		return tinyc_error(ctx, "HtreeInvalidConfig", "the tree would have more than %d layers",
				   TINYC_HTREE_MAX_LAYERS);
	h->kc.compression_rate = cfg->compression_rate;
	h->kc.top_k = cfg->top_k;
	h->kc.max_top_nodes = cfg->max_top_nodes;
	h->kc.G = (int)(h->H / h->Hkv);
	h->kc.K = (int)h->K;
	h->kc.V = (int)h->V;
	h->kc.key_drop_bits = cfg->key_drop_bits;
	if (h->H / h->Hkv > TINYC_HTREE_GPU_MAX_G || h->K > TINYC_HTREE_GPU_MAX_DIM ||
	    h->V > TINYC_HTREE_GPU_MAX_DIM)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path takes G <= %d and K, V <= %d (G %lld, K %lld, V %lld)",
				   TINYC_HTREE_GPU_MAX_G, TINYC_HTREE_GPU_MAX_DIM,
				   (long long)(h->H / h->Hkv), (long long)h->K, (long long)h->V);
	int threads;
	int64_t smem;
	if (tinyc_htree_kernel_launch_info(ctx, &h->kc, &threads, &smem, NULL) < 0)
		return -1;
	h->threads = threads;
	h->smem = smem;
	h->scale = cfg->scale > 0.0f ? cfg->scale : (float)(1.0 / sqrt((double)h->K));
	return 0;
}

/* Prepare a forward (see htree_run.h). */
tinyc_htree_gpu *tinyc_htree_gpu_alloc(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_htree_config *cfg,
				       const tinyc_htree_gpu_opts *opts, tinyc_dtype dtype, int64_t B, int64_t T, int64_t H,
				       int64_t Hkv, int64_t K, int64_t V)
{
	if (!ctx)
		return NULL;
	if (!cfg) {
		tinyc_error(ctx, "HtreeInvalidArgument", "no configuration");
		return NULL;
	}
	tinyc_dtype dts[3] = {dtype, dtype, dtype};
	int ranks[3] = {4, 4, 4};
	int64_t sq[4] = {B, T, H, K}, sk[4] = {B, T, Hkv, K}, sv[4] = {B, T, Hkv, V};
	const int64_t *shapes[3] = {sq, sk, sv};
	if (tinyc_htree_check_shapes(ctx, dts, ranks, shapes) < 0)
		return NULL;
	tinyc_htree_gpu *h = tinyc_calloc(ctx, 1, sizeof *h);
	if (!h)
		return NULL;
	h->ctx = ctx;
	h->cu = cu;
	h->B = B, h->T = T, h->H = H, h->Hkv = Hkv, h->K = K, h->V = V;
	h->kc.dtype = dtype;
	h->kc.fast_max = 1;	/* pass 1 by ht_max_fast unless opts asks for the exact sweep */
	if (opts) {
		h->no_pipeline = opts->tree_kernels;
		h->kc.threads = opts->threads;
		h->kc.profile = opts->profile;
		h->kc.min_blocks = opts->min_blocks;
		h->kc.simt_leaves = opts->simt_leaves;
		h->kc.fast_max = !opts->exact_max;
		h->kc.pass2_cands = opts->pass2_cands;
		h->kc.krot_keys = !opts->rotate_keys;
	}
	if (prepare_check(h, cfg) < 0) {
		free(h);
		return NULL;
	}
	if (!cu) {
		tinyc_error(ctx, "NoGpu", "the htree GPU path needs a CUDA device");
		free(h);
		return NULL;
	}
	h->info.num_layers = h->L;
	memcpy(h->info.layer_sizes, h->N, sizeof h->N);
	h->info.rows = h->rows;
	h->info.threads = h->threads;
	h->info.smem_bytes = h->smem;
	h->info.tree_path = TINYC_HTREE_TREE_KERNELS;
	if (compile_kernels(h) < 0)
		goto fail;
	if (h->kc.profile && (tinyc_cuda_alloc(cu, TINYC_HTREE_NPHASES * sizeof(uint64_t), &h->prof) < 0 ||
			      tinyc_cuda_memset8(cu, h->prof, 0, TINYC_HTREE_NPHASES * sizeof(uint64_t)) < 0))
		goto fail;
	for (int l = 1; l < h->L; l++)
		if (tinyc_cuda_alloc(cu, (size_t)(B * h->N[l] * Hkv * K) * sizeof(float), &h->kl[l]) < 0 ||
		    tinyc_cuda_alloc(cu, (size_t)(B * h->N[l] * Hkv * V) * sizeof(float), &h->vl[l]) < 0)
			goto fail;
	if (h->L > 1 && tinyc_cuda_alloc(cu, (size_t)(B * h->N[h->L - 1] * Hkv * K) * sizeof(float), &h->krot) < 0)
		goto fail;
	if (h->L > 1 && !h->no_pipeline) {
		if (tree_pipeline_prepare(h) == 0)
			h->info.tree_path = TINYC_HTREE_TREE_PIPELINE;
		else
			tree_pipeline_free(h);
	}
	if (upload_table(h, cfg, run_rows(h->N, h->L, cfg->top_k, cfg->compression_rate)) < 0)
		goto fail;
	if (cfg->num_query_positions > 0 &&
	    upload_positions(h, cfg->query_positions, cfg->num_query_positions, &h->positions) < 0)
		goto fail;
	return h;
fail:
	tinyc_htree_gpu_free(h);
	return NULL;
}

/* Free a prepared forward and its device memory. */
void tinyc_htree_gpu_free(tinyc_htree_gpu *h)
{
	if (!h)
		return;
	for (int l = 1; l < TINYC_HTREE_MAX_LAYERS; l++) {
		tinyc_cuda_free(h->cu, h->kl[l]);
		tinyc_cuda_free(h->cu, h->vl[l]);
	}
	tinyc_cuda_free(h->cu, h->krot);
	tinyc_cuda_free(h->cu, h->cos_tab);
	tinyc_cuda_free(h->cu, h->sin_tab);
	tinyc_cuda_free(h->cu, h->positions);
	tinyc_cuda_free(h->cu, h->prof);
	tinyc_kernel_free(h->kfwd);
	tinyc_kernel_free(h->kpool_in);
	tinyc_kernel_free(h->kpool_f32);
	tinyc_kernel_free(h->krot_top);
	tree_pipeline_free(h);
	free(h);
}

/* Facts for reports. */
void tinyc_htree_gpu_get_info(const tinyc_htree_gpu *h, tinyc_htree_gpu_info *info)
{
	*info = h->info;
}

/* Read and zero the per-phase profile. */
int tinyc_htree_gpu_profile(tinyc_htree_gpu *h, uint64_t *cycles)
{
	if (!h->prof)
		return tinyc_error(h->ctx, "HtreeInvalidArgument", "the forward was prepared without a profile");
	size_t bytes = TINYC_HTREE_NPHASES * sizeof(uint64_t);
	if (tinyc_cuda_sync(h->cu) < 0 || tinyc_cuda_download(h->cu, cycles, h->prof, bytes) < 0)
		return -1;
	return tinyc_cuda_memset8(h->cu, h->prof, 0, bytes);
}

/* One pooling launch: y = pool(x) with x [B, n, inner]. */
static int launch_pool(tinyc_htree_gpu *h, tinyc_kernel *k, tinyc_devptr x, tinyc_devptr y,
		       int64_t n, int64_t inner)
{
	long long outer = h->B, nn = n, in = inner;
	int64_t total = h->B * ((n + h->kc.compression_rate - 1) / h->kc.compression_rate) * inner;
	int64_t blocks = (total + POOL_THREADS - 1) / POOL_THREADS;
	if (blocks > POOL_MAX_BLOCKS)
		blocks = POOL_MAX_BLOCKS;
	void *args[5] = {&x, &y, &outer, &nn, &in};
	tinyc_dim3 grid = {(unsigned)blocks, 1, 1}, block = {POOL_THREADS, 1, 1};
	return tinyc_cuda_launch(h->cu, k, grid, block, 0, args);
}

/* Enqueue the top layer's keys rotated the reference's way (htree_rot_top: the selection
 * passes 1 and 2 read them instead of rotating each candidate per query). */
static int launch_rot_top(tinyc_htree_gpu *h)
{
	long long n = h->N[h->L - 1], bn = h->B * n, hkv = h->Hkv;
	int64_t blocks = (bn * hkv + POOL_THREADS - 1) / POOL_THREADS;
	if (blocks > POOL_MAX_BLOCKS)
		blocks = POOL_MAX_BLOCKS;
	void *args[7] = {&h->kl[h->L - 1], &h->krot, &h->cos_tab, &h->sin_tab, &bn, &n, &hkv};
	tinyc_dim3 grid = {(unsigned)blocks, 1, 1}, block = {POOL_THREADS, 1, 1};
	return tinyc_cuda_launch(h->cu, h->krot_top, grid, block, 0, args);
}

/* Enqueue the tree build: layers 1..L-1 from k, v, then the rotated top keys. */
static int build_tree(tinyc_htree_gpu *h, tinyc_devptr k, tinyc_devptr v)
{
	if (h->info.tree_path == TINYC_HTREE_TREE_PIPELINE) {
		if (tree_pipeline_run(h, k, v) < 0)
			return -1;
	} else {
		for (int l = 1; l < h->L; l++) {
			tinyc_kernel *kern = l == 1 ? h->kpool_in : h->kpool_f32;
			tinyc_devptr ks = l == 1 ? k : h->kl[l - 1], vs = l == 1 ? v : h->vl[l - 1];
			if (launch_pool(h, kern, ks, h->kl[l], h->N[l - 1], h->Hkv * h->K) < 0 ||
			    launch_pool(h, kern, vs, h->vl[l], h->N[l - 1], h->Hkv * h->V) < 0)
				return -1;
		}
	}
	return h->L > 1 ? launch_rot_top(h) : 0;
}

/* The forward kernel's parameters for rows query rows at positions (0: t = row). */
static void fill_params(const tinyc_htree_gpu *h, tinyc_devptr q, tinyc_devptr k, tinyc_devptr v,
			tinyc_devptr o, int64_t rows, tinyc_devptr positions,
			tinyc_htree_kparams *p)
{
	memset(p, 0, sizeof *p);
	p->q = q;
	p->k0 = k;
	p->v0 = v;
	for (int l = 0; l < h->L; l++) {
		p->kl[l] = h->kl[l];
		p->vl[l] = h->vl[l];
		p->N[l] = h->N[l];
	}
	p->cos_tab = h->cos_tab;
	p->sin_tab = h->sin_tab;
	p->positions = positions;
	p->o = o;
	p->T = h->T;
	p->B = h->B;
	p->Hkv = h->Hkv;
	p->L = h->L;
	p->rows = rows;
	p->table_rows = h->table_rows;
	p->scale = h->scale;
	p->prof = h->prof;
	p->krot = h->krot;
}

/* Launch htree_forward over B * rows * Hkv query groups. */
static int launch_forward(tinyc_htree_gpu *h, tinyc_htree_kparams *p)
{
	void *args[1] = {p};
	tinyc_dim3 grid = {(unsigned)(h->B * p->rows * h->Hkv), 1, 1};
	tinyc_dim3 block = {(unsigned)h->threads, 1, 1};
	return tinyc_cuda_launch(h->cu, h->kfwd, grid, block, (unsigned)h->smem, args);
}

/* Enqueue one forward. */
int tinyc_htree_gpu_run(tinyc_htree_gpu *h, tinyc_devptr q, tinyc_devptr k, tinyc_devptr v,
			tinyc_devptr o)
{
	if (build_tree(h, k, v) < 0)
		return -1;
	tinyc_htree_kparams p;
	fill_params(h, q, k, v, o, h->rows, h->positions, &p);
	return launch_forward(h, &p);
}

/* Record the selections at trace->positions with one more forward launch over those rows
 * (its outputs go to a scratch buffer). */
int tinyc_htree_gpu_trace(tinyc_htree_gpu *h, tinyc_devptr q, tinyc_devptr k, tinyc_devptr v,
			  int build_tree_first, tinyc_htree_trace *tr)
{
	tinyc_ctx *ctx = h->ctx;
	tr->sel_nodes = NULL;
	tr->num_candidates = NULL;
	if (tr->num_positions < 0 || (tr->num_positions > 0 && !tr->positions))
		return tinyc_error(ctx, "HtreeInvalidArgument", "trace asks for %d positions but gives none",
				   tr->num_positions);
	if (tinyc_htree_check_positions(ctx, tr->positions, tr->num_positions, h->T, "trace") < 0)
		return -1;
	int64_t P = tr->num_positions, L = h->L, K = h->kc.top_k;
	int64_t groups = h->B * P * h->Hkv, sel_row = (L - 1) * K;
	tr->num_layers = h->L;
	for (int l = 0; l < TINYC_HTREE_MAX_LAYERS; l++)
		tr->layer_sizes[l] = l < h->L ? h->N[l] : 0;
	tr->top_k = (int)K;
	tr->sel_nodes = tinyc_malloc(ctx, (size_t)(groups * sel_row + 1) * sizeof(int64_t));
	tr->num_candidates = tinyc_malloc(ctx, (size_t)(groups * L + 1) * sizeof(int64_t));
	int *sel32 = tinyc_malloc(ctx, (size_t)(groups * sel_row + 1) * sizeof(int));
	int *nc32 = tinyc_malloc(ctx, (size_t)(groups * L + 1) * sizeof(int));
	tinyc_devptr dpos = 0, dsel = 0, dnc = 0, dout = 0;
	int rc = -1;
	if (!tr->sel_nodes || !tr->num_candidates || !sel32 || !nc32)
		goto done;
	if (P == 0) {
		rc = 0;
		goto done;
	}
	if (build_tree_first && build_tree(h, k, v) < 0)
		goto done;
	if (upload_positions(h, tr->positions, (int)P, &dpos) < 0 ||
	    tinyc_cuda_alloc(h->cu, (size_t)(groups * sel_row + 1) * sizeof(int), &dsel) < 0 ||
	    tinyc_cuda_alloc(h->cu, (size_t)(groups * L) * sizeof(int), &dnc) < 0 ||
	    tinyc_cuda_alloc(h->cu, (size_t)(h->B * P * h->H * h->V) * sizeof(float), &dout) < 0)
		goto done;
	tinyc_htree_kparams p;
	fill_params(h, q, k, v, dout, P, dpos, &p);
	p.trace_sel = L > 1 ? dsel : 0;
	p.trace_ncand = dnc;
	if (launch_forward(h, &p) < 0 || tinyc_cuda_sync(h->cu) < 0)
		goto done;
	if (tinyc_cuda_download(h->cu, sel32, dsel, (size_t)(groups * sel_row) * sizeof(int)) < 0 ||
	    tinyc_cuda_download(h->cu, nc32, dnc, (size_t)(groups * L) * sizeof(int)) < 0)
		goto done;
	for (int64_t i = 0; i < groups * sel_row; i++)
		tr->sel_nodes[i] = sel32[i];
	for (int64_t i = 0; i < groups * L; i++)
		tr->num_candidates[i] = nc32[i];
	rc = 0;
done:
	tinyc_cuda_free(h->cu, dpos);
	tinyc_cuda_free(h->cu, dsel);
	tinyc_cuda_free(h->cu, dnc);
	tinyc_cuda_free(h->cu, dout);
	free(sel32);
	free(nc32);
	if (rc < 0)
		tinyc_htree_trace_clear(tr);
	return rc;
}

/* ------------------------------------------------------------- whole forwards ---- */

/* A float copy of a float/half/bfloat16 tensor (NULL on failure). */
static tinyc_tensor *to_float(tinyc_ctx *ctx, const tinyc_tensor *t)
{
	tinyc_tensor *f = tinyc_tensor_alloc(ctx, TINYC_FLOAT, t->rank, t->shape);
	if (!f)
		return NULL;
	int64_t n = tinyc_tensor_numel(t);
	float *d = f->data;
	for (int64_t i = 0; i < n; i++)
		d[i] = (float)tinyc_tensor_get(t, i);
	return f;
}

/* The forward on device tensors (see htree_run.h). */
int tinyc_htree_forward_cuda_dev(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_htree_config *cfg,
				 const tinyc_htree_gpu_opts *opts, const tinyc_htree_dev_tensor *q, const tinyc_htree_dev_tensor *k,
				 const tinyc_htree_dev_tensor *v, tinyc_devptr o,
				 tinyc_htree_trace *trace)
{
	if (!ctx)
		return -1;
	if (!cfg || !q || !k || !v)
		return tinyc_error(ctx, "HtreeInvalidArgument", "config, q, k and v are required");
	tinyc_dtype dts[3] = {q->dtype, k->dtype, v->dtype};
	int ranks[3] = {4, 4, 4};
	const int64_t *shapes[3] = {q->shape, k->shape, v->shape};
	if (tinyc_htree_check_shapes(ctx, dts, ranks, shapes) < 0)
		return -1;
	if (k->dtype != q->dtype || v->dtype != q->dtype)
		return tinyc_error(ctx, "HtreeUnsupportedDtype",
				   "on the device q, k and v must have one dtype (%s, %s, %s)",
				   tinyc_dtype_name(q->dtype), tinyc_dtype_name(k->dtype),
				   tinyc_dtype_name(v->dtype));
	tinyc_htree_gpu *h = tinyc_htree_gpu_alloc(ctx, cu, cfg, opts, q->dtype, q->shape[0], q->shape[1],
						   q->shape[2], k->shape[2], q->shape[3],
						   v->shape[3]);
	if (!h)
		return -1;
	int rc = tinyc_htree_gpu_run(h, q->ptr, k->ptr, v->ptr, o) < 0 || tinyc_cuda_sync(cu) < 0
		 ? -1 : 0;
	if (rc == 0 && trace)
		rc = tinyc_htree_gpu_trace(h, q->ptr, k->ptr, v->ptr, 0, trace);
	tinyc_htree_gpu_free(h);
	return rc;
}

/* The forward on host tensors (see htree_run.h). */
int tinyc_htree_forward_cuda(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_htree_config *cfg,
			     const tinyc_htree_gpu_opts *opts, const tinyc_tensor *q, const tinyc_tensor *k, const tinyc_tensor *v,
			     tinyc_tensor **o, tinyc_htree_trace *trace)
{
	if (!ctx)
		return -1;
	if (!o)
		return tinyc_error(ctx, "HtreeInvalidArgument", "no place for the output");
	*o = NULL;
	if (!cfg || !q || !k || !v)
		return tinyc_error(ctx, "HtreeInvalidArgument", "config, q, k and v are required");
	if (trace) {
		trace->sel_nodes = NULL;
		trace->num_candidates = NULL;
	}
	tinyc_dtype dts[3] = {q->dtype, k->dtype, v->dtype};
	int ranks[3] = {q->rank, k->rank, v->rank};
	const int64_t *shapes[3] = {q->shape, k->shape, v->shape};
	if (tinyc_htree_check_shapes(ctx, dts, ranks, shapes) < 0)
		return -1;
	/* one dtype on the device: mixed inputs are converted to float here */
	const tinyc_tensor *in[3] = {q, k, v};
	tinyc_tensor *conv[3] = {NULL, NULL, NULL};
	if (k->dtype != q->dtype || v->dtype != q->dtype)
		for (int i = 0; i < 3; i++)
			if (!(in[i] = conv[i] = to_float(ctx, in[i]))) {
				for (int j = 0; j < i; j++)
					tinyc_tensor_free(conv[j]);
				return -1;
			}
	tinyc_htree_gpu *h = tinyc_htree_gpu_alloc(ctx, cu, cfg, opts, in[0]->dtype, q->shape[0],
						   q->shape[1], q->shape[2], k->shape[2],
						   q->shape[3], v->shape[3]);
	tinyc_devptr d[3] = {0, 0, 0}, dout = 0;
	tinyc_tensor *out = NULL;
	int rc = -1;
	if (!h)
		goto done;
	for (int i = 0; i < 3; i++) {
		size_t bytes = (size_t)tinyc_tensor_numel(in[i]) * (size_t)tinyc_dtype_size(in[i]->dtype);
		if (tinyc_cuda_alloc(cu, bytes, &d[i]) < 0 ||
		    tinyc_cuda_upload(cu, d[i], in[i]->data, bytes) < 0)
			goto done;
	}
	int64_t shape[4] = {q->shape[0], h->rows, q->shape[2], v->shape[3]};
	if (!(out = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 4, shape)))
		goto done;
	size_t obytes = (size_t)tinyc_tensor_numel(out) * sizeof(float);
	if (tinyc_cuda_alloc(cu, obytes, &dout) < 0 || tinyc_htree_gpu_run(h, d[0], d[1], d[2], dout) < 0 ||
	    tinyc_cuda_sync(cu) < 0 || tinyc_cuda_download(cu, out->data, dout, obytes) < 0)
		goto done;
	if (trace && tinyc_htree_gpu_trace(h, d[0], d[1], d[2], 0, trace) < 0)
		goto done;
	*o = out;
	out = NULL;
	rc = 0;
done:
	tinyc_tensor_free(out);
	if (h) {
		for (int i = 0; i < 3; i++)
			tinyc_cuda_free(cu, d[i]);
		tinyc_cuda_free(cu, dout);
	}
	tinyc_htree_gpu_free(h);
	for (int i = 0; i < 3; i++)
		tinyc_tensor_free(conv[i]);
	return rc;
}
