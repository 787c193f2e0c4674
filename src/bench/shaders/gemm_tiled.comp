// Shared-memory tiled GEMM shaped like llama.cpp's ggml-vulkan mul_mm (64x64 "medium" and
// 128x128 "large" tiles), plus register micro-tiles, so the bench can show how that style fares
// on each device and reproduce the register pressure of the large tile on Mali.
//   C[m][n] = sum_k X[m][k] * W[n][k]   (X: M x ldk tokens, W: N x ldk weights, C: M x N)
// A workgroup computes a BM x BN tile of C; workgroup x walks the M tiles and y the N tiles, so
// the few workgroups that share a weight tile run next to each other and hit it in L2. Each K step of BK stages X and W tiles in shared
// memory, transposed to k-major so an invocation reads its TM tokens and TN outputs as vec4s.
// Two shared buffers alternate, so one barrier per K step suffices: while the tile in one buffer
// is multiplied, the next one is fetched into registers and then stored into the other buffer.
// Split-K (built with -DSPLIT_K): workgroup z takes one of SPLIT slices of the K steps and adds
// its partial sums into C atomically, which the host clears first. It gives the GPU SPLIT times
// as many workgroups, for grids with about one per SM (down at ubatch 512 in 128x64 tiles: 128
// workgroups on a 132-SM H200). With SPLIT == 2 each output is 0 + a + b in either order, so
// the result does not depend on scheduling.
// Peeled (built with -DPEEL_LAST_STEP): the same kernel with the last K step outside the loop.
// Operand formats (one source, so the fp16 and q4_0 tiles share the swizzle, peel and split-K
// machinery above): plain fp32. With -DF16, X and W are fp16 in memory (f16vec4 loads, half the
// bytes of fp32) and are widened to fp32 as they are fetched, so shared memory, the products and
// the accumulators are fp32: on the GPUs this tile is for, fp16 FMA through Vulkan without
// tensor cores runs at about the fp32 rate (H200: 66.4 against 63.5 TFLOP/s measured), so fp16
// maths would buy little speed and lose accuracy over K = 11008. With -DQ4_0, X is fp32 and W is
// gemm_q4_0.comp's 4-bit layout (one uvec4 of 32 codes per block, fp16 scales two per uint in
// binding 4); each fetched quad of codes is dequantised in registers and stored into shared
// memory as fp32, so the inner loop is the fp32 one and each weight is dequantised once per
// workgroup, not once per token. With -DF16 -DSHARED_F16 the fp16 operands stay fp16 in
// shared memory (half the bytes; widened as the inner loop reads them; the same results).
// Host contract (checked in kernels/mod.rs): THREADS == (BM/TM)*(BN/TN); TM, TN, BK multiples
// of 4; BM*BK/4 and BN*BK/4 multiples of THREADS; ldk a multiple of 4, rows zero-padded (q4_0:
// ldk == K, a multiple of 32).
#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef SPLIT_K
#extension GL_EXT_shader_atomic_float : require
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const uint SPLIT = 1;  // K slices (split-K build only)

const uint THREADS = gl_WorkGroupSize.x;
const uint TX = BN / TN;  // invocations along N
const uint TY = BM / TM;  // invocations along M
const uint BK4 = BK / 4;
const uint LOADS_X = BM * BK4 / THREADS;  // vec4 loads per invocation per K step
const uint LOADS_W = BN * BK4 / THREADS;
// Shared-memory swizzle. stash() writes the four k values of one loaded vec4 as scalars, and the
// invocations of one store share k/4 groups but differ in row, so without it they hit the same
// few banks (BK4-way conflicts). XOR-ing the row quad with a function of k/4 spreads them over
// all banks; it permutes quads inside aligned groups of 8, so the inner loop's vec4 reads stay
// conflict-free and in range. Needs a whole number of 8-quad groups per k row (else off).
const uint SWZ_X = ((BM / 4) % 8 == 0 && BK4 <= 8) ? 8 / BK4 : 0;
const uint SWZ_W = ((BN / 4) % 8 == 0 && BK4 <= 8) ? 8 / BK4 : 0;

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;
    uint ldk;
} p;

#if defined(SHARED_F16) && !defined(F16)
#error "SHARED_F16 is built only with F16 (fp16 operands are staged as they are in memory)"
#endif
#ifdef F16
layout(std430, binding = 0) readonly buffer Xbuf { f16vec4 x[]; };
layout(std430, binding = 1) readonly buffer Wbuf { f16vec4 w[]; };
#ifdef SHARED_F16
// Staged in shared memory as the fp16 they are in memory (half the bytes, so twice the
// workgroups fit an SM's shared memory); widened to fp32 as the inner loop reads them.
#define WIDEN(v) (v)
#else
#define WIDEN(v) vec4(v)
#endif
#else
#define WIDEN(v) (v)
layout(std430, binding = 0) readonly buffer Xbuf { vec4 x[]; };
#ifdef Q4_0
layout(std430, binding = 1) readonly buffer Wbuf { uint wq[]; };
layout(std430, binding = 4) readonly buffer WSbuf { uint wscale[]; };
#else
layout(std430, binding = 1) readonly buffer Wbuf { vec4 w[]; };
#endif
#endif
#ifdef SPLIT_K
layout(std430, binding = 2) buffer Cbuf { float c[]; };
#else
layout(std430, binding = 2) writeonly buffer Cbuf { float c[]; };
#endif
// The same buffer seen as vec4s, for 128-bit stores of whole output quads when N % 4 == 0.
layout(std430, binding = 2) writeonly buffer Cbuf4 { vec4 c4[]; };

#ifdef SHARED_F16
#define STAGE f16vec4
#define READ(v) vec4(v)
#else
#define STAGE vec4
#define READ(v) (v)
#endif

// [buffer][k][row/4]: k-major, four rows per vec4.
shared STAGE xs[2 * BK * (BM / 4)];
shared STAGE ws[2 * BK * (BN / 4)];

#ifdef Q4_0
// Weight quad kq (k = 4kq..4kq+3) of a row: block kq / 8 of the row, uint (kq % 8) / 2 of the
// block, nibbles 4(kq % 2)..4(kq % 2)+3 of that uint, times the block's fp16 scale.
vec4 weight_quad(uint row, uint kq) {
    const uint blk = row * (p.ldk / 32) + kq / 8;
    const uint q = wq[blk * 4 + (kq % 8) / 2] >> ((kq & 1u) * 16);
    const vec2 pair = unpackHalf2x16(wscale[blk / 2]);
    const float d = (blk & 1u) == 0u ? pair.x : pair.y;
    return (vec4(float(q & 15u), float((q >> 4) & 15u), float((q >> 8) & 15u),
                 float((q >> 12) & 15u)) - 8.0) * d;
}
#endif

void fetch(uint k0, uint m_base, uint n_base, out STAGE rx[LOADS_X], out STAGE rw[LOADS_W]) {
    const uint tid = gl_LocalInvocationID.x;
    const uint k4n = p.ldk / 4;
    [[unroll]] for (uint l = 0; l < LOADS_X; l++) {
        const uint idx = tid + l * THREADS;
        const uint r = idx / BK4;
        const uint kq = k0 / 4 + idx % BK4;
        const uint row = min(m_base + r, p.M - 1);
        rx[l] = kq < k4n ? WIDEN(x[row * k4n + kq]) : STAGE(0.0);
    }
    [[unroll]] for (uint l = 0; l < LOADS_W; l++) {
        const uint idx = tid + l * THREADS;
        const uint r = idx / BK4;
        const uint kq = k0 / 4 + idx % BK4;
        const uint row = min(n_base + r, p.N - 1);
#ifdef Q4_0
        rw[l] = kq < k4n ? weight_quad(row, kq) : vec4(0.0);
#else
        rw[l] = kq < k4n ? WIDEN(w[row * k4n + kq]) : STAGE(0.0);
#endif
    }
}

void stash(uint buf, in STAGE rx[LOADS_X], in STAGE rw[LOADS_W]) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint l = 0; l < LOADS_X; l++) {
        const uint idx = tid + l * THREADS;
        const uint r = idx / BK4;
        const uint kq = idx % BK4;
        const uint kb = (buf * BK + kq * 4) * (BM / 4) + ((r / 4) ^ ((kq * SWZ_X) & 7u));
        [[unroll]] for (uint e = 0; e < 4; e++) xs[kb + e * (BM / 4)][r % 4] = rx[l][e];
    }
    [[unroll]] for (uint l = 0; l < LOADS_W; l++) {
        const uint idx = tid + l * THREADS;
        const uint r = idx / BK4;
        const uint kq = idx % BK4;
        const uint kb = (buf * BK + kq * 4) * (BN / 4) + ((r / 4) ^ ((kq * SWZ_W) & 7u));
        [[unroll]] for (uint e = 0; e < 4; e++) ws[kb + e * (BN / 4)][r % 4] = rw[l][e];
    }
}

// One K step: multiply the X and W tiles in shared buffer CUR into the accumulators. A macro,
// because as a function taking the accumulator array (sized by specialisation constants) it
// gave wrong results with Debian 12's glslc.
#define MULTIPLY_STEP(CUR)                                                                      \
    [[unroll]] for (uint kk = 0; kk < BK; kk++) {                                               \
        vec4 a[TM / 4];                                                                         \
        vec4 b[TN / 4];                                                                         \
        const uint sx = ((kk / 4) * SWZ_X) & 7u;                                                \
        const uint sw = ((kk / 4) * SWZ_W) & 7u;                                                \
        [[unroll]] for (uint g = 0; g < TM / 4; g++)                                            \
            a[g] = READ(xs[((CUR) * BK + kk) * (BM / 4) + ((ty + g * TY) ^ sx)]);               \
        [[unroll]] for (uint h = 0; h < TN / 4; h++)                                            \
            b[h] = READ(ws[((CUR) * BK + kk) * (BN / 4) + ((tx + h * TX) ^ sw)]);               \
        [[unroll]] for (uint g = 0; g < TM / 4; g++)                                            \
            [[unroll]] for (uint r = 0; r < 4; r++)                                             \
                [[unroll]] for (uint h = 0; h < TN / 4; h++)                                    \
                    acc[(g * 4 + r) * (TN / 4) + h] += a[g][r] * b[h];                          \
    }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % TX;
    const uint ty = tid / TX;
    const uint m_base = gl_WorkGroupID.x * BM;
    const uint n_base = gl_WorkGroupID.y * BN;
    const bool quads = (p.N & 3u) == 0u;

    vec4 acc[TM * TN / 4];
    [[unroll]] for (uint a = 0; a < TM * TN / 4; a++) acc[a] = vec4(0.0);

    const uint steps = (p.ldk + BK - 1) / BK;
#ifdef SPLIT_K
    const uint per_slice = (steps + SPLIT - 1) / SPLIT;
    const uint first = gl_WorkGroupID.z * per_slice;
    const uint end = min(first + per_slice, steps);
#else
    const uint first = 0;
    const uint end = steps;
#endif

    STAGE rx[LOADS_X];
    STAGE rw[LOADS_W];
    fetch(first * BK, m_base, n_base, rx, rw);
    stash(0, rx, rw);
    barrier();

#ifdef PEEL_LAST_STEP
    // Every step but the last prefetches without a condition and the last one only multiplies.
    // The driver then schedules the loop with fewer registers (NVIDIA: 127 for 128x128 tiles at
    // BK 8, where the guarded loop takes 149 at BK 16), so more workgroups fit per SM; it pays
    // where the grid has many workgroups and costs where it has one per SM, so both are offered.
    for (uint s = first; s + 1 < end; s++) {
        const uint cur = (s - first) & 1u;
        fetch((s + 1) * BK, m_base, n_base, rx, rw);
        MULTIPLY_STEP(cur)
        stash(cur ^ 1u, rx, rw);
        barrier();
    }
    MULTIPLY_STEP((end - 1 - first) & 1u)
#else
    for (uint s = first; s < end; s++) {
        const uint cur = (s - first) & 1u;
        const bool more = s + 1 < end;
        if (more) fetch((s + 1) * BK, m_base, n_base, rx, rw);
        MULTIPLY_STEP(cur)
        if (more) stash(cur ^ 1u, rx, rw);
        barrier();
    }
#endif

    [[unroll]] for (uint g = 0; g < TM / 4; g++) {
        [[unroll]] for (uint r = 0; r < 4; r++) {
            const uint m = m_base + (ty + g * TY) * 4 + r;
            if (m >= p.M) continue;
            [[unroll]] for (uint h = 0; h < TN / 4; h++) {
                const uint n = n_base + (tx + h * TX) * 4;
                const vec4 v = acc[(g * 4 + r) * (TN / 4) + h];
#ifdef SPLIT_K
                [[unroll]] for (uint e = 0; e < 4; e++)
                    if (n + e < p.N) atomicAdd(c[m * p.N + n + e], v[e]);
                continue;
#endif
                if (quads && n + 3 < p.N) {
                    c4[(m * p.N + n) / 4] = v;
                } else {
                    [[unroll]] for (uint e = 0; e < 4; e++)
                        if (n + e < p.N) c[m * p.N + n + e] = v[e];
                }
            }
        }
    }
}
