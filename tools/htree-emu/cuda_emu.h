// Minimal CUDA emulation on the CPU, enough for the htree kernels (a developer tool, not a
// CUDA implementation): each CUDA thread of a block is a ucontext fiber; __syncthreads and
// the warp primitives (__shfl_xor_sync, __shfl_up_sync, __ballot_sync) are barriers of the
// block or the warp; between barriers the fibers run in an order that alternates (forward,
// reverse, shuffled) so that a missing barrier shows as a wrong result.  Float intrinsics
// map to the host's IEEE operations (compile with -ffp-contract=off).
#pragma once
#include <ucontext.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __constant__
#define __noinline__
#define __align__(n) __attribute__((aligned(n)))

struct emu_dim3 { unsigned x, y, z; };
struct float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

struct emu_fiber {
	ucontext_t ctx;
	emu_dim3 tid;
	int waiting;	// 0 running/runnable, 1 block barrier, 2 warp barrier, 3 done
	unsigned long long wval;
	char *stack;
};

extern emu_dim3 emu_bid, emu_bdim, emu_gdim;
extern emu_fiber *emu_cur;
extern ucontext_t emu_sched;
void emu_wait(int kind);

#define threadIdx (emu_cur->tid)
#define blockIdx emu_bid
#define blockDim emu_bdim
#define gridDim emu_gdim

static inline void __syncthreads() { emu_wait(1); }

extern emu_fiber *emu_fibers;
static inline unsigned long long emu_exchange_get(int lane_src)
{
	int base = (int)(threadIdx.x & ~31u);
	return emu_fibers[base + lane_src].wval;
}
template <typename T> static inline unsigned long long emu_bits(T v) { unsigned long long b = 0; memcpy(&b, &v, sizeof v); return b; }
template <typename T> static inline T emu_from(unsigned long long b) { T v; memcpy(&v, &b, sizeof v); return v; }

template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int o)
{
	emu_cur->wval = emu_bits(v);
	emu_wait(2);
	T r = emu_from<T>(emu_exchange_get((int)(threadIdx.x & 31) ^ o));
	emu_wait(2);
	return r;
}
template <typename T> static inline T __shfl_up_sync(unsigned, T v, int o)
{
	emu_cur->wval = emu_bits(v);
	emu_wait(2);
	int lane = (int)(threadIdx.x & 31);
	T r = lane >= o ? emu_from<T>(emu_exchange_get(lane - o)) : v;
	emu_wait(2);
	return r;
}
template <typename T> static inline T __shfl_sync(unsigned, T v, int src)
{
	emu_cur->wval = emu_bits(v);
	emu_wait(2);
	T r = emu_from<T>(emu_exchange_get(src & 31));
	emu_wait(2);
	return r;
}
static inline unsigned __ballot_sync(unsigned, bool f);
static inline int __all_sync(unsigned m, bool f) { return __ballot_sync(m, f) == 0xffffffffu; }
static inline unsigned __ballot_sync(unsigned, bool f)
{
	emu_cur->wval = f ? 1 : 0;
	emu_wait(2);
	unsigned r = 0;
	for (int i = 0; i < 32; i++)
		if (emu_exchange_get(i))
			r |= 1u << i;
	emu_wait(2);
	return r;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
static inline int atomicMax(int *p, int v) { int o = *p; *p = o > v ? o : v; return o; }
// __syncthreads_or: a barrier, the flags ORed through a block-wide word (read after a
// second barrier, reset after a third)
extern int emu_sync_or;
static inline int __syncthreads_or(int f)
{
	if (f)
		emu_sync_or = 1;
	emu_wait(1);
	const int r = emu_sync_or;
	emu_wait(1);
	emu_sync_or = 0;
	emu_wait(1);
	return r;
}
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
template <typename T> static inline T __ldg(const T *p) { return *p; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline float __fsub_rn(float a, float b) { volatile float r = a - b; return r; }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline float __fdiv_rn(float a, float b) { volatile float r = a / b; return r; }
// __expf at its documented worst (2 + 1.173 |x| ulp), up or down by the argument's
// bits, so that the kernels' error bounds on it are exercised
inline float emu_expf_worst(float x)
{
	const float e = expf(x);
	uint32_t b;
	memcpy(&b, &x, 4);
	const float rel = (2.0f + 1.173f * fabsf(x)) * 0x1p-23f;
	return e * ((b & 1u) ? 1.0f + rel : 1.0f - rel);
}
#define __expf(x) emu_expf_worst(x)
// ht_exp_ftz (ex2.approx.ftz of x log2 e) at its worst: 2 ulp + |x| 2^-24, up or down,
// flushed to 0 below FLT_MIN
inline float ht_exp_ftz(float x)
{
	float e = expf(x);
	uint32_t b;
	memcpy(&b, &x, 4);
	const float rel = 2.0f * 0x1p-23f + fabsf(x) * 0x1p-24f;
	e *= (b & 2u) ? 1.0f + rel : 1.0f - rel;
	return e < 0x1p-126f ? 0.0f : e;
}
static inline float __double2float_rn(double x) { return (float)x; }
static inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline int __double2hiint(double d) { uint64_t b; memcpy(&b, &d, 8); return (int)(uint32_t)(b >> 32); }
static inline int __double2loint(double d) { uint64_t b; memcpy(&b, &d, 8); return (int)(uint32_t)b; }
static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline float __int_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
using std::fmaf;
using std::fmaxf;
using std::fminf;
extern "C" float tinyc_f16_to_f32(uint16_t h);
extern "C" float tinyc_bf16_to_f32(uint16_t h);
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
static inline float __half2float(__half h) { return tinyc_f16_to_f32(h.x); }
static inline float __bfloat162float(__nv_bfloat16 h) { return tinyc_bf16_to_f32(h.x); }
