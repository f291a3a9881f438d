/* htree forward, CPU reference (see htree.h for the semantics).
 *
 * Structure: validate the inputs, convert them to float32, build the tree layer by layer
 * (tinyc_htree_pool), get the RoPE table, then process every (b, t, h_kv) query group on
 * its own (group_forward): top layer down to layer 0, candidates -> scores -> shared
 * top-K selection -> leaves merged into one online-softmax state per query head.
 * Every reduction runs in one fixed, sequential float32 order.
 */
#include "ir/htree.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fill c with the defaults of the seed (the Triton implementation's configuration). */
void tinyc_htree_config_default(tinyc_htree_config *c)
{
	memset(c, 0, sizeof *c);
	c->compression_rate = 16;
	c->top_k = 512;
	c->max_top_nodes = 8192;
	c->scale = 0.0f;
	c->rope_base = 10000.0f;
	c->key_drop_bits = 13;
}

/* Free the outputs stored in a trace. */
void tinyc_htree_trace_clear(tinyc_htree_trace *trace)
{
	if (!trace)
		return;
	free(trace->sel_nodes);
	free(trace->num_candidates);
	trace->sel_nodes = NULL;
	trace->num_candidates = NULL;
}

/* Layer sizes: N_0 = T, N_{l+1} = ceil(N_l / r) while N_l > max_top_nodes. */
int tinyc_htree_layer_sizes(int64_t T, int r, int64_t max_top_nodes, int64_t *sizes)
{
	if (T < 1 || r < 2 || max_top_nodes < 1)
		return -1;
	int L = 1;
	int64_t n = T;
	if (sizes)
		sizes[0] = n;
	while (n > max_top_nodes) {
		if (L == TINYC_HTREE_MAX_LAYERS)
			return -1;
		n = (n + r - 1) / r;
		if (sizes)
			sizes[L] = n;
		L++;
	}
	return L;
}

/* Valid-count mean pooling of one layer: sequential float32 sum, divided by the count. */
void tinyc_htree_pool(const float *x, int64_t outer, int64_t n, int64_t inner, int r, float *y)
{
	int64_t m = (n + r - 1) / r;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < m; i++) {
			int64_t first = i * r;
			int64_t end = first + r < n ? first + r : n;
			float count = (float)(end - first);
			float *dst = y + (o * m + i) * inner;
			for (int64_t e = 0; e < inner; e++) {
				float sum = 0.0f;
				for (int64_t j = first; j < end; j++)
					sum += x[(o * n + j) * inner + e];
				dst[e] = sum / count;
			}
		}
	}
}

/* t / r^level, by repeated division (floor composes), so r^level never overflows. */
static int64_t node_of(int64_t t, int r, int level)
{
	for (int l = 0; l < level; l++)
		t /= r;
	return t;
}

/* n_cand = (P-1)*r + c* + 1 with c* = (t / r^level) mod r. */
int64_t tinyc_htree_num_candidates(int64_t num_parents, int r, int64_t t, int level)
{
	int64_t cstar = node_of(t, r, level) % r;
	return (num_parents - 1) * r + cstar + 1;
}

/* Expand ascending parents into their children, keeping those <= the node containing t. */
int64_t tinyc_htree_expand(const int64_t *parents, int64_t num_parents, int r, int64_t t,
			   int level, int64_t *cand)
{
	int64_t last = node_of(t, r, level);
	int64_t n = 0;
	for (int64_t i = 0; i < num_parents; i++)
		for (int c = 0; c < r; c++) {
			int64_t node = parents[i] * r + c;
			if (node > last)
				break;
			cand[n++] = node;
		}
	return n;
}

/* Importance key: float32 bits with the low drop_bits cleared. */
uint32_t tinyc_htree_key(float imp, int drop_bits)
{
	uint32_t bits;
	memcpy(&bits, &imp, sizeof bits);
	uint32_t mask = drop_bits >= 32 ? 0u : ~((UINT32_C(1) << drop_bits) - 1u);
	return bits & mask;
}

/* One entry of the top-K sort. */
typedef struct topk_item {
	uint32_t key;		/* truncated importance bits */
	int64_t pos;		/* candidate position */
} topk_item;

/* qsort order of the top-K: key descending, then position ascending (a total order). */
static int topk_cmp(const void *a, const void *b)
{
	const topk_item *x = a, *y = b;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Stable top-K on caller's scratch (n items). */
static int64_t topk_into(const float *imp, int64_t n, int64_t k, int drop_bits, int64_t *pos,
			 topk_item *items)
{
	for (int64_t p = 0; p < n; p++) {
		items[p].key = tinyc_htree_key(imp[p], drop_bits);
		items[p].pos = p;
	}
	qsort(items, (size_t)n, sizeof *items, topk_cmp);
	int64_t m = k < n ? k : n;
	for (int64_t i = 0; i < m; i++)
		pos[i] = items[i].pos;
	return m;
}

/* Stable top-K with its own scratch. */
int64_t tinyc_htree_topk(tinyc_ctx *ctx, const float *imp, int64_t n, int64_t k, int drop_bits,
			 int64_t *pos)
{
	if (n <= 0 || k <= 0)
		return 0;
	topk_item *items = tinyc_malloc(ctx, (size_t)n * sizeof *items);
	if (!items)
		return -1;
	int64_t m = topk_into(imp, n, k, drop_bits, pos, items);
	free(items);
	return m;
}

/* The empty softmax state. */
void tinyc_htree_smax_init(tinyc_htree_smax *st, int64_t V)
{
	st->max = -INFINITY;
	st->sum = 0.0f;
	for (int64_t e = 0; e < V; e++)
		st->acc[e] = 0.0f;
}

/* Online softmax, one batch: m' = max(m, max s); rescale the old state by exp(m - m'),
 * add exp(s_j - m') and exp(s_j - m') v_j. */
void tinyc_htree_smax_add(tinyc_htree_smax *st, const float *s, const float *vs, int64_t n,
			  int64_t V)
{
	float m = st->max;
	for (int64_t j = 0; j < n; j++)
		if (s[j] > m)
			m = s[j];
	if (m == -INFINITY)	/* nothing with a non-zero weight */
		return;
	float rescale = st->max == -INFINITY ? 0.0f : expf(st->max - m);
	st->sum *= rescale;
	for (int64_t e = 0; e < V; e++)
		st->acc[e] *= rescale;
	for (int64_t j = 0; j < n; j++) {
		float w = expf(s[j] - m);
		st->sum += w;
		for (int64_t e = 0; e < V; e++)
			st->acc[e] += w * vs[j * V + e];
	}
	st->max = m;
}

/* Merge two partial states: both are rescaled to the common max and added. */
void tinyc_htree_smax_merge(tinyc_htree_smax *a, const tinyc_htree_smax *b, int64_t V)
{
	if (b->max == -INFINITY)
		return;
	float m = a->max > b->max ? a->max : b->max;
	float ra = a->max == -INFINITY ? 0.0f : expf(a->max - m);
	float rb = expf(b->max - m);
	a->sum = a->sum * ra + b->sum * rb;
	for (int64_t e = 0; e < V; e++)
		a->acc[e] = a->acc[e] * ra + b->acc[e] * rb;
	a->max = m;
}

/* out = acc / max(sum, eps). */
void tinyc_htree_smax_finish(const tinyc_htree_smax *st, int64_t V, float *out)
{
	float denom = st->sum > TINYC_HTREE_SUM_EPS ? st->sum : TINYC_HTREE_SUM_EPS;
	for (int64_t e = 0; e < V; e++)
		out[e] = st->acc[e] / denom;
}

/* RoPE table in float32: inv_freq = 1 / base^(2i/K), angle = float32(p) * inv_freq. */
void tinyc_htree_rope_table(int64_t K, int64_t rows, float base, float *cos_tab, float *sin_tab)
{
	int64_t half = K / 2;
	for (int64_t i = 0; i < half; i++) {
		float expo = (float)(2 * i) / (float)K;
		float inv_freq = 1.0f / powf(base, expo);
		for (int64_t p = 0; p < rows; p++) {
			float angle = (float)p * inv_freq;
			cos_tab[p * half + i] = cosf(angle);
			sin_tab[p * half + i] = sinf(angle);
		}
	}
}

/* Half-split rotation of one vector by one table row. */
void tinyc_htree_rope(const float *x, int64_t K, const float *cos_row, const float *sin_row,
		      float *y)
{
	int64_t half = K / 2;
	for (int64_t i = 0; i < half; i++) {
		float x1 = x[i], x2 = x[i + half];
		float c = cos_row[i], s = sin_row[i];
		y[i] = x1 * c - x2 * s;
		y[i + half] = x1 * s + x2 * c;
	}
}

/* Everything one query group needs: the tree, the table, the parameters and scratch. */
typedef struct htree_run {
	int64_t B, T, H, Hkv, G, K, V;	/* dims; G = H / Hkv */
	int r;				/* compression rate */
	int64_t top_k;			/* parents kept per layer */
	int drop_bits;			/* key truncation */
	float scale;			/* score scale */
	int L;				/* layers */
	int64_t N[TINYC_HTREE_MAX_LAYERS];	/* layer sizes */
	float *lk[TINYC_HTREE_MAX_LAYERS];	/* [B,N_l,Hkv,K] keys of layer l (owned) */
	float *lv[TINYC_HTREE_MAX_LAYERS];	/* [B,N_l,Hkv,V] values of layer l (owned) */
	float *q;			/* [B,T,H,K] queries in float32 (owned) */
	const float *cos_tab;		/* [R, K/2] */
	const float *sin_tab;		/* [R, K/2] */
	float *own_tab;			/* computed table storage (cos then sin), or NULL */
	int64_t R;			/* most candidates any layer can have */
	/* scratch, sized for R candidates */
	int64_t *cand;			/* [R] candidate nodes */
	int64_t *parents;		/* [R] parents of the next layer */
	int64_t *sel;			/* [R] top-K positions */
	unsigned char *selected;	/* [R] 1 where the candidate was selected */
	topk_item *items;		/* [R] top-K sort */
	float *scores;			/* [G, R] */
	float *imp;			/* [R] group importance */
	float *qrot;			/* [G, K] rotated, scaled queries */
	float *krot;			/* [K] rotated key */
	float *leaf_s;			/* [R] scores of the leaves, one head */
	float *leaf_v;			/* [R, V] values of the leaves */
	int64_t *leaf_p;		/* [R] candidate positions of the leaves */
	float *accs;			/* [G, V] accumulators of the softmax states */
	tinyc_htree_smax *st;		/* [G] softmax states */
} htree_run;

/* One (b, t, h_kv) group: writes o of its G heads to out[g*V..] (heads contiguous) and,
 * when sel is not NULL, the selected layer-l nodes to sel[(l-1)*top_k..] and n_cand of
 * layer l to ncand[l]. */
static void group_forward(htree_run *w, int64_t b, int64_t t, int64_t hkv, float *out,
			  int64_t *sel, int64_t *ncand)
{
	int64_t G = w->G, K = w->K, V = w->V, half = K / 2;
	for (int64_t g = 0; g < G; g++) {
		w->st[g].acc = w->accs + g * V;
		tinyc_htree_smax_init(&w->st[g], V);
	}
	/* Top layer: nodes 0 .. t / r^(L-1). */
	int64_t n = node_of(t, w->r, w->L - 1) + 1;
	for (int64_t p = 0; p < n; p++)
		w->cand[p] = p;
	for (int l = w->L - 1; l >= 0; l--) {
		if (l < w->L - 1)	/* n is the number of parents here */
			n = tinyc_htree_expand(w->parents, n, w->r, t, l, w->cand);
		if (ncand)
			ncand[l] = n;
		const float *kl = w->lk[l], *vl = w->lv[l];
		int64_t Nl = w->N[l];
		/* Scores: the query at row n-1, candidate p at row p. */
		const float *qc = w->cos_tab + (n - 1) * half, *qs = w->sin_tab + (n - 1) * half;
		for (int64_t g = 0; g < G; g++) {
			const float *qv = w->q + ((b * w->T + t) * w->H + hkv * G + g) * K;
			float *qr = w->qrot + g * K;
			tinyc_htree_rope(qv, K, qc, qs, qr);
			for (int64_t d = 0; d < K; d++)
				qr[d] *= w->scale;
		}
		for (int64_t p = 0; p < n; p++) {
			const float *kv = kl + ((b * Nl + w->cand[p]) * w->Hkv + hkv) * K;
			tinyc_htree_rope(kv, K, w->cos_tab + p * half, w->sin_tab + p * half, w->krot);
			for (int64_t g = 0; g < G; g++) {
				const float *qr = w->qrot + g * K;
				float dot = 0.0f;
				for (int64_t d = 0; d < K; d++)
					dot += qr[d] * w->krot[d];
				w->scores[g * w->R + p] = dot;
			}
		}
		if (n > 0)
			memset(w->selected, 0, (size_t)n);
		int64_t nsel = 0;
		if (l > 0) {
			/* Shared importance: sum over heads of the softmax probabilities. */
			for (int64_t p = 0; p < n; p++)
				w->imp[p] = 0.0f;
			for (int64_t g = 0; g < G; g++) {
				const float *s = w->scores + g * w->R;
				float mx = -INFINITY;
				for (int64_t p = 0; p < n; p++)
					if (s[p] > mx)
						mx = s[p];
				float sum = 0.0f;
				for (int64_t p = 0; p < n; p++)
					sum += expf(s[p] - mx);
				float lse = mx + logf(sum);
				for (int64_t p = 0; p < n; p++) {
					float pr = expf(s[p] - lse);
					if (pr < FLT_MIN)
						pr = 0.0f;
					w->imp[p] += pr;
				}
			}
			w->imp[n - 1] = TINYC_HTREE_IMP_FORCED;
			int64_t m = topk_into(w->imp, n, w->top_k, w->drop_bits, w->sel, w->items);
			for (int64_t i = 0; i < m; i++)
				w->selected[w->sel[i]] = 1;
			/* Parents of layer l-1: the selected nodes, ascending (cand is ascending). */
			for (int64_t p = 0; p < n; p++)
				if (w->selected[p])
					w->parents[nsel++] = w->cand[p];
			if (sel) {
				int64_t *row = sel + (int64_t)(l - 1) * w->top_k;
				for (int64_t i = 0; i < w->top_k; i++)
					row[i] = i < nsel ? w->parents[i] : -1;
			}
		}
		/* Leaves: the candidates not selected; merged as one batch per layer. */
		int64_t nleaf = 0;
		for (int64_t p = 0; p < n; p++) {
			if (w->selected[p])
				continue;
			const float *vv = vl + ((b * Nl + w->cand[p]) * w->Hkv + hkv) * V;
			memcpy(w->leaf_v + nleaf * V, vv, (size_t)V * sizeof(float));
			w->leaf_p[nleaf++] = p;
		}
		for (int64_t g = 0; g < G; g++) {
			for (int64_t j = 0; j < nleaf; j++)
				w->leaf_s[j] = w->scores[g * w->R + w->leaf_p[j]];
			tinyc_htree_smax_add(&w->st[g], w->leaf_s, w->leaf_v, nleaf, V);
		}
		if (l > 0)
			n = nsel;	/* the parents of the next layer */
	}
	for (int64_t g = 0; g < G; g++)
		tinyc_htree_smax_finish(&w->st[g], V, out + g * V);
}

/* Free everything a run owns. */
static void run_free(htree_run *w)
{
	for (int l = 0; l < TINYC_HTREE_MAX_LAYERS; l++) {
		free(w->lk[l]);
		free(w->lv[l]);
	}
	free(w->q);
	free(w->own_tab);
	free(w->cand);
	free(w->parents);
	free(w->sel);
	free(w->selected);
	free(w->items);
	free(w->scores);
	free(w->imp);
	free(w->qrot);
	free(w->krot);
	free(w->leaf_s);
	free(w->leaf_v);
	free(w->leaf_p);
	free(w->accs);
	free(w->st);
}

/* Whether x is a power of two (x >= 1). */
static int is_pow2(int64_t x)
{
	return x >= 1 && (x & (x - 1)) == 0;
}

/* Whether htree takes the dtype (the forward converts it to float32; see htree.h). */
int tinyc_htree_dtype_ok(tinyc_dtype dt)
{
	return dt == TINYC_FLOAT || dt == TINYC_HALF || dt == TINYC_BFLOAT16;
}

/* A new float32 copy of a float/half/bfloat16 tensor's elements. */
static float *to_f32(tinyc_ctx *ctx, const tinyc_tensor *t)
{
	int64_t numel = tinyc_tensor_numel(t);
	float *f = tinyc_malloc(ctx, (size_t)numel * sizeof(float));
	if (!f)
		return NULL;
	if (t->dtype == TINYC_FLOAT) {
		memcpy(f, t->data, (size_t)numel * sizeof(float));
	} else {
		const uint16_t *h = t->data;
		for (int64_t i = 0; i < numel; i++)
			f[i] = t->dtype == TINYC_HALF ? tinyc_f16_to_f32(h[i])
						      : tinyc_bf16_to_f32(h[i]);
	}
	return f;
}

/* Check the configuration (see htree.h). */
int tinyc_htree_config_check(tinyc_ctx *ctx, const tinyc_htree_config *cfg)
{
	if (cfg->compression_rate < 2 || !is_pow2(cfg->compression_rate))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "compression_rate must be a power of two >= 2, got %d",
				   cfg->compression_rate);
	if (!is_pow2(cfg->top_k))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "top_k must be a power of two >= 1, got %d", cfg->top_k);
	if (cfg->max_top_nodes < 1)
		return tinyc_error(ctx, "HtreeInvalidConfig", "max_top_nodes must be >= 1, got %lld",
				   (long long)cfg->max_top_nodes);
	if (!(cfg->rope_base > 0.0f) || isinf(cfg->rope_base))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "rope_base must be positive and finite, got %g",
				   (double)cfg->rope_base);
	if (isnan(cfg->scale) || isinf(cfg->scale))
		return tinyc_error(ctx, "HtreeInvalidConfig", "scale must be finite");
	if (cfg->key_drop_bits < 0 || cfg->key_drop_bits > 23)
		return tinyc_error(ctx, "HtreeInvalidConfig", "key_drop_bits must be in 0..23, got %d",
				   cfg->key_drop_bits);
	if (cfg->num_query_positions < 0 ||
	    (cfg->num_query_positions > 0 && !cfg->query_positions))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "num_query_positions is %d but no positions are given",
				   cfg->num_query_positions);
	if ((cfg->rope_cos == NULL) != (cfg->rope_sin == NULL))
		return tinyc_error(ctx, "HtreeRopeTable", "give both rope_cos and rope_sin, or neither");
	return 0;
}

/* Check q, k, v given as (dtype, rank, shape) against each other (see htree.h). */
int tinyc_htree_check_shapes(tinyc_ctx *ctx, const tinyc_dtype dt[3], const int rank[3],
			const int64_t *const shape[3])
{
	static const char *const names[3] = {"q", "k", "v"};
	for (int i = 0; i < 3; i++) {
		if (!tinyc_htree_dtype_ok(dt[i]))
			return tinyc_error(ctx, "HtreeUnsupportedDtype",
					   "%s is %s; htree takes float, half or bfloat16", names[i],
					   tinyc_dtype_name(dt[i]));
		if (rank[i] != 4)
			return tinyc_error(ctx, "HtreeShapeMismatch",
					   "%s must have rank 4 ([B,T,heads,dim]), has rank %d", names[i],
					   rank[i]);
		for (int d = 0; d < 4; d++)
			if (shape[i][d] < 1)
				return tinyc_error(ctx, "HtreeShapeMismatch",
						   "%s has an empty dimension %d", names[i], d);
	}
	const int64_t *q = shape[0], *k = shape[1], *v = shape[2];
	if (k[0] != q[0] || v[0] != q[0])
		return tinyc_error(ctx, "HtreeShapeMismatch", "batch sizes differ: q %lld, k %lld, v %lld",
				   (long long)q[0], (long long)k[0], (long long)v[0]);
	if (k[1] != q[1] || v[1] != q[1])
		return tinyc_error(ctx, "HtreeShapeMismatch",
				   "sequence lengths differ: q %lld, k %lld, v %lld",
				   (long long)q[1], (long long)k[1], (long long)v[1]);
	if (v[2] != k[2])
		return tinyc_error(ctx, "HtreeShapeMismatch", "k has %lld heads but v has %lld",
				   (long long)k[2], (long long)v[2]);
	if (q[2] % k[2] != 0)
		return tinyc_error(ctx, "HtreeShapeMismatch",
				   "query heads (%lld) are not a multiple of KV heads (%lld)",
				   (long long)q[2], (long long)k[2]);
	if (k[3] != q[3])
		return tinyc_error(ctx, "HtreeShapeMismatch", "key dim of q (%lld) and k (%lld) differ",
				   (long long)q[3], (long long)k[3]);
	if (q[3] % 2 != 0)
		return tinyc_error(ctx, "HtreeShapeMismatch",
				   "key dim %lld is odd; half-split RoPE needs an even dim",
				   (long long)q[3]);
	return 0;
}

/* Check q, k, v against each other; fills the dims of w.  0 or -1 with a diagnostic. */
static int check_shapes(tinyc_ctx *ctx, const tinyc_tensor *q, const tinyc_tensor *k,
			const tinyc_tensor *v, htree_run *w)
{
	const tinyc_dtype dt[3] = {q->dtype, k->dtype, v->dtype};
	const int rank[3] = {q->rank, k->rank, v->rank};
	const int64_t *const shape[3] = {q->shape, k->shape, v->shape};
	if (tinyc_htree_check_shapes(ctx, dt, rank, shape) < 0)
		return -1;
	w->B = q->shape[0];
	w->T = q->shape[1];
	w->H = q->shape[2];
	w->Hkv = k->shape[2];
	w->G = w->H / w->Hkv;
	w->K = q->shape[3];
	w->V = v->shape[3];
	return 0;
}

/* Check that every position in pos[0..n) lies in [0, T) (see htree.h). */
int tinyc_htree_check_positions(tinyc_ctx *ctx, const int64_t *pos, int n, int64_t T,
				const char *what)
{
	for (int i = 0; i < n; i++)
		if (pos[i] < 0 || pos[i] >= T)
			return tinyc_error(ctx, "HtreeInvalidConfig",
					   "%s position %lld is outside [0, %lld)", what,
					   (long long)pos[i], (long long)T);
	return 0;
}

/* Build the tree, the table and the scratch of a run.  0 or -1 with a diagnostic. */
static int run_setup(tinyc_ctx *ctx, const tinyc_htree_config *cfg, const tinyc_tensor *q,
		     const tinyc_tensor *k, const tinyc_tensor *v, htree_run *w)
{
	w->r = cfg->compression_rate;
	w->top_k = cfg->top_k;
	w->drop_bits = cfg->key_drop_bits;
	w->scale = cfg->scale > 0.0f ? cfg->scale : (float)(1.0 / sqrt((double)w->K));
	w->L = tinyc_htree_layer_sizes(w->T, w->r, cfg->max_top_nodes, w->N);
	if (w->L < 0)
		return tinyc_error(ctx, "HtreeInvalidConfig", "the tree would have more than %d layers",
				   TINYC_HTREE_MAX_LAYERS);
	/* The most candidates a layer can hold: all of the top layer; below, the children
	 * of at most min(top_k, N_{l+1}) parents, and never more than N_l. */
	w->R = w->N[w->L - 1];
	for (int l = 0; l < w->L - 1; l++) {
		int64_t parents = w->top_k < w->N[l + 1] ? w->top_k : w->N[l + 1];
		int64_t c = parents * w->r < w->N[l] ? parents * w->r : w->N[l];
		if (c > w->R)
			w->R = c;
	}
	if (!(w->q = to_f32(ctx, q)) || !(w->lk[0] = to_f32(ctx, k)) || !(w->lv[0] = to_f32(ctx, v)))
		return -1;
	for (int l = 1; l < w->L; l++) {
		w->lk[l] = tinyc_malloc(ctx, (size_t)(w->B * w->N[l] * w->Hkv * w->K) * sizeof(float));
		w->lv[l] = tinyc_malloc(ctx, (size_t)(w->B * w->N[l] * w->Hkv * w->V) * sizeof(float));
		if (!w->lk[l] || !w->lv[l])
			return -1;
		tinyc_htree_pool(w->lk[l - 1], w->B, w->N[l - 1], w->Hkv * w->K, w->r, w->lk[l]);
		tinyc_htree_pool(w->lv[l - 1], w->B, w->N[l - 1], w->Hkv * w->V, w->r, w->lv[l]);
	}
	int64_t half = w->K / 2;
	if (cfg->rope_cos) {
		const tinyc_tensor *c = cfg->rope_cos, *s = cfg->rope_sin;
		if (c->dtype != TINYC_FLOAT || s->dtype != TINYC_FLOAT || c->rank != 2 ||
		    s->rank != 2 || c->shape[0] != s->shape[0] || c->shape[1] != s->shape[1])
			return tinyc_error(ctx, "HtreeRopeTable",
					   "rope_cos and rope_sin must be float tables of one shape "
					   "[rows, K/2]");
		if (c->shape[1] != half || c->shape[0] < w->R)
			return tinyc_error(ctx, "HtreeRopeTable",
					   "the RoPE table is [%lld, %lld]; this run needs at least "
					   "[%lld, %lld]",
					   (long long)c->shape[0], (long long)c->shape[1],
					   (long long)w->R, (long long)half);
		w->cos_tab = c->data;
		w->sin_tab = s->data;
	} else {
		w->own_tab = tinyc_malloc(ctx, (size_t)(2 * w->R * half) * sizeof(float));
		if (!w->own_tab)
			return -1;
		tinyc_htree_rope_table(w->K, w->R, cfg->rope_base, w->own_tab,
				       w->own_tab + w->R * half);
		w->cos_tab = w->own_tab;
		w->sin_tab = w->own_tab + w->R * half;
	}
	size_t R = (size_t)w->R, G = (size_t)w->G;
	w->cand = tinyc_malloc(ctx, R * sizeof(int64_t));
	w->parents = tinyc_malloc(ctx, R * sizeof(int64_t));
	w->sel = tinyc_malloc(ctx, R * sizeof(int64_t));
	w->selected = tinyc_malloc(ctx, R);
	w->items = tinyc_malloc(ctx, R * sizeof(topk_item));
	w->scores = tinyc_malloc(ctx, G * R * sizeof(float));
	w->imp = tinyc_malloc(ctx, R * sizeof(float));
	w->qrot = tinyc_malloc(ctx, G * (size_t)w->K * sizeof(float));
	w->krot = tinyc_malloc(ctx, (size_t)w->K * sizeof(float));
	w->leaf_s = tinyc_malloc(ctx, R * sizeof(float));
	w->leaf_v = tinyc_malloc(ctx, R * (size_t)w->V * sizeof(float));
	w->leaf_p = tinyc_malloc(ctx, R * sizeof(int64_t));
	w->accs = tinyc_malloc(ctx, G * (size_t)w->V * sizeof(float));
	w->st = tinyc_malloc(ctx, G * sizeof(tinyc_htree_smax));
	if (!w->cand || !w->parents || !w->sel || !w->selected || !w->items || !w->scores ||
	    !w->imp || !w->qrot || !w->krot || !w->leaf_s || !w->leaf_v || !w->leaf_p ||
	    !w->accs || !w->st)
		return -1;
	return 0;
}

/* Fill the trace: the selections at every requested position.  0 or -1. */
static int run_trace(tinyc_ctx *ctx, htree_run *w, tinyc_htree_trace *tr)
{
	int64_t P = tr->num_positions, L = w->L;
	int64_t sel_row = (L - 1) * w->top_k;	/* per (b, i, h_kv) */
	tr->num_layers = w->L;
	for (int l = 0; l < TINYC_HTREE_MAX_LAYERS; l++)
		tr->layer_sizes[l] = l < w->L ? w->N[l] : 0;
	tr->top_k = (int)w->top_k;
	size_t groups = (size_t)(w->B * P * w->Hkv);
	tr->sel_nodes = tinyc_malloc(ctx, groups * (size_t)sel_row * sizeof(int64_t));
	tr->num_candidates = tinyc_malloc(ctx, groups * (size_t)L * sizeof(int64_t));
	float *scratch = tinyc_malloc(ctx, (size_t)(w->G * w->V) * sizeof(float));
	if (!tr->sel_nodes || !tr->num_candidates || !scratch) {
		free(scratch);
		tinyc_htree_trace_clear(tr);
		return -1;
	}
	for (int64_t b = 0; b < w->B; b++)
		for (int64_t i = 0; i < P; i++)
			for (int64_t h = 0; h < w->Hkv; h++) {
				int64_t gi = (b * P + i) * w->Hkv + h;
				group_forward(w, b, tr->positions[i], h, scratch,
					      tr->sel_nodes + gi * sel_row,
					      tr->num_candidates + gi * L);
			}
	free(scratch);
	return 0;
}

/* The forward: validate, build, then every (b, t, h_kv) group. */
int tinyc_htree_forward_cpu(tinyc_ctx *ctx, const tinyc_htree_config *cfg,
			    const tinyc_tensor *q, const tinyc_tensor *k, const tinyc_tensor *v,
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
	htree_run w;
	memset(&w, 0, sizeof w);
	if (tinyc_htree_config_check(ctx, cfg) < 0 || check_shapes(ctx, q, k, v, &w) < 0)
		return -1;
	int nq = cfg->num_query_positions;
	if (tinyc_htree_check_positions(ctx, cfg->query_positions, nq, w.T, "query") < 0)
		return -1;
	if (trace) {
		if (trace->num_positions < 0 || (trace->num_positions > 0 && !trace->positions))
			return tinyc_error(ctx, "HtreeInvalidArgument",
					   "trace asks for %d positions but gives none",
					   trace->num_positions);
		if (tinyc_htree_check_positions(ctx, trace->positions, trace->num_positions, w.T, "trace") < 0)
			return -1;
	}
	if (run_setup(ctx, cfg, q, k, v, &w) < 0) {
		run_free(&w);
		return -1;
	}
	int64_t rows = nq > 0 ? nq : w.T;
	int64_t shape[4] = {w.B, rows, w.H, w.V};
	tinyc_tensor *out = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 4, shape);
	if (!out) {
		run_free(&w);
		return -1;
	}
	float *od = out->data;
	for (int64_t b = 0; b < w.B; b++)
		for (int64_t i = 0; i < rows; i++) {
			int64_t t = nq > 0 ? cfg->query_positions[i] : i;
			for (int64_t h = 0; h < w.Hkv; h++)
				group_forward(&w, b, t, h,
					      od + ((b * rows + i) * w.H + h * w.G) * w.V, NULL, NULL);
		}
	if (trace && run_trace(ctx, &w, trace) < 0) {
		tinyc_tensor_free(out);
		run_free(&w);
		return -1;
	}
	run_free(&w);
	*o = out;
	return 0;
}
