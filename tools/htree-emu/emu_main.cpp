// Driver: run the generated htree kernels (HTREE_CU) under the fiber emulator (cuda_emu.h)
// and compare with the CPU reference (tinyc_htree_forward_cpu): outputs, selections and
// candidate counts of every query group.  See run.sh.
//   emu GOLDEN_DIR CASE r top_k max_top_nodes
//   emu random B T H Hkv K V r top_k max_top_nodes NPOS [float|half|bfloat16 [unaligned]]
// unaligned: k and v 4 bytes past 16-byte alignment (the leaves' staging without 16-byte
// copies).
// The kernels' thread count and configuration are those HTREE_CU was generated for.
#include "cuda_emu.h"
#include HTREE_CU

extern "C" {
#include "ir/ctx.h"
#include "ir/htree.h"
#include "ir/tensor.h"
}

emu_dim3 emu_bid, emu_bdim, emu_gdim;
emu_fiber *emu_cur;
emu_fiber *emu_fibers;
int emu_sync_or;
ucontext_t emu_sched;
static int emu_nt;
__attribute__((aligned(16))) unsigned char ht_smem[1 << 20];
emu_mma_frag emu_mma_post[1024];
static const ht_params *emu_P;
static unsigned long long emu_round;

void emu_wait(int kind)
{
	emu_cur->waiting = kind;
	swapcontext(&emu_cur->ctx, &emu_sched);
}

static void fiber_main(int i)
{
	htree_forward(*emu_P);
	emu_fibers[i].waiting = 3;
}

static void run_block(const ht_params *P)
{
	emu_P = P;
	memset(ht_smem, 0xCD, sizeof ht_smem);
	for (int i = 0; i < emu_nt; i++) {
		emu_fiber *f = &emu_fibers[i];
		getcontext(&f->ctx);
		f->ctx.uc_stack.ss_sp = f->stack;
		f->ctx.uc_stack.ss_size = 256 * 1024;
		f->ctx.uc_link = &emu_sched;
		makecontext(&f->ctx, (void (*)())fiber_main, 1, i);
		f->tid = {(unsigned)i, 0, 0};
		f->waiting = 0;
	}
	std::vector<int> order(emu_nt);
	for (;;) {
		emu_round++;
		for (int i = 0; i < emu_nt; i++)
			order[i] = i;
		if (emu_round % 3 == 1)
			std::reverse(order.begin(), order.end());
		else if (emu_round % 3 == 2)
			for (int i = emu_nt - 1; i > 0; i--)
				std::swap(order[i], order[(emu_round * 2654435761u + i * 40503u) % (i + 1)]);
		for (int i : order) {
			if (emu_fibers[i].waiting != 0)
				continue;
			emu_cur = &emu_fibers[i];
			swapcontext(&emu_sched, &emu_fibers[i].ctx);
		}
		int done = 0, blk = 0;
		for (int i = 0; i < emu_nt; i++) {
			done += emu_fibers[i].waiting == 3;
			blk += emu_fibers[i].waiting == 1;
		}
		if (done == emu_nt)
			return;
		int released = 0;
		for (int w = 0; w < emu_nt / 32; w++) {
			int n2 = 0;
			for (int l = 0; l < 32; l++)
				n2 += emu_fibers[w * 32 + l].waiting == 2;
			if (n2 == 32) {
				for (int l = 0; l < 32; l++)
					emu_fibers[w * 32 + l].waiting = 0;
				released = 1;
			} else if (n2) {
				fprintf(stderr, "emu: warp %d: %d lanes in a warp primitive, others not\n", w, n2);
			}
		}
		if (released)
			continue;
		if (blk == emu_nt) {
			for (int i = 0; i < emu_nt; i++)
				emu_fibers[i].waiting = 0;
			continue;
		}
		fprintf(stderr, "emu: deadlock (done %d, block barrier %d of %d)\n", done, blk, emu_nt);
		exit(2);
	}
}

// the pool kernels have no barriers: run them as plain loops
static emu_fiber pool_fiber;
template <typename F> static void run_flat(F f, long long total)
{
	emu_cur = &pool_fiber;
	emu_bdim = {256, 1, 1};
	long long blocks = (total + 255) / 256;
	emu_gdim = {(unsigned)blocks, 1, 1};
	for (long long b = 0; b < blocks; b++)
		for (int t = 0; t < 256; t++) {
			emu_bid = {(unsigned)b, 0, 0};
			pool_fiber.tid = {(unsigned)t, 0, 0};
			f();
		}
}

static float *to_f32(const tinyc_tensor *t)
{
	long long n = tinyc_tensor_numel(t);
	float *f = (float *)malloc(n * 4);
	for (long long i = 0; i < n; i++)
		f[i] = (float)tinyc_tensor_get(t, i);
	return f;
}

static void fill_normal(tinyc_tensor *t, unsigned long long s)
{
	long long n = tinyc_tensor_numel(t);
	for (long long i = 0; i < n; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		double u1 = ((s >> 11) + 1) * (1.0 / 9007199254740993.0);
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		double u2 = (s >> 11) * (1.0 / 9007199254740992.0);
		tinyc_tensor_set(t, i, sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
	}
}

int main(int argc, char **argv)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_tensor *q, *k, *v;
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	int npos = 0, unaligned = 0;
	if (!strcmp(argv[1], "random")) {
		unaligned = argc > 13 && !strcmp(argv[13], "unaligned");
		int64_t B = atoll(argv[2]), T = atoll(argv[3]), H = atoll(argv[4]), Hkv = atoll(argv[5]);
		int64_t K = atoll(argv[6]), V = atoll(argv[7]);
		cfg.compression_rate = atoi(argv[8]);
		cfg.top_k = atoi(argv[9]);
		cfg.max_top_nodes = atoll(argv[10]);
		npos = atoi(argv[11]);
		int64_t sq[4] = {B, T, H, K}, sk[4] = {B, T, Hkv, K}, sv[4] = {B, T, Hkv, V};
		tinyc_dtype dt = argc > 12 && argv[12][0] == 'h' ? TINYC_HALF : argc > 12 && argv[12][0] == 'b' ? TINYC_BFLOAT16 : TINYC_FLOAT;
		q = tinyc_tensor_alloc(ctx, dt, 4, sq);
		k = tinyc_tensor_alloc(ctx, dt, 4, sk);
		v = tinyc_tensor_alloc(ctx, dt, 4, sv);
		fill_normal(q, 11);
		fill_normal(k, 22);
		fill_normal(v, 33);
	} else {
		char path[512];
		snprintf(path, sizeof path, "%s/%s_q.npy", argv[1], argv[2]);
		q = tinyc_npy_read(ctx, path);
		snprintf(path, sizeof path, "%s/%s_k.npy", argv[1], argv[2]);
		k = tinyc_npy_read(ctx, path);
		snprintf(path, sizeof path, "%s/%s_v.npy", argv[1], argv[2]);
		v = tinyc_npy_read(ctx, path);
		cfg.compression_rate = atoi(argv[3]);
		cfg.top_k = atoi(argv[4]);
		cfg.max_top_nodes = atoll(argv[5]);
	}
	int64_t B = q->shape[0], T = q->shape[1], H = q->shape[2], Hkv = k->shape[2], K = q->shape[3], V = v->shape[3];
	int G = (int)(H / Hkv);
	emu_nt = NT;
	emu_fibers = (emu_fiber *)calloc(emu_nt, sizeof(emu_fiber));
	for (int i = 0; i < emu_nt; i++)
		emu_fibers[i].stack = (char *)malloc(256 * 1024);
	// query rows
	std::vector<int64_t> pos;
	if (npos > 0) {
		for (int i = 0; i < npos; i++)
			pos.push_back((int64_t)((double)i * (T - 1) / (npos - 1 > 0 ? npos - 1 : 1)));
		pos.back() = T - 1;
		cfg.query_positions = pos.data();
		cfg.num_query_positions = npos;
	}
	int64_t rows = npos > 0 ? npos : T;
	std::vector<int64_t> tpos(rows);
	for (int64_t i = 0; i < rows; i++)
		tpos[i] = npos > 0 ? pos[i] : i;
	tinyc_htree_trace tr;
	memset(&tr, 0, sizeof tr);
	tr.positions = tpos.data();
	tr.num_positions = (int)rows;
	tinyc_tensor *oref = NULL;
	if (tinyc_htree_forward_cpu(ctx, &cfg, q, k, v, &oref, &tr) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		return 1;
	}
	// tree on the emulated pool kernels
	int64_t N[64];
	int L = tinyc_htree_layer_sizes(T, cfg.compression_rate, cfg.max_top_nodes, N);
	ht_params P;
	memset(&P, 0, sizeof P);
	P.q = (const in_t *)q->data;
	P.k0 = (const in_t *)k->data;
	P.v0 = (const in_t *)v->data;
	if (unaligned) {
		const size_t kb = tinyc_tensor_numel(k) * sizeof(in_t), vb = tinyc_tensor_numel(v) * sizeof(in_t);
		unsigned char *ku = (unsigned char *)aligned_alloc(16, (kb + 47) & ~(size_t)15), *vu = (unsigned char *)aligned_alloc(16, (vb + 47) & ~(size_t)15);
		memcpy(ku + 4, k->data, kb);
		memcpy(vu + 4, v->data, vb);
		P.k0 = (const in_t *)(ku + 4);
		P.v0 = (const in_t *)(vu + 4);
	}
	for (int l = 1; l < L; l++) {
		float *kl = (float *)malloc(B * N[l] * Hkv * K * 4), *vl = (float *)malloc(B * N[l] * Hkv * V * 4);
		if (l == 1) {
			const in_t *k0 = P.k0, *v0 = P.v0;
			run_flat([&] { htree_pool_in(k0, kl, B, N[0], Hkv * K); }, B * N[1] * Hkv * K);
			run_flat([&] { htree_pool_in(v0, vl, B, N[0], Hkv * V); }, B * N[1] * Hkv * V);
		} else {
			run_flat([&] { htree_pool_f32(P.kl[l - 1], kl, B, N[l - 1], Hkv * K); }, B * N[l] * Hkv * K);
			run_flat([&] { htree_pool_f32(P.vl[l - 1], vl, B, N[l - 1], Hkv * V); }, B * N[l] * Hkv * V);
		}
		P.kl[l] = kl;
		P.vl[l] = vl;
	}
	for (int l = 0; l < L; l++)
		P.N[l] = N[l];
	int64_t trows = (int64_t)TOPK * R > cfg.max_top_nodes ? (int64_t)TOPK * R : cfg.max_top_nodes;
	float *ct = (float *)malloc(trows * K / 2 * 4), *st = (float *)malloc(trows * K / 2 * 4);
	tinyc_htree_rope_table(K, trows, cfg.rope_base, ct, st);
	P.cos_tab = ct;
	P.sin_tab = st;
	if (L > 1) {	// the top layer's rotated keys (the runner's htree_rot_top launch)
		float *kt = (float *)malloc(B * N[L - 1] * Hkv * K * 4);
		const float *ktop = P.kl[L - 1];
		run_flat([&] { htree_rot_top(ktop, kt, ct, st, B * N[L - 1], N[L - 1], Hkv); }, B * N[L - 1] * Hkv);
		P.krot = kt;
	}
	std::vector<int> ipos(rows);
	for (int64_t i = 0; i < rows; i++)
		ipos[i] = (int)tpos[i];
	P.positions = ipos.data();
	int64_t groups = B * rows * Hkv;
	float *o = (float *)malloc(B * rows * H * V * 4);
	int *tsel = (int *)malloc(groups * (L > 1 ? L - 1 : 1) * TOPK * 4);
	int *tnc = (int *)malloc(groups * L * 4);
	P.o = o;
	P.trace_sel = tsel;
	P.trace_ncand = tnc;
	P.T = T;
	P.B = B;
	P.Hkv = Hkv;
	P.L = L;
	P.rows = rows;
	P.table_rows = trows;
	P.scale = (float)(1.0 / sqrt((double)K));
	emu_bdim = {(unsigned)NT, 1, 1};
	emu_gdim = {(unsigned)groups, 1, 1};
	for (int64_t gi = 0; gi < groups; gi++) {
		emu_bid = {(unsigned)gi, 0, 0};
		run_block(&P);
	}
	// compare
	const float *orf = (const float *)oref->data;
	double maxerr = 0;
	int64_t over = 0, selbad = 0, ncbad = 0;
	for (int64_t gi = 0; gi < groups; gi++) {
		int64_t hkv = gi % Hkv, i = (gi / Hkv) % rows, b = gi / (Hkv * rows);
		double ge = 0;
		for (int g = 0; g < G; g++)
			for (int e = 0; e < V; e++) {
				int64_t idx = ((b * rows + i) * H + hkv * G + g) * V + e;
				double d = fabs((double)o[idx] - orf[idx]);
				if (!(d <= ge))
					ge = d;
			}
		if (ge > maxerr)
			maxerr = ge;
		if (!(ge <= 1e-4))
			over++;
		int bad = 0;
		for (int l = 0; l < L - 1; l++)
			for (int x = 0; x < TOPK; x++)
				bad |= tsel[(gi * (L - 1) + l) * TOPK + x] != tr.sel_nodes[(gi * (L - 1) + l) * cfg.top_k + x];
		selbad += bad;
		for (int l = 0; l < L; l++)
			ncbad += tnc[gi * L + l] != tr.num_candidates[gi * L + l];
	}
	printf("L=%d groups=%lld threads=%d: max|err| %.3g, groups over 1e-4: %lld, selection mismatches: %lld, ncand mismatches %lld\n",
	       L, (long long)groups, NT, maxerr, (long long)over, (long long)selbad, (long long)ncbad);
	return over || selbad || ncbad ? 1 : 0;
}
