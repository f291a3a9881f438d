/* tinyc htree: the htree forward (seed 004) from the command line.
 *
 *   tinyc htree --q q.npy --k k.npy --v v.npy --out o.npy [options]
 *   tinyc htree --bench [--seq-len T]... [options]
 *
 * The first form runs the forward on .npy tensors (q [B,T,H,K], k [B,T,H_kv,K],
 * v [B,T,H_kv,V]; float, half or bfloat16) with the CPU reference (--device=cpu) or the
 * GPU path (--device=cuda), writes o [B,T,H,V] (float) and optionally prints the
 * per-layer selections at some positions (--trace-position) or compares the GPU result
 * with the CPU reference (--check).  The second form times the GPU forward at the
 * benchmark shape (B=1, H=16, H_kv=1, K=V=16, fp32 unless told otherwise) for each
 * sequence length: median of event-timed runs after warm-up, and the time per forward of
 * as many forwards back to back between two events.
 *
 * Exit status: 0 success, 1 diagnostics or a failed check, 2 usage error.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"
#include "ir/htree.h"
#include "ir/tensor.h"
#include "codegen/codegen.h"
#include "driver/htree_run.h"
#include "runtime/runtime.h"
#include "tinyc_args.h"

enum { HT_OK = 0, HT_DIAG = 1, HT_USAGE = 2 };

#define HT_MAX_LIST 64		/* --trace-position / --seq-len entries */
#define HT_BENCH_CHECK_ROWS 16	/* positions the benchmark checks against the CPU reference */

/* Everything the htree command line says. */
typedef struct ht_cli {
	const char *q, *k, *v, *out;	/* .npy paths */
	tinyc_htree_config cfg;		/* --compression-rate ... --rope-base */
	const char *device;		/* --device: "cpu" or "cuda" */
	int device_cuda;		/* --device=cuda */
	int check;			/* --check: compare cuda with the CPU reference */
	const char *tree;		/* --tree: "pipeline" or "kernels" */
	int tree_kernels;		/* --tree=kernels */
	int64_t trace[HT_MAX_LIST];	/* --trace-position */
	int ntrace;
	int bench;			/* --bench */
	int64_t seq[HT_MAX_LIST];	/* --seq-len (bench) */
	int nseq;
	int64_t heads, kv_heads, dim;	/* bench shape: H, H_kv, K = V */
	const char *dtype_name;		/* --dtype */
	tinyc_dtype dtype;		/* bench dtype */
	int warmup, iters;		/* bench timing */
	int profile;			/* --profile: per-phase cycles of the forward */
	int threads;			/* --threads: htree_forward block size, 0 = chosen */
	int min_blocks;			/* --min-blocks: its launch bounds, 0 = chosen */
	int simt_leaves;		/* --simt-leaves: leaves on FMA, not tensor cores */
	int exact_max;			/* --exact-max: pass 1 by the exact sweep */
	int pass2_cands;		/* --pass2-cands: pass 2's candidates a thread, 0 = chosen */
	int rotate_keys;		/* --rotate-keys: pass 3 and the top leaves rotate each key */
} ht_cli;

#define F(field) offsetof(ht_cli, field)

static const tinyc_arg ht_opts[] = {
	{"--q", NULL, TINYC_ARG_STR, F(q), "q.npy", 0, 0, NULL, NULL, "queries [B,T,H,K]"},
	{"--k", NULL, TINYC_ARG_STR, F(k), "k.npy", 0, 0, NULL, NULL, "keys [B,T,H_kv,K]"},
	{"--v", NULL, TINYC_ARG_STR, F(v), "v.npy", 0, 0, NULL, NULL, "values [B,T,H_kv,V]"},
	{"--out", NULL, TINYC_ARG_STR, F(out), "o.npy", 0, 0, NULL, NULL,
	 "write o [B,T,H,V] (float)"},
	{"--compression-rate", NULL, TINYC_ARG_INT, F(cfg.compression_rate), "R", INT32_MIN,
	 INT32_MAX, NULL, NULL, "children per tree node, a power of two (default 16)"},
	{"--top-k", NULL, TINYC_ARG_INT, F(cfg.top_k), "K", INT32_MIN, INT32_MAX, NULL, NULL,
	 "parents kept per layer, a power of two (default 512)"},
	{"--max-top-nodes", NULL, TINYC_ARG_I64, F(cfg.max_top_nodes), "N", INT64_MIN, INT64_MAX,
	 NULL, NULL, "most nodes on the top layer (default 8192)"},
	{"--scale", NULL, TINYC_ARG_FLOAT, F(cfg.scale), "S", 0, 0, NULL, NULL,
	 "score scale (default K^-1/2)"},
	{"--rope-base", NULL, TINYC_ARG_FLOAT, F(cfg.rope_base), "B", 0, 0, NULL, NULL,
	 "RoPE base (default 10000)"},
	{"--device", NULL, TINYC_ARG_CHOICE, F(device), "cpu|cuda", 0, 0, "cpu|cuda", NULL,
	 "the CPU reference or the GPU path (default cpu)"},
	{"--trace-position", NULL, TINYC_ARG_I64_LIST, F(trace), "t", INT64_MIN, INT64_MAX, NULL,
	 NULL, "print the selections of every layer at position t\n(repeatable)", F(ntrace),
	 HT_MAX_LIST},
	{"--check", NULL, TINYC_ARG_FLAG, F(check), NULL, 0, 0, NULL, NULL,
	 "with --device=cuda: compare with the CPU reference"},
	{"--tree", NULL, TINYC_ARG_CHOICE, F(tree), "pipeline|kernels", 0, 0, "pipeline|kernels",
	 NULL, "GPU tree build: the pooling graph through the generic\npipeline (default) or "
	 "the htree pooling kernels"},
	{0},
};

static const tinyc_arg ht_bench_opts[] = {
	{"--bench", NULL, TINYC_ARG_FLAG, F(bench), NULL, 0, 0, NULL, NULL,
	 "time the GPU forward instead (no --q/--k/--v)"},
	{"--seq-len", NULL, TINYC_ARG_I64_LIST, F(seq), "T", 1, INT64_MAX, NULL, NULL,
	 "sequence length (repeatable)", F(nseq), HT_MAX_LIST},
	{"--heads", NULL, TINYC_ARG_I64, F(heads), "H", 1, INT64_MAX, NULL, NULL,
	 "query heads (default 16)"},
	{"--kv-heads", NULL, TINYC_ARG_I64, F(kv_heads), "H_kv", 1, INT64_MAX, NULL, NULL,
	 "key/value heads (default 1)"},
	{"--dim", NULL, TINYC_ARG_I64, F(dim), "D", 1, INT64_MAX, NULL, NULL,
	 "head dimension, K = V = D (default 16)"},
	{"--dtype", NULL, TINYC_ARG_CHOICE, F(dtype_name), "float|half|bfloat16", 0, 0,
	 "float|half|bfloat16", NULL, "input dtype (default float)"},
	{"--warmup", NULL, TINYC_ARG_INT, F(warmup), "N", 0, 1000, NULL, NULL,
	 "untimed forwards first (default 3)"},
	{"--iters", NULL, TINYC_ARG_INT, F(iters), "N", 1, 1000, NULL, NULL,
	 "timed forwards, median kept (default 10)"},
	{"--threads", NULL, TINYC_ARG_INT, F(threads), "N", 64, 1024, NULL, NULL,
	 "htree_forward block size (power of two; default chosen)"},
	{"--min-blocks", NULL, TINYC_ARG_INT, F(min_blocks), "N", 1, 32, NULL, NULL,
	 "blocks of htree_forward an SM should hold (launch\nbounds; default: 128 registers a thread)"},
	{"--profile", NULL, TINYC_ARG_FLAG, F(profile), NULL, 0, 0, NULL, NULL,
	 "also print the forward's cycles per phase (clock64 of\neach block's thread 0; slower)"},
	{"--simt-leaves", NULL, TINYC_ARG_FLAG, F(simt_leaves), NULL, 0, 0, NULL, NULL,
	 "leaves on FMA instead of the 3xTF32 tensor-core path\n(which needs G = K = V = 16, float)"},
	{"--exact-max", NULL, TINYC_ARG_FLAG, F(exact_max), NULL, 0, 0, NULL, NULL,
	 "selection pass 1 (per-head max) by the exact sweep\ninstead of fast scores with exact rechecks"},
	{"--pass2-cands", NULL, TINYC_ARG_INT, F(pass2_cands), "N", 1, 3, NULL, NULL,
	 "selection pass 2: candidates a thread takes a tile\n(an experiment; default chosen: 2 where they fit)"},
	{"--rotate-keys", NULL, TINYC_ARG_FLAG, F(rotate_keys), NULL, 0, 0, NULL, NULL,
	 "selection pass 3 and the top layer's tensor-core leaves\nrotate each candidate's key instead of reading the top\nlayer's rotated keys (slower)"},
	{0},
};

#undef F

static const tinyc_arg_group ht_group = {"Htree options", ht_opts};
static const tinyc_arg_group ht_bench_group = {"Htree benchmark options", ht_bench_opts};

static const tinyc_command ht_args = {
	"tinyc htree",
	"tinyc htree --q q.npy --k k.npy --v v.npy --out o.npy [options]\n"
	"       tinyc htree --bench [--seq-len T]... [options]\n",
	"htree forward (hierarchical tree sparse attention, shared GQA top-K):\n"
	"q [B,T,H,K], k [B,T,H_kv,K], v [B,T,H_kv,V] -> o [B,T,H,V] (float).\n"
	"The benchmark (--bench, GPU) runs B=1, H=16, H_kv=1, K=V=16, fp32, the default\n"
	"config, at T = 16384, 65536, 120000 unless --seq-len is given, and prints the\n"
	"median time per forward (tree build included) after warm-up, and the time per\n"
	"forward of --iters forwards back to back between two events.\n",
	{&ht_group, &ht_bench_group, &tinyc_args_other, NULL},
	NULL, 0, NULL,
	"Exit status: 0 success, 1 diagnostics or failed check, 2 usage error.\n", NULL,
};

/* Parse the arguments after "htree".  -1 to go on, else an exit status. */
static int ht_parse(int argc, char **argv, ht_cli *c)
{
	tinyc_htree_config_default(&c->cfg);
	c->heads = 16, c->kv_heads = 1, c->dim = 16;
	c->device = "cpu", c->tree = "pipeline", c->dtype_name = "float";
	c->warmup = 3, c->iters = 10;
	int rc = tinyc_args_parse(&ht_args, argc, argv, c);
	if (rc >= 0)
		return rc;
	c->device_cuda = !strcmp(c->device, "cuda");
	c->tree_kernels = !strcmp(c->tree, "kernels");
	c->dtype = tinyc_dtype_from_name(c->dtype_name, (int)strlen(c->dtype_name));
	if (c->bench)
		return -1;
	if (!c->q || !c->k || !c->v)
		return tinyc_args_error(&ht_args, "--q, --k and --v are required");
	if (c->check && !c->device_cuda)
		return tinyc_args_error(&ht_args, "--check compares --device=cuda with the CPU "
					"reference");
	return -1;
}

/* Print the selections of a trace: per position, batch and KV head, every layer. */
static void ht_print_trace(const tinyc_htree_trace *tr, int64_t B, int64_t Hkv)
{
	int L = tr->num_layers;
	for (int i = 0; i < tr->num_positions; i++)
		for (int64_t b = 0; b < B; b++)
			for (int64_t h = 0; h < Hkv; h++) {
				int64_t gi = (b * tr->num_positions + i) * Hkv + h;
				printf("trace t=%lld b=%lld h_kv=%lld:\n", (long long)tr->positions[i],
				       (long long)b, (long long)h);
				for (int l = L - 1; l >= 0; l--) {
					printf("  layer %d (%lld nodes): %lld candidates", l,
					       (long long)tr->layer_sizes[l],
					       (long long)tr->num_candidates[gi * L + l]);
					if (l == 0) {
						printf(", all merged\n");
						continue;
					}
					const int64_t *sel = tr->sel_nodes + (gi * (L - 1) + (l - 1)) * tr->top_k;
					printf(", selected:");
					for (int x = 0; x < tr->top_k && sel[x] >= 0; x++)
						printf(" %lld", (long long)sel[x]);
					printf("\n");
				}
			}
}

/* Compare o with the reference oref: max |diff| and the query groups (b, t, h_kv) with a
 * value over atol. */
static void ht_compare(const tinyc_tensor *o, const tinyc_tensor *oref, int64_t Hkv,
		       double atol, double *max_abs, int64_t *groups_over)
{
	int64_t B = o->shape[0], rows = o->shape[1], H = o->shape[2], V = o->shape[3];
	int64_t G = H / Hkv;
	const float *a = o->data, *r = oref->data;
	*max_abs = 0;
	*groups_over = 0;
	for (int64_t gi = 0; gi < B * rows * Hkv; gi++) {
		double ge = 0;
		for (int64_t e = 0; e < G * V; e++) {
			double d = fabs((double)a[gi * G * V + e] - (double)r[gi * G * V + e]);
			if (!(d <= ge))
				ge = isnan(d) ? INFINITY : d;
		}
		if (ge > *max_abs)
			*max_abs = ge;
		if (ge > atol)
			(*groups_over)++;
	}
}

/* The run form: load, forward, trace, check, write. */
static int ht_run(tinyc_ctx *ctx, ht_cli *c)
{
	int rc = HT_DIAG;
	tinyc_tensor *q = tinyc_npy_read(ctx, c->q), *k = NULL, *v = NULL, *o = NULL, *oref = NULL;
	tinyc_cuda *cu = NULL;
	tinyc_htree_trace tr;
	memset(&tr, 0, sizeof tr);
	tr.positions = c->trace;
	tr.num_positions = c->ntrace;
	if (!q || !(k = tinyc_npy_read(ctx, c->k)) || !(v = tinyc_npy_read(ctx, c->v)))
		goto done;
	double t0 = tinyc_now_ms();
	if (c->device_cuda) {
		if (!(cu = tinyc_cuda_open(ctx, 0)))
			goto done;
		tinyc_htree_gpu_opts opts = {c->tree_kernels, 0, 0};
		if (tinyc_htree_forward_cuda(ctx, cu, &c->cfg, &opts, q, k, v, &o,
					     c->ntrace ? &tr : NULL) < 0)
			goto done;
	} else if (tinyc_htree_forward_cpu(ctx, &c->cfg, q, k, v, &o, c->ntrace ? &tr : NULL) < 0) {
		goto done;
	}
	double ms = tinyc_now_ms() - t0;
	printf("tinyc: htree on %s: q [%lld,%lld,%lld,%lld], o [%lld,%lld,%lld,%lld] in %.1f ms\n",
	       c->device_cuda ? tinyc_cuda_device_info(cu)->name : "the CPU (reference)",
	       (long long)q->shape[0], (long long)q->shape[1], (long long)q->shape[2],
	       (long long)q->shape[3], (long long)o->shape[0], (long long)o->shape[1],
	       (long long)o->shape[2], (long long)o->shape[3], ms);
	if (c->ntrace)
		ht_print_trace(&tr, q->shape[0], k->shape[2]);
	if (c->check) {
		if (tinyc_htree_forward_cpu(ctx, &c->cfg, q, k, v, &oref, NULL) < 0)
			goto done;
		double max_abs;
		int64_t over, groups = q->shape[0] * q->shape[1] * k->shape[2];
		ht_compare(o, oref, k->shape[2], 1e-4, &max_abs, &over);
		/* the golden vectors' rule: at most floor(groups/4000) groups over atol (selection
		 * flips at truncation-bucket edges), at least 1 on a multi-layer tree */
		int64_t allowed = groups / 4000;
		if (allowed < 1 && tinyc_htree_layer_sizes(q->shape[1], c->cfg.compression_rate,
							   c->cfg.max_top_nodes, NULL) > 1)
			allowed = 1;
		int ok = over <= allowed;
		printf("  check vs CPU reference: max|diff| %.3g, query groups over 1e-4: %lld of "
		       "%lld (allowed %lld): %s\n", max_abs, (long long)over, (long long)groups,
		       (long long)allowed, ok ? "ok" : "FAILED");
		if (!ok) {
			tinyc_error(ctx, "CheckFailed", "the GPU result differs from the CPU reference");
			goto done;
		}
	}
	if (c->out && tinyc_npy_write(ctx, c->out, o) < 0)
		goto done;
	rc = HT_OK;
done:
	tinyc_htree_trace_clear(&tr);
	tinyc_tensor_free(q);
	tinyc_tensor_free(k);
	tinyc_tensor_free(v);
	tinyc_tensor_free(o);
	tinyc_tensor_free(oref);
	tinyc_cuda_close(cu);
	return rc;
}

/* Fill t with standard-normal values (Box-Muller on a fixed LCG): the same on every host. */
static void ht_fill_normal(tinyc_tensor *t, uint64_t seed)
{
	int64_t n = tinyc_tensor_numel(t);
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int64_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double u1 = (double)((s >> 11) + 1) * (1.0 / 9007199254740993.0);
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double u2 = (double)(s >> 11) * (1.0 / 9007199254740992.0);
		tinyc_tensor_set(t, i, sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
	}
}

/* What one timed forward needs. */
typedef struct ht_bench_run {
	tinyc_htree_gpu *h;		/* the prepared forward */
	tinyc_devptr q, k, v, o;	/* device tensors */
} ht_bench_run;

/* One forward, for tinyc_cuda_time. */
static int ht_bench_once(tinyc_cuda *cu, void *arg)
{
	(void)cu;
	ht_bench_run *r = arg;
	return tinyc_htree_gpu_run(r->h, r->q, r->k, r->v, r->o);
}

/* Print the forward's cycles per phase, summed over the timed and warm-up runs. */
static int ht_print_profile(tinyc_htree_gpu *h, int64_t T)
{
	static const char *const names[TINYC_HTREE_NPHASES] = {
		"qrot", "sel-max", "sel-sum", "sel-keys", "topk", "leaves-l>0", "leaves-l0", "final"};
	uint64_t cyc[TINYC_HTREE_NPHASES];
	if (tinyc_htree_gpu_profile(h, cyc) < 0)
		return -1;
	double tot = 0;
	for (int i = 0; i < TINYC_HTREE_NPHASES; i++)
		tot += (double)cyc[i];
	for (int i = 0; i < TINYC_HTREE_NPHASES; i++)
		printf("PROFILE htree T=%lld phase=%s cycles=%.4g share=%.1f%%\n", (long long)T, names[i],
		       (double)cyc[i], tot > 0 ? 100.0 * (double)cyc[i] / tot : 0.0);
	return 0;
}

/* Time the forward at one sequence length; prints one result line.  0 or -1. */
static int ht_bench_one(tinyc_ctx *ctx, tinyc_cuda *cu, ht_cli *c, int64_t T)
{
	int64_t B = 1, H = c->heads, Hkv = c->kv_heads, D = c->dim;
	int64_t sq[4] = {B, T, H, D}, sk[4] = {B, T, Hkv, D};
	tinyc_tensor *t[3] = {tinyc_tensor_alloc(ctx, c->dtype, 4, sq),
			      tinyc_tensor_alloc(ctx, c->dtype, 4, sk),
			      tinyc_tensor_alloc(ctx, c->dtype, 4, sk)};
	tinyc_tensor *o = NULL, *oref = NULL;
	ht_bench_run r = {0};
	tinyc_devptr d[3] = {0, 0, 0};
	int rc = -1;
	if (!t[0] || !t[1] || !t[2])
		goto done;
	for (int i = 0; i < 3; i++)
		ht_fill_normal(t[i], (uint64_t)(T * 3 + i));
	/* a few positions, the last ones included, checked against the CPU reference */
	int64_t pos[HT_BENCH_CHECK_ROWS];
	for (int i = 0; i < HT_BENCH_CHECK_ROWS; i++)
		pos[i] = i < HT_BENCH_CHECK_ROWS / 2 ? (T - 1) * i / (HT_BENCH_CHECK_ROWS / 2)
						     : T - HT_BENCH_CHECK_ROWS + i;
	tinyc_htree_gpu_opts opts = {c->tree_kernels, c->threads, c->profile, c->min_blocks,
				     c->simt_leaves, c->exact_max, c->pass2_cands, c->rotate_keys};
	r.h = tinyc_htree_gpu_alloc(ctx, cu, &c->cfg, &opts, c->dtype, B, T, H, Hkv, D, D);
	if (!r.h)
		goto done;
	for (int i = 0; i < 3; i++) {
		size_t bytes = (size_t)tinyc_tensor_numel(t[i]) * (size_t)tinyc_dtype_size(c->dtype);
		if (tinyc_cuda_alloc(cu, bytes, &d[i]) < 0 || tinyc_cuda_upload(cu, d[i], t[i]->data, bytes) < 0)
			goto done;
	}
	r.q = d[0], r.k = d[1], r.v = d[2];
	int64_t so[4] = {B, T, H, D};
	if (!(o = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 4, so)) ||
	    tinyc_cuda_alloc(cu, (size_t)tinyc_tensor_numel(o) * sizeof(float), &r.o) < 0)
		goto done;
	double med = 0;
	double times[1000];
	double b2b = 0;
	if (tinyc_cuda_time(cu, ht_bench_once, &r, c->warmup, c->iters, &med, times) < 0 ||
	    tinyc_cuda_time_run(cu, ht_bench_once, &r, 0, c->iters, &b2b) < 0 ||
	    tinyc_cuda_download(cu, o->data, r.o, (size_t)tinyc_tensor_numel(o) * sizeof(float)) < 0)
		goto done;
	double tmin = times[0];
	for (int i = 1; i < c->iters; i++)
		if (times[i] < tmin)
			tmin = times[i];
	/* the CPU reference at the checked positions */
	tinyc_htree_config cc = c->cfg;
	cc.query_positions = pos;
	cc.num_query_positions = HT_BENCH_CHECK_ROWS;
	if (tinyc_htree_forward_cpu(ctx, &cc, t[0], t[1], t[2], &oref, NULL) < 0)
		goto done;
	double max_abs = 0;
	int64_t over = 0;
	const float *a = o->data, *b = oref->data;
	for (int i = 0; i < HT_BENCH_CHECK_ROWS; i++)
		for (int64_t g = 0; g < Hkv; g++) {
			double ge = 0;
			for (int64_t e = 0; e < (H / Hkv) * D; e++) {
				double dd = fabs((double)a[(pos[i] * Hkv + g) * (H / Hkv) * D + e] -
						 (double)b[(i * Hkv + g) * (H / Hkv) * D + e]);
				if (!(dd <= ge))
					ge = isnan(dd) ? INFINITY : dd;
			}
			if (ge > max_abs)
				max_abs = ge;
			over += ge > 1e-4;
		}
	tinyc_htree_gpu_info info;
	tinyc_htree_gpu_get_info(r.h, &info);
	printf("htree T=%lld: median %.3f ms, min %.3f ms over %d runs (warm-up %d), %.3f ms a "
	       "forward back to back; layers %d (", (long long)T, med, tmin, c->iters, c->warmup, b2b,
	       info.num_layers);
	for (int l = 0; l < info.num_layers; l++)
		printf("%s%lld", l ? "," : "", (long long)info.layer_sizes[l]);
	printf("); tree %s%s%s; forward %d threads, %d regs, %lld B smem; check vs CPU at %d "
	       "positions: max|diff| %.2g, groups over 1e-4: %lld\n",
	       info.tree_path == TINYC_HTREE_TREE_PIPELINE ? "pipeline" : "kernels",
	       info.tree_note[0] ? " - " : "", info.tree_note, info.threads, info.regs,
	       (long long)info.smem_bytes, HT_BENCH_CHECK_ROWS, max_abs, (long long)over);
	printf("BENCH htree T=%lld ms=%.4f b2b_ms=%.4f\n", (long long)T, med, b2b);
	if (c->profile && ht_print_profile(r.h, T) < 0)
		goto done;
	fflush(stdout);
	rc = 0;
done:
	for (int i = 0; i < 3; i++) {
		if (d[i])
			tinyc_cuda_free(cu, d[i]);
		tinyc_tensor_free(t[i]);
	}
	if (r.o)
		tinyc_cuda_free(cu, r.o);
	tinyc_htree_gpu_free(r.h);
	tinyc_tensor_free(o);
	tinyc_tensor_free(oref);
	return rc;
}

/* The benchmark form. */
static int ht_bench(tinyc_ctx *ctx, ht_cli *c)
{
	static const int64_t defaults[3] = {16384, 65536, 120000};
	if (!c->nseq)
		for (int i = 0; i < 3; i++)
			c->seq[c->nseq++] = defaults[i];
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	if (!cu)
		return HT_DIAG;
	const tinyc_device_info *dev = tinyc_cuda_device_info(cu);
	printf("htree benchmark on %s (%s): B=1 H=%lld H_kv=%lld K=V=%lld %s, r=%d top_k=%d "
	       "max_top_nodes=%lld\n", dev->name, dev->target, (long long)c->heads,
	       (long long)c->kv_heads, (long long)c->dim, tinyc_dtype_name(c->dtype),
	       c->cfg.compression_rate, c->cfg.top_k, (long long)c->cfg.max_top_nodes);
	int rc = HT_OK;
	for (int i = 0; i < c->nseq && rc == HT_OK; i++) {
		tinyc_ctx_print_diags(ctx, stderr);
		tinyc_ctx_clear_diags(ctx);
		if (ht_bench_one(ctx, cu, c, c->seq[i]) < 0)
			rc = HT_DIAG;
	}
	tinyc_cuda_close(cu);
	return rc;
}

/* `tinyc htree ...`: argv[0] is "htree". */
int tinyc_cmd_htree(int argc, char **argv)
{
	ht_cli c;
	memset(&c, 0, sizeof c);
	int rc = ht_parse(argc, argv, &c);
	if (rc >= 0)
		return rc;
	tinyc_ctx *ctx = tinyc_cli_ctx_alloc();
	if (!ctx) {
		fprintf(stderr, "tinyc: error: OutOfMemory\n");
		return HT_DIAG;
	}
	rc = c.bench ? ht_bench(ctx, &c) : ht_run(ctx, &c);
	fflush(stdout);
	tinyc_ctx_print_diags(ctx, stderr);
	if (rc == HT_OK && tinyc_ctx_error_count(ctx))
		rc = HT_DIAG;
	tinyc_ctx_free(ctx);
	return rc;
}
