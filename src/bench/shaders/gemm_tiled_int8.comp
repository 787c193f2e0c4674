// Shared-memory tiled int8 dot-product GEMM on gemm_int8.comp's operands (Q8_0-style blocks of
// 32 values on both sides: int8 packed four to a uint, two uvec4 per block, one fp32 scale per
// block in bindings 3 and 4):
//   C[m][n] = sum_b xscale[m][b] * wscale[n][b] * sum_{k in block b} xq[m][k] * wq[n][k]
// The tile machinery is gemm_tiled.comp's: a workgroup computes a BM x BN tile of C, x walking
// the M tiles and y the N tiles; each K step stages one block of the X and W tiles (their packed
// int8 and their scales) in shared memory, k-major with four rows per uvec4, swizzled against
// bank conflicts, in two alternating buffers so one barrier per step suffices. Each invocation
// keeps TM x TN integer sums for the block, 8 OpSDot (4x8-bit packed) per output, and then adds
// isum * sx * sw into its fp32 accumulators: the integer sum is exact, so the only rounding is
// the one fp32 add per block that the register kernel and the reference also do.
// A separate source rather than a -DINT8 build of gemm_tiled.comp: the inner loop (integer dots
// on uints, a per-block scale epilogue), the loads (no K padding, whole blocks) and the staged
// scales differ from the float builds in nearly every function.
// OpSDot is emitted through GL_EXT_spirv_intrinsics, as in gemm_int8.comp, because Debian 12's
// glslc lacks GL_EXT_integer_dot_product; the host selects this kernel only where the device
// reports shaderIntegerDotProduct.
// Split-K (built with -DSPLIT_K): as in gemm_tiled.comp, workgroup z takes one of SPLIT slices of
// the blocks and adds its partial sums into C atomically, which the host clears first.
// Host contract (checked in kernels/mod.rs): THREADS == (BM/TM)*(BN/TN); TM and TN multiples
// of 4; K (== ldk) a multiple of 32. Spec constant 3 (BK in the float builds) is 32 and unused here.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#ifdef SPLIT_K
#extension GL_EXT_shader_atomic_float : require
#endif

// OpSDot (4450) with PackedVectorFormat4x8Bit (literal 0); capabilities DotProduct (6019) and
// DotProductInput4x8BitPacked (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_vector_format);

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const uint SPLIT = 1;  // K slices (split-K build only)

const uint THREADS = gl_WorkGroupSize.x;
const uint TX = BN / TN;  // invocations along N
const uint TY = BM / TM;  // invocations along M
const uint KU = 8;        // uints per block row: 32 int8
// uvec4 loads per invocation per block: two per row (the block's two halves). Rounded up; the
// last round is guarded, so small tiles need not divide evenly among the invocations.
const uint LOADS_X = (BM * 2 + THREADS - 1) / THREADS;
const uint LOADS_W = (BN * 2 + THREADS - 1) / THREADS;
const uint SCALES_X = (BM + THREADS - 1) / THREADS;
const uint SCALES_W = (BN + THREADS - 1) / THREADS;
// gemm_tiled.comp's swizzle with two quads of k per row (the block's halves): the row quad is
// XOR-ed with 4 for the second half, so a store's two halves land in different banks.
const uint SWZ_X = (BM / 4) % 8 == 0 ? 4 : 0;
const uint SWZ_W = (BN / 4) % 8 == 0 ? 4 : 0;

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;    // multiple of 32
    uint ldk;  // == K
} p;

layout(std430, binding = 0) readonly buffer Xbuf { uvec4 xq[]; };
layout(std430, binding = 1) readonly buffer Wbuf { uvec4 wq[]; };
#ifdef SPLIT_K
layout(std430, binding = 2) buffer Cbuf { float c[]; };
#else
layout(std430, binding = 2) writeonly buffer Cbuf { float c[]; };
#endif
// The same buffer seen as vec4s, for 128-bit stores of whole output quads when N % 4 == 0.
layout(std430, binding = 2) writeonly buffer Cbuf4 { vec4 c4[]; };
layout(std430, binding = 3) readonly buffer XSbuf { float xscale[]; };
layout(std430, binding = 4) readonly buffer WSbuf { float wscale[]; };

// [buffer][k uint][row/4]: k-major, four rows per uvec4; scales [buffer][row/4].
shared uvec4 xs[2 * KU * (BM / 4)];
shared uvec4 ws[2 * KU * (BN / 4)];
shared vec4 xsc[2 * (BM / 4)];
shared vec4 wsc[2 * (BN / 4)];

// Block b of the X and W tiles (rows clamped to the last one; their results are not stored).
void fetch(uint b, uint m_base, uint n_base, out uvec4 rx[LOADS_X], out uvec4 rw[LOADS_W],
           out float rsx[SCALES_X], out float rsw[SCALES_W]) {
    const uint tid = gl_LocalInvocationID.x;
    const uint nb = p.K / 32;
    [[unroll]] for (uint l = 0; l < LOADS_X; l++) {
        const uint idx = tid + l * THREADS;
        const uint row = min(m_base + idx / 2, p.M - 1);
        rx[l] = idx < BM * 2 ? xq[(row * nb + b) * 2 + idx % 2] : uvec4(0);
    }
    [[unroll]] for (uint l = 0; l < LOADS_W; l++) {
        const uint idx = tid + l * THREADS;
        const uint row = min(n_base + idx / 2, p.N - 1);
        rw[l] = idx < BN * 2 ? wq[(row * nb + b) * 2 + idx % 2] : uvec4(0);
    }
    [[unroll]] for (uint l = 0; l < SCALES_X; l++) {
        const uint idx = tid + l * THREADS;
        rsx[l] = idx < BM ? xscale[min(m_base + idx, p.M - 1) * nb + b] : 0.0;
    }
    [[unroll]] for (uint l = 0; l < SCALES_W; l++) {
        const uint idx = tid + l * THREADS;
        rsw[l] = idx < BN ? wscale[min(n_base + idx, p.N - 1) * nb + b] : 0.0;
    }
}

void stash(uint buf, in uvec4 rx[LOADS_X], in uvec4 rw[LOADS_W], in float rsx[SCALES_X],
           in float rsw[SCALES_W]) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint l = 0; l < LOADS_X; l++) {
        const uint idx = tid + l * THREADS;
        if (idx >= BM * 2) continue;
        const uint r = idx / 2;
        const uint hf = idx % 2;  // which half of the block ("half" is reserved)
        const uint kb = (buf * KU + hf * 4) * (BM / 4) + ((r / 4) ^ (hf * SWZ_X));
        [[unroll]] for (uint e = 0; e < 4; e++) xs[kb + e * (BM / 4)][r % 4] = rx[l][e];
    }
    [[unroll]] for (uint l = 0; l < LOADS_W; l++) {
        const uint idx = tid + l * THREADS;
        if (idx >= BN * 2) continue;
        const uint r = idx / 2;
        const uint hf = idx % 2;  // which half of the block ("half" is reserved)
        const uint kb = (buf * KU + hf * 4) * (BN / 4) + ((r / 4) ^ (hf * SWZ_W));
        [[unroll]] for (uint e = 0; e < 4; e++) ws[kb + e * (BN / 4)][r % 4] = rw[l][e];
    }
    [[unroll]] for (uint l = 0; l < SCALES_X; l++) {
        const uint idx = tid + l * THREADS;
        if (idx < BM) xsc[buf * (BM / 4) + idx / 4][idx % 4] = rsx[l];
    }
    [[unroll]] for (uint l = 0; l < SCALES_W; l++) {
        const uint idx = tid + l * THREADS;
        if (idx < BN) wsc[buf * (BN / 4) + idx / 4][idx % 4] = rsw[l];
    }
}

// One block: TM x TN integer sums of 8 packed dots each, then one scaled fp32 add per output.
// A macro for the reason gemm_tiled.comp's MULTIPLY_STEP is one (arrays sized by spec constants
// passed to functions miscompiled with Debian 12's glslc).
#define MULTIPLY_BLOCK(CUR)                                                                     \
    {                                                                                           \
        int isum[TM * TN];                                                                      \
        [[unroll]] for (uint i = 0; i < TM * TN; i++) isum[i] = 0;                              \
        [[unroll]] for (uint j = 0; j < KU; j++) {                                              \
            uvec4 a[TM / 4];                                                                    \
            uvec4 b[TN / 4];                                                                    \
            const uint sx = (j / 4) * SWZ_X;                                                    \
            const uint sw = (j / 4) * SWZ_W;                                                    \
            [[unroll]] for (uint g = 0; g < TM / 4; g++)                                        \
                a[g] = xs[((CUR) * KU + j) * (BM / 4) + ((ty + g * TY) ^ sx)];                  \
            [[unroll]] for (uint h = 0; h < TN / 4; h++)                                        \
                b[h] = ws[((CUR) * KU + j) * (BN / 4) + ((tx + h * TX) ^ sw)];                  \
            [[unroll]] for (uint g = 0; g < TM / 4; g++)                                        \
                [[unroll]] for (uint r = 0; r < 4; r++)                                         \
                    [[unroll]] for (uint h = 0; h < TN / 4; h++)                                \
                        [[unroll]] for (uint e = 0; e < 4; e++)                                 \
                            isum[(g * 4 + r) * TN + h * 4 + e] += sdot4x8(a[g][r], b[h][e], 0); \
        }                                                                                       \
        vec4 swq[TN / 4];                                                                       \
        [[unroll]] for (uint h = 0; h < TN / 4; h++) swq[h] = wsc[(CUR) * (BN / 4) + tx + h * TX]; \
        [[unroll]] for (uint g = 0; g < TM / 4; g++) {                                          \
            const vec4 sxq = xsc[(CUR) * (BM / 4) + ty + g * TY];                               \
            [[unroll]] for (uint r = 0; r < 4; r++)                                             \
                [[unroll]] for (uint h = 0; h < TN / 4; h++)                                    \
                    [[unroll]] for (uint e = 0; e < 4; e++)                                     \
                        acc[(g * 4 + r) * (TN / 4) + h][e] +=                                   \
                            float(isum[(g * 4 + r) * TN + h * 4 + e]) * (sxq[r] * swq[h][e]);   \
        }                                                                                       \
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

    const uint steps = p.K / 32;
#ifdef SPLIT_K
    const uint per_slice = (steps + SPLIT - 1) / SPLIT;
    const uint first = min(gl_WorkGroupID.z * per_slice, steps);
    const uint end = min(first + per_slice, steps);
#else
    const uint first = 0;
    const uint end = steps;
#endif

    uvec4 rx[LOADS_X];
    uvec4 rw[LOADS_W];
    float rsx[SCALES_X];
    float rsw[SCALES_W];
    // A slice past the last block (more slices than blocks) fetches nothing and adds zeros.
    if (first < end) {
        fetch(first, m_base, n_base, rx, rw, rsx, rsw);
        stash(0, rx, rw, rsx, rsw);
    }
    barrier();

    for (uint s = first; s < end; s++) {
        const uint cur = (s - first) & 1u;
        const bool more = s + 1 < end;
        if (more) fetch(s + 1, m_base, n_base, rx, rw, rsx, rsw);
        MULTIPLY_BLOCK(cur)
        if (more) stash(cur ^ 1u, rx, rw, rsx, rsw);
        barrier();
    }

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
