/* Unit tests of the htree forward CPU reference (ir/htree.h).
 *
 * Two kinds of check:
 *  - the pieces (layer sizes, pooling, candidate counts, top-K keys and ties, online softmax,
 *    RoPE) and small end-to-end cases against values computed by hand;
 *  - every case of the golden vectors (TINYC_GOLDEN_DIR, shared/htree-golden) against its
 *    stored output and selections, with the manifest's config and tolerance rule.
 * A missing golden directory is a failure, not a skip.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ctx.h"
#include "ir/htree.h"
#include "ir/tensor.h"

#include "../common/htree_golden.h"


/* A new float tensor of the given shape filled from vals (numel floats), or zeros. */
static tinyc_tensor *make_f32(tinyc_ctx *ctx, int rank, const int64_t *shape, const float *vals)
{
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, TINYC_FLOAT, rank, shape);
	cr_assert_not_null(t);
	int64_t n = tinyc_tensor_numel(t);
	float *d = t->data;
	for (int64_t i = 0; i < n; i++)
		d[i] = vals ? vals[i] : 0.0f;
	return t;
}

/* The kind of the first diagnostic on ctx ("" when there is none). */
static const char *first_kind(tinyc_ctx *ctx)
{
	const tinyc_diag *d = tinyc_ctx_diag_count(ctx) > 0 ? tinyc_ctx_diag(ctx, 0) : NULL;
	return d && d->kind ? d->kind : "";
}

/* ------------------------------------------------------------------ the pieces */

Test(htree_pieces, layer_sizes)
{
	int64_t n[TINYC_HTREE_MAX_LAYERS];
	/* the golden cases' layer sizes (README table) */
	cr_assert_eq(tinyc_htree_layer_sizes(700, 4, 32, n), 4);
	cr_assert(n[0] == 700 && n[1] == 175 && n[2] == 44 && n[3] == 11);
	cr_assert_eq(tinyc_htree_layer_sizes(520, 4, 32, n), 4);
	cr_assert(n[0] == 520 && n[1] == 130 && n[2] == 33 && n[3] == 9);
	cr_assert_eq(tinyc_htree_layer_sizes(256, 16, 256, n), 1);
	cr_assert_eq(n[0], 256);
	cr_assert_eq(tinyc_htree_layer_sizes(257, 16, 256, n), 2);
	cr_assert_eq(n[1], 17);
	cr_assert_eq(tinyc_htree_layer_sizes(0, 4, 32, n), -1);
	cr_assert_eq(tinyc_htree_layer_sizes(10, 1, 4, n), -1);
}

Test(htree_pieces, pool_partial_group_is_valid_count_mean)
{
	/* x [1, 5, 2], r = 2: groups {0,1}, {2,3}, {4}; the last is its own mean, not /2 */
	float x[10] = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
	float y[6];
	tinyc_htree_pool(x, 1, 5, 2, 2, y);
	float want[6] = {1.5f, 15, 3.5f, 35, 5, 50};
	for (int i = 0; i < 6; i++)
		cr_assert_eq(y[i], want[i], "y[%d] = %g, want %g", i, y[i], want[i]);
	/* two outer rows, n = 7, r = 4: {0..3} and {4,5,6} (count 3) */
	float x2[14], y2[4];
	for (int i = 0; i < 14; i++)
		x2[i] = (float)(i % 7 + 1) * (i < 7 ? 1.0f : -2.0f);
	tinyc_htree_pool(x2, 2, 7, 1, 4, y2);
	cr_assert_eq(y2[0], 2.5f);
	cr_assert_eq(y2[1], 6.0f);
	cr_assert_eq(y2[2], -5.0f);
	cr_assert_eq(y2[3], -12.0f);
}

Test(htree_pieces, candidate_count_and_expansion)
{
	/* r = 4, t = 213 on layer 1: node 53, c* = 1; P = 8 parents -> 7*4 + 2 = 30 */
	cr_assert_eq(tinyc_htree_num_candidates(8, 4, 213, 1), 30);
	/* layer 0, t = 213: c* = 213 mod 4 = 1; P = 1 -> 2 */
	cr_assert_eq(tinyc_htree_num_candidates(1, 4, 213, 0), 2);
	/* top layer of v3 (layer 3, r = 4), t = 699: virtual parents 1 + 699/256 = 3,
	 * c* = (699/64) mod 4 = 10 mod 4 = 2 -> 2*4 + 3 = 11 = 699/64 + 1 */
	cr_assert_eq(tinyc_htree_num_candidates(3, 4, 699, 3), 11);
	/* expansion on layer 1 for t = 213 (rightmost node 53) from parents {0, 5, 13} */
	int64_t parents[3] = {0, 5, 13}, cand[12];
	int64_t n = tinyc_htree_expand(parents, 3, 4, 213, 1, cand);
	int64_t want[10] = {0, 1, 2, 3, 20, 21, 22, 23, 52, 53};
	cr_assert_eq(n, 10);
	cr_assert_eq(n, tinyc_htree_num_candidates(3, 4, 213, 1));
	for (int i = 0; i < 10; i++)
		cr_assert_eq(cand[i], want[i], "cand[%d] = %lld", i, (long long)cand[i]);
}

Test(htree_pieces, key_truncation)
{
	cr_assert_eq(tinyc_htree_key(1.0f, 13), 0x3F800000u);
	cr_assert_eq(tinyc_htree_key(1.0f + 0x1p-10f, 13), 0x3F802000u);	/* bit 13: kept */
	cr_assert_eq(tinyc_htree_key(1.0f + 0x1p-11f, 13), 0x3F800000u);	/* bit 12: dropped */
	cr_assert_eq(tinyc_htree_key(1.0f + 0x1p-11f, 0), 0x3F801000u);
	cr_assert_eq(tinyc_htree_key(1000.0f, 13), 0x447A0000u);
	cr_assert_eq(tinyc_htree_key(0.0f, 13), 0u);
}

Test(htree_pieces, topk_ties_go_to_the_smaller_position)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int64_t pos[6];
	/* exact ties */
	float imp[6] = {0.5f, 0.25f, 0.5f, 0.25f, 1000.0f, 0.5f};
	cr_assert_eq(tinyc_htree_topk(ctx, imp, 6, 3, 13, pos), 3);
	cr_assert(pos[0] == 4 && pos[1] == 0 && pos[2] == 2, "got %lld %lld %lld",
		  (long long)pos[0], (long long)pos[1], (long long)pos[2]);
	cr_assert_eq(tinyc_htree_topk(ctx, imp, 6, 5, 13, pos), 5);
	cr_assert(pos[3] == 5 && pos[4] == 1);
	/* k > n: everything, in key order */
	cr_assert_eq(tinyc_htree_topk(ctx, imp, 2, 8, 13, pos), 2);
	cr_assert(pos[0] == 0 && pos[1] == 1);
	/* ties after truncation: 0.50001 and 0.5 share a key with 13 dropped bits, so the
	 * smaller position wins although its importance is smaller; with 0 bits it loses */
	float near[2] = {0.5f, 0.50001f};
	cr_assert_eq(tinyc_htree_topk(ctx, near, 2, 1, 13, pos), 1);
	cr_assert_eq(pos[0], 0);
	cr_assert_eq(tinyc_htree_topk(ctx, near, 2, 1, 0, pos), 1);
	cr_assert_eq(pos[0], 1);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_ctx_free(ctx);
}

/* Direct softmax-weighted average in double: out = sum e^s v / sum e^s. */
static void direct_softmax(const float *s, const float *v, int n, int V, double *out)
{
	double den = 0;
	for (int e = 0; e < V; e++)
		out[e] = 0;
	for (int j = 0; j < n; j++) {
		double w = exp((double)s[j]);
		den += w;
		for (int e = 0; e < V; e++)
			out[e] += w * v[j * V + e];
	}
	for (int e = 0; e < V; e++)
		out[e] /= den;
}

Test(htree_pieces, online_softmax_merge_equals_direct)
{
	float s[5] = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f};
	float v[10] = {1, -1, 2, 0, -3, 4, 0.5f, 0.25f, 8, -8};
	double want[2];
	direct_softmax(s, v, 5, 2, want);
	float acc_a[2], acc_b[2], acc_c[2], acc_e[2], out[2];
	tinyc_htree_smax a = {.acc = acc_a}, b = {.acc = acc_b}, c = {.acc = acc_c},
			 empty = {.acc = acc_e};
	/* a = {s0, s1} in two batches, b = {s2, s3, s4}; merge b into a */
	tinyc_htree_smax_init(&a, 2);
	tinyc_htree_smax_init(&b, 2);
	tinyc_htree_smax_init(&empty, 2);
	tinyc_htree_smax_add(&a, s, v, 1, 2);
	tinyc_htree_smax_add(&a, s + 1, v + 2, 1, 2);
	tinyc_htree_smax_add(&b, s + 2, v + 4, 3, 2);
	cr_assert_eq(b.max, 3.0f);
	tinyc_htree_smax_merge(&a, &b, 2);
	tinyc_htree_smax_merge(&a, &empty, 2);		/* merging nothing changes nothing */
	tinyc_htree_smax_add(&a, s, v, 0, 2);		/* neither does an empty batch */
	tinyc_htree_smax_finish(&a, 2, out);
	for (int e = 0; e < 2; e++)
		cr_assert(fabs(out[e] - want[e]) < 1e-6, "out[%d] = %.9g, want %.9g", e, out[e],
			  want[e]);
	cr_assert(fabs(a.max - 3.0f) == 0);
	/* the other way round, starting from the empty state */
	tinyc_htree_smax_init(&c, 2);
	tinyc_htree_smax_merge(&c, &b, 2);
	tinyc_htree_smax_init(&b, 2);
	tinyc_htree_smax_add(&b, s, v, 2, 2);
	tinyc_htree_smax_merge(&c, &b, 2);
	tinyc_htree_smax_finish(&c, 2, out);
	for (int e = 0; e < 2; e++)
		cr_assert(fabs(out[e] - want[e]) < 1e-6);
	/* sum = e^-3 (e^1 + e^2 + e^3 + e^-1 + e^0.5) relative to max 3 */
	double sum = (exp(1.0) + exp(2.0) + exp(3.0) + exp(-1.0) + exp(0.5)) / exp(3.0);
	cr_assert(fabs(c.sum - sum) < 1e-6, "sum %.9g want %.9g", c.sum, sum);
	/* the empty state finishes to zero (sum clamped to 1e-30, no NaN) */
	tinyc_htree_smax_finish(&empty, 2, out);
	cr_assert(out[0] == 0.0f && out[1] == 0.0f);
}

Test(htree_pieces, rope_rotation_and_table)
{
	float x[4] = {1, 2, 3, 4}, y[4];
	float c0[2] = {1, 1}, s0[2] = {0, 0};
	tinyc_htree_rope(x, 4, c0, s0, y);
	cr_assert(y[0] == 1 && y[1] == 2 && y[2] == 3 && y[3] == 4);
	/* a quarter turn: [x1*0 - x2*1, x1*1 + x2*0] = [-3, -4, 1, 2] (half-split pairing) */
	float c1[2] = {0, 0}, s1[2] = {1, 1};
	tinyc_htree_rope(x, 4, c1, s1, y);
	cr_assert(y[0] == -3 && y[1] == -4 && y[2] == 1 && y[3] == 2);
	/* mixed: c = (0.6, 0), s = (0.8, 1) */
	float c2[2] = {0.6f, 0}, s2[2] = {0.8f, 1};
	tinyc_htree_rope(x, 4, c2, s2, y);
	cr_assert(fabsf(y[0] - (0.6f - 2.4f)) < 1e-6f && fabsf(y[2] - (0.8f + 1.8f)) < 1e-6f);
	cr_assert(y[1] == -4 && y[3] == 2);
	/* K = 4: inv_freq = {1, 1/100} */
	float ct[3 * 2], st[3 * 2];
	tinyc_htree_rope_table(4, 3, 10000.0f, ct, st);
	cr_assert(ct[0] == 1 && ct[1] == 1 && st[0] == 0 && st[1] == 0);
	for (int p = 1; p < 3; p++) {
		cr_assert(fabs(ct[p * 2] - cos((double)p)) < 1e-6);
		cr_assert(fabs(st[p * 2] - sin((double)p)) < 1e-6);
		cr_assert(fabs(ct[p * 2 + 1] - cos(p * 0.01)) < 1e-6);
		cr_assert(fabs(st[p * 2 + 1] - sin(p * 0.01)) < 1e-6);
	}
}

/* ------------------------------------------------------------------ small end-to-end cases */

/* Run the forward on B=1, H=H_kv=1, K=2 zero queries and V=1 values v[t] = vals[t]. */
static tinyc_tensor *run_zero_query(tinyc_ctx *ctx, const tinyc_htree_config *cfg, int64_t T,
				    const float *vals, tinyc_htree_trace *trace)
{
	int64_t sq[4] = {1, T, 1, 2}, sv[4] = {1, T, 1, 1};
	tinyc_tensor *q = make_f32(ctx, 4, sq, NULL);
	tinyc_tensor *k = make_f32(ctx, 4, sq, NULL);
	tinyc_tensor *v = make_f32(ctx, 4, sv, vals);
	for (int64_t i = 0; i < 2 * T; i++)	/* keys do not matter: q = 0 makes every score 0 */
		((float *)k->data)[i] = (float)(i % 5) - 2.0f;
	tinyc_tensor *o = NULL;
	int rc = tinyc_htree_forward_cpu(ctx, cfg, q, k, v, &o, trace);
	if (rc != 0)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(rc, 0);
	cr_assert_not_null(o);
	tinyc_tensor_free(q);
	tinyc_tensor_free(k);
	tinyc_tensor_free(v);
	return o;
}

Test(htree_e2e, single_layer_zero_query_is_causal_mean)
{
	/* one layer (T <= max_top_nodes), all scores 0: o[t] = mean(v[0..t]) */
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = 2;
	cfg.top_k = 4;
	cfg.max_top_nodes = 8;
	float vals[6] = {3, -1, 4, 1, -5, 9};
	tinyc_tensor *o = run_zero_query(ctx, &cfg, 6, vals, NULL);
	cr_assert(o->rank == 4 && o->shape[1] == 6 && o->shape[3] == 1);
	float want[6] = {3, 1, 2, 1.75f, 0.4f, 11.0f / 6};
	for (int t = 0; t < 6; t++)
		cr_assert(fabsf(((float *)o->data)[t] - want[t]) < 1e-6f, "o[%d] = %g, want %g", t,
			  ((float *)o->data)[t], want[t]);
	tinyc_tensor_free(o);
	tinyc_ctx_free(ctx);
}

Test(htree_e2e, three_layers_by_hand)
{
	/* T = 8, r = 2, max_top_nodes = 2: layers 8, 4, 2; v[t] = t; q = 0, so all scores are 0,
	 * every importance ties and the rightmost candidate is forced.
	 * top_k = 1, t = 7: layer 2 {0,1} keeps 1, leaf L2[0] = 1.5; layer 1 {2,3} keeps 3,
	 *   leaf L1[2] = 4.5; layer 0 {6,7} all leaves: o = (1.5 + 4.5 + 6 + 7) / 4 = 4.75.
	 * top_k = 1, t = 4: layer 2 {0,1} keeps 1, leaf 1.5; layer 1 {2} keeps it; layer 0 {4}:
	 *   o = (1.5 + 4) / 2 = 2.75.
	 * top_k = 2, t = 7: layer 2 {0,1} all kept; layer 1 {0,1,2,3}: 3 forced, then the tie
	 *   goes to position 0; leaves L1[1] = 2.5, L1[2] = 4.5; layer 0 {0,1,6,7}:
	 *   o = (2.5 + 4.5 + 0 + 1 + 6 + 7) / 6 = 3.5. */
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	float vals[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = 2;
	cfg.max_top_nodes = 2;
	cfg.top_k = 1;
	int64_t pos[2] = {7, 4};
	tinyc_htree_trace tr = {.positions = pos, .num_positions = 2};
	tinyc_tensor *o = run_zero_query(ctx, &cfg, 8, vals, &tr);
	const float *od = o->data;
	cr_assert(fabsf(od[7] - 4.75f) < 1e-6f, "o[7] = %g", od[7]);
	cr_assert(fabsf(od[4] - 2.75f) < 1e-6f, "o[4] = %g", od[4]);
	cr_assert_eq(tr.num_layers, 3);
	cr_assert(tr.layer_sizes[0] == 8 && tr.layer_sizes[1] == 4 && tr.layer_sizes[2] == 2);
	/* sel_nodes [1,2,1,2,1]: t=7: L1 {3}, L2 {1}; t=4: L1 {2}, L2 {1} */
	cr_assert(tr.sel_nodes[0] == 3 && tr.sel_nodes[1] == 1);
	cr_assert(tr.sel_nodes[2] == 2 && tr.sel_nodes[3] == 1);
	/* n_cand [1,2,1,3]: t=7: 2,2,2; t=4: 1,1,2 */
	cr_assert(tr.num_candidates[0] == 2 && tr.num_candidates[1] == 2 &&
		  tr.num_candidates[2] == 2);
	cr_assert(tr.num_candidates[3] == 1 && tr.num_candidates[4] == 1 &&
		  tr.num_candidates[5] == 2);
	tinyc_htree_trace_clear(&tr);
	tinyc_tensor_free(o);

	cfg.top_k = 2;
	int64_t one = 7;
	tinyc_htree_trace tr2 = {.positions = &one, .num_positions = 1};
	cfg.query_positions = &one;
	cfg.num_query_positions = 1;
	o = run_zero_query(ctx, &cfg, 8, vals, &tr2);
	cr_assert(o->shape[1] == 1);
	cr_assert(fabsf(((float *)o->data)[0] - 3.5f) < 1e-6f, "o = %g", ((float *)o->data)[0]);
	/* [L-1 = 2, top_k = 2]: L1 {0,3}, L2 {0,1}; n_cand 4, 4, 2 */
	cr_assert(tr2.sel_nodes[0] == 0 && tr2.sel_nodes[1] == 3);
	cr_assert(tr2.sel_nodes[2] == 0 && tr2.sel_nodes[3] == 1);
	cr_assert(tr2.num_candidates[0] == 4 && tr2.num_candidates[1] == 4 &&
		  tr2.num_candidates[2] == 2);
	tinyc_htree_trace_clear(&tr2);
	tinyc_tensor_free(o);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_ctx_free(ctx);
}

Test(htree_e2e, half_and_bfloat16_inputs_match_float)
{
	/* values that half and bfloat16 hold exactly (multiples of 1/8 in [-2, 2)): the
	 * 16-bit inputs must give bit-identical results to the float ones */
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = 2;
	cfg.top_k = 2;
	cfg.max_top_nodes = 4;
	int64_t sq[4] = {1, 20, 2, 4}, sk[4] = {1, 20, 1, 4};
	tinyc_tensor *f[3], *h[3], *bf[3];
	const int64_t *shapes[3] = {sq, sk, sk};
	for (int i = 0; i < 3; i++) {
		f[i] = make_f32(ctx, 4, shapes[i], NULL);
		h[i] = tinyc_tensor_alloc(ctx, TINYC_HALF, 4, shapes[i]);
		bf[i] = tinyc_tensor_alloc(ctx, TINYC_BFLOAT16, 4, shapes[i]);
		int64_t n = tinyc_tensor_numel(f[i]);
		for (int64_t j = 0; j < n; j++) {
			float x = (float)((j * 7 + i * 13) % 32 - 16) / 8.0f;
			((float *)f[i]->data)[j] = x;
			((uint16_t *)h[i]->data)[j] = tinyc_f32_to_f16(x);
			((uint16_t *)bf[i]->data)[j] = tinyc_f32_to_bf16(x);
		}
	}
	tinyc_tensor *of = NULL, *oh = NULL, *ob = NULL;
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, &cfg, f[0], f[1], f[2], &of, NULL), 0);
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, &cfg, h[0], h[1], h[2], &oh, NULL), 0);
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, &cfg, bf[0], h[1], f[2], &ob, NULL), 0);
	cr_assert(of->dtype == TINYC_FLOAT && oh->dtype == TINYC_FLOAT);
	size_t bytes = (size_t)tinyc_tensor_numel(of) * sizeof(float);
	cr_assert(memcmp(of->data, oh->data, bytes) == 0);
	cr_assert(memcmp(of->data, ob->data, bytes) == 0);
	tinyc_tensor_free(of);
	tinyc_tensor_free(oh);
	tinyc_tensor_free(ob);
	for (int i = 0; i < 3; i++) {
		tinyc_tensor_free(f[i]);
		tinyc_tensor_free(h[i]);
		tinyc_tensor_free(bf[i]);
	}
	tinyc_ctx_free(ctx);
}

/* Expect the forward to fail with a diagnostic of `kind` and no output. */
static void expect_error(const tinyc_htree_config *cfg, const tinyc_tensor *q,
			 const tinyc_tensor *k, const tinyc_tensor *v, const char *kind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_tensor *o = (tinyc_tensor *)1;
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, cfg, q, k, v, &o, NULL), -1);
	cr_assert_null(o);
	cr_assert_str_eq(first_kind(ctx), kind);
	tinyc_ctx_free(ctx);
}

Test(htree_e2e, invalid_inputs_are_diagnostics)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	int64_t sq[4] = {1, 8, 3, 4}, sk[4] = {1, 8, 2, 4}, sq4[4] = {1, 8, 4, 4};
	int64_t st[4] = {1, 9, 2, 4}, sodd[4] = {1, 8, 2, 3}, s3[3] = {8, 2, 4};
	tinyc_tensor *q3h = make_f32(ctx, 4, sq, NULL), *k = make_f32(ctx, 4, sk, NULL);
	tinyc_tensor *q = make_f32(ctx, 4, sq4, NULL), *kt = make_f32(ctx, 4, st, NULL);
	tinyc_tensor *kodd = make_f32(ctx, 4, sodd, NULL), *k3 = make_f32(ctx, 3, s3, NULL);
	tinyc_tensor *ki = tinyc_tensor_alloc(ctx, TINYC_INT, 4, sk);
	expect_error(&cfg, q3h, k, k, "HtreeShapeMismatch");	/* 3 heads over 2 KV heads */
	expect_error(&cfg, q, kt, k, "HtreeShapeMismatch");	/* T differs */
	expect_error(&cfg, q, k, kt, "HtreeShapeMismatch");
	expect_error(&cfg, q, kodd, kodd, "HtreeShapeMismatch");	/* K differs from q */
	expect_error(&cfg, q, k3, k3, "HtreeShapeMismatch");	/* rank 3 */
	expect_error(&cfg, q, ki, k, "HtreeUnsupportedDtype");
	cfg.compression_rate = 3;
	expect_error(&cfg, q, k, k, "HtreeInvalidConfig");
	cfg.compression_rate = 1;
	expect_error(&cfg, q, k, k, "HtreeInvalidConfig");
	tinyc_htree_config_default(&cfg);
	cfg.top_k = 6;
	expect_error(&cfg, q, k, k, "HtreeInvalidConfig");
	tinyc_htree_config_default(&cfg);
	int64_t bad = 8;
	cfg.query_positions = &bad;
	cfg.num_query_positions = 1;
	expect_error(&cfg, q, k, k, "HtreeInvalidConfig");
	/* a RoPE table with too few rows: T = 8 on one layer needs 8 */
	tinyc_htree_config_default(&cfg);
	int64_t tab[2] = {4, 2};
	tinyc_tensor *c = make_f32(ctx, 2, tab, NULL), *s = make_f32(ctx, 2, tab, NULL);
	cfg.rope_cos = c;
	cfg.rope_sin = s;
	expect_error(&cfg, q, k, k, "HtreeRopeTable");
	cfg.rope_sin = NULL;
	expect_error(&cfg, q, k, k, "HtreeRopeTable");
	expect_error(NULL, q, k, k, "HtreeInvalidArgument");
	tinyc_tensor *all[] = {q3h, k, q, kt, kodd, k3, ki, c, s};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		tinyc_tensor_free(all[i]);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------------ golden vectors */

/* Copy an int32 (or int64) index tensor into a new int64 array. */
static int64_t *to_i64(const tinyc_tensor *t)
{
	int64_t n = tinyc_tensor_numel(t);
	int64_t *a = malloc((size_t)(n ? n : 1) * sizeof *a);
	cr_assert(t->dtype == TINYC_INT || t->dtype == TINYC_LONG);
	for (int64_t i = 0; i < n; i++)
		a[i] = t->dtype == TINYC_INT ? ((const int32_t *)t->data)[i]
					     : ((const int64_t *)t->data)[i];
	return a;
}

/* Run one golden case, with the stored RoPE table and scale or the computed ones, and check
 * the output by the manifest's per-group rule and the stored selections exactly. */
static void golden_case(const char *name, int use_stored_table)
{
	cr_assert(access(TINYC_GOLDEN_DIR "/manifest.json", R_OK) == 0,
		  "htree golden vectors not found at %s: clone the shared/ folder beside the repo",
		  TINYC_GOLDEN_DIR);
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	char *cas = golden_case_text(name);
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = (int)golden_num(cas, "compression_rate");
	cfg.top_k = (int)golden_num(cas, "top_k_per_layer");
	cfg.max_top_nodes = (int64_t)golden_num(cas, "max_top_nodes");
	/* the stored-table run passes the manifest's scale; the other one uses the default
	 * (scale <= 0: float32(K^-1/2)), which must be the same number */
	if (use_stored_table)
		cfg.scale = (float)golden_num(cas, "scale_fp32");
	cfg.rope_base = (float)golden_num(cas, "rope_base");
	double atol = golden_num(cas, "atol");
	int64_t allowed = (int64_t)golden_num(cas, "max_groups_over_atol");
	int num_layers = (int)golden_num(cas, "num_layers");

	tinyc_tensor *q = golden_file(ctx, cas, "q", 1), *k = golden_file(ctx, cas, "k", 1);
	tinyc_tensor *v = golden_file(ctx, cas, "v", 1), *og = golden_file(ctx, cas, "o", 1);
	tinyc_tensor *rc = golden_file(ctx, cas, "rope_cos", 1);
	tinyc_tensor *rs = golden_file(ctx, cas, "rope_sin", 1);
	tinyc_tensor *qp = golden_file(ctx, cas, "query_positions", 0);
	tinyc_tensor *sp = golden_file(ctx, cas, "sel_positions", 0);
	tinyc_tensor *sn = golden_file(ctx, cas, "sel_nodes", 0);
	cr_assert(q->dtype == TINYC_FLOAT && og->dtype == TINYC_FLOAT);
	if (use_stored_table) {
		cfg.rope_cos = rc;
		cfg.rope_sin = rs;
	}
	int64_t *qpos = qp ? to_i64(qp) : NULL;
	if (qp) {
		cfg.query_positions = qpos;
		cfg.num_query_positions = (int)tinyc_tensor_numel(qp);
	}
	int64_t *spos = sp ? to_i64(sp) : NULL;
	tinyc_htree_trace tr = {.positions = spos, .num_positions = sp ? (int)tinyc_tensor_numel(sp) : 0};

	tinyc_tensor *o = NULL;
	int ret = tinyc_htree_forward_cpu(ctx, &cfg, q, k, v, &o, sp ? &tr : NULL);
	if (ret)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(ret, 0, "%s: forward failed", name);
	cr_assert_eq(o->rank, og->rank);
	for (int d = 0; d < o->rank; d++)
		cr_assert_eq(o->shape[d], og->shape[d], "%s: output dim %d is %lld, golden %lld",
			     name, d, (long long)o->shape[d], (long long)og->shape[d]);

	/* per (b, row, h_kv) group: all G*V values within atol */
	int64_t B = o->shape[0], rows = o->shape[1], H = o->shape[2], V = o->shape[3];
	int64_t Hkv = k->shape[2], G = H / Hkv;
	const float *a = o->data, *g = og->data;
	double max_err = 0;
	int64_t over = 0;
	for (int64_t b = 0; b < B; b++)
		for (int64_t i = 0; i < rows; i++)
			for (int64_t h = 0; h < Hkv; h++) {
				int64_t base = ((b * rows + i) * H + h * G) * V;
				double gmax = 0;
				for (int64_t e = 0; e < G * V; e++) {
					double d = fabs((double)a[base + e] - (double)g[base + e]);
					if (!(d <= gmax))	/* NaN counts as over */
						gmax = isnan(d) ? INFINITY : d;
				}
				if (gmax > max_err)
					max_err = gmax;
				if (gmax > atol) {
					over++;
					fprintf(stderr, "htree %s: group b=%lld row=%lld h_kv=%lld "
						"off by %.3g\n", name, (long long)b, (long long)i,
						(long long)h, gmax);
				}
			}

	/* selections: sel_nodes [B,S,H_kv,L-1,top_k] */
	int64_t sel_checked = 0, sel_bad = 0;
	if (sp) {
		cr_assert_not_null(sn);
		cr_assert_eq(tr.num_layers, num_layers);
		cr_assert_eq(sn->rank, 5);
		cr_assert(sn->shape[0] == B && sn->shape[1] == tr.num_positions &&
			  sn->shape[2] == Hkv && sn->shape[3] == num_layers - 1 &&
			  sn->shape[4] == cfg.top_k);
		int64_t *want = to_i64(sn);
		int64_t n = tinyc_tensor_numel(sn);
		for (int64_t j = 0; j < n; j++)
			if (tr.sel_nodes[j] != want[j])
				sel_bad++;
		sel_checked = n;
		free(want);
	}
	fprintf(stderr, "htree golden %-20s (%s RoPE table, scale): max |err| %.3g (atol %g), "
		"groups over atol %lld/%lld (allowed %lld), selection entries %lld/%lld equal\n",
		name, use_stored_table ? "stored" : "computed", max_err, atol, (long long)over,
		(long long)(B * rows * Hkv), (long long)allowed, (long long)(sel_checked - sel_bad),
		(long long)sel_checked);
	cr_expect_eq(sel_bad, 0, "%s: %lld selection entries differ", name, (long long)sel_bad);
	cr_expect_leq(over, allowed, "%s: %lld groups over atol (max err %g)", name,
		      (long long)over, max_err);

	tinyc_htree_trace_clear(&tr);
	tinyc_tensor *all[] = {q, k, v, og, rc, rs, qp, sp, sn, o};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i])
			tinyc_tensor_free(all[i]);
	free(qpos);
	free(spos);
	free(cas);
	tinyc_ctx_free(ctx);
}

Test(htree_golden, manifest_lists_the_four_cases)
{
	cr_assert(access(TINYC_GOLDEN_DIR "/manifest.json", R_OK) == 0,
		  "htree golden vectors not found at %s: clone the shared/ folder beside the repo",
		  TINYC_GOLDEN_DIR);
	char *text = golden_slurp(TINYC_GOLDEN_DIR "/manifest.json");
	int n = 0;
	for (const char *p = text; (p = strstr(p, "\"name\": \"")); p++)
		n++;
	cr_assert_eq(n, 4, "the manifest lists %d cases; this test runs 4", n);
	free(text);
}

Test(htree_golden, v1_dense_T256) { golden_case("v1_dense_T256", 1); }
Test(htree_golden, v2_multilevel_T640) { golden_case("v2_multilevel_T640", 1); }
Test(htree_golden, v3_partial_T700) { golden_case("v3_partial_T700", 1); }
Test(htree_golden, v4_gqa_B2_T520) { golden_case("v4_gqa_B2_T520", 1); }
Test(htree_golden, v1_dense_T256_computed_rope) { golden_case("v1_dense_T256", 0); }
Test(htree_golden, v2_multilevel_T640_computed_rope) { golden_case("v2_multilevel_T640", 0); }
Test(htree_golden, v3_partial_T700_computed_rope) { golden_case("v3_partial_T700", 0); }
Test(htree_golden, v4_gqa_B2_T520_computed_rope) { golden_case("v4_gqa_B2_T520", 0); }

Test(htree_golden, computed_rope_table_matches_stored)
{
	cr_assert(access(TINYC_GOLDEN_DIR "/manifest.json", R_OK) == 0,
		  "htree golden vectors not found at %s", TINYC_GOLDEN_DIR);
	const char *names[3][2] = {{"rope_K16_N256_cos.npy", "rope_K16_N256_sin.npy"},
				   {"rope_K16_N32_cos.npy", "rope_K16_N32_sin.npy"},
				   {"rope_K32_N32_cos.npy", "rope_K32_N32_sin.npy"}};
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	for (int i = 0; i < 3; i++) {
		char path[1024];
		tinyc_tensor *t[2];
		for (int j = 0; j < 2; j++) {
			snprintf(path, sizeof path, "%s/%s", TINYC_GOLDEN_DIR, names[i][j]);
			t[j] = tinyc_npy_read(ctx, path);
			cr_assert_not_null(t[j], "cannot read %s", path);
		}
		int64_t rows = t[0]->shape[0], half = t[0]->shape[1];
		float *c = malloc((size_t)(rows * half) * sizeof(float));
		float *s = malloc((size_t)(rows * half) * sizeof(float));
		tinyc_htree_rope_table(2 * half, rows, 10000.0f, c, s);
		double worst = 0;
		for (int64_t e = 0; e < rows * half; e++) {
			double dc = fabs(c[e] - ((float *)t[0]->data)[e]);
			double ds = fabs(s[e] - ((float *)t[1]->data)[e]);
			worst = fmax(worst, fmax(dc, ds));
		}
		fprintf(stderr, "htree rope table %s: max |computed - stored| %.3g\n", names[i][0],
			worst);
		cr_expect(worst <= 1e-6, "%s: computed table off by %g", names[i][0], worst);
		free(c);
		free(s);
		tinyc_tensor_free(t[0]);
		tinyc_tensor_free(t[1]);
	}
	tinyc_ctx_free(ctx);
}
