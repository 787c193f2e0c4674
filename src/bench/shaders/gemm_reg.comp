// Register-blocked GEMM for Mali Valhall: no shared memory, no barriers.
//   C[m][n] = sum_k X[m][k] * W[n][k]
// X = activations (M tokens x ldk), W = weights (N outputs x ldk), both K-contiguous, rows padded
// with zeros to ldk (a multiple of 4) so every load is a 128-bit vector load. C is M x N.
// Each invocation owns a TM x TN block of C and keeps it in registers; the workgroup tiles
// WG_X*TN outputs by WG_Y*TM tokens. Arm's guidance for Valhall: <= 32-64 registers per thread,
// vectorised 128-bit loads, caches instead of local memory (see research/perf-anchors.md §4).
// Built twice by scripts/check-shaders.sh: plain (fp32) and with -DF16 (fp16 data, fp16 maths in
// short chunks of K, fp32 accumulation across chunks so long K stays accurate).
#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#define VEC4 f16vec4
#define SCALAR float16_t
#else
#define VEC4 vec4
#define SCALAR float
#endif

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = 2) const uint TM = 4;  // tokens per invocation
layout(constant_id = 3) const uint TN = 4;  // outputs per invocation
#ifdef F16
layout(constant_id = 4) const uint KCHUNK = 8;  // vec4 steps summed in fp16 before the fp32 add
#endif

layout(push_constant) uniform Params {
    uint M;    // tokens
    uint N;    // output features
    uint K;    // reduction length (unpadded)
    uint ldk;  // padded row length in elements, multiple of 4
} p;

layout(std430, binding = 0) readonly buffer Xbuf { VEC4 x[]; };
layout(std430, binding = 1) readonly buffer Wbuf { VEC4 w[]; };
layout(std430, binding = 2) writeonly buffer Cbuf { float c[]; };

void main() {
    const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * TN;
    const uint m0 = (gl_WorkGroupID.y * gl_WorkGroupSize.y + gl_LocalInvocationID.y) * TM;
    const uint k4n = p.ldk / 4;

    // Rows past the edge are clamped to the last row: the loads stay in bounds and branch-free,
    // and the results for those rows are never stored.
    uint xrow[TM];
    uint wrow[TN];
    [[unroll]] for (uint i = 0; i < TM; i++) xrow[i] = min(m0 + i, p.M - 1) * k4n;
    [[unroll]] for (uint j = 0; j < TN; j++) wrow[j] = min(n0 + j, p.N - 1) * k4n;

    float acc[TM * TN];
    [[unroll]] for (uint a = 0; a < TM * TN; a++) acc[a] = 0.0;

#ifdef F16
    for (uint kc = 0; kc < k4n; kc += KCHUNK) {
        SCALAR part[TM * TN];
        [[unroll]] for (uint a = 0; a < TM * TN; a++) part[a] = SCALAR(0.0);
        const uint kend = min(kc + KCHUNK, k4n);
        for (uint k = kc; k < kend; k++) {
            VEC4 xv[TM];
            [[unroll]] for (uint i = 0; i < TM; i++) xv[i] = x[xrow[i] + k];
            [[unroll]] for (uint j = 0; j < TN; j++) {
                const VEC4 wv = w[wrow[j] + k];
                [[unroll]] for (uint i = 0; i < TM; i++) part[i * TN + j] += dot(xv[i], wv);
            }
        }
        [[unroll]] for (uint a = 0; a < TM * TN; a++) acc[a] += float(part[a]);
    }
#else
    for (uint k = 0; k < k4n; k++) {
        VEC4 xv[TM];
        [[unroll]] for (uint i = 0; i < TM; i++) xv[i] = x[xrow[i] + k];
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const VEC4 wv = w[wrow[j] + k];
            [[unroll]] for (uint i = 0; i < TM; i++) acc[i * TN + j] += dot(xv[i], wv);
        }
    }
#endif

    [[unroll]] for (uint i = 0; i < TM; i++) {
        const uint m = m0 + i;
        if (m >= p.M) break;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uint n = n0 + j;
            if (n < p.N) c[m * p.N + n] = acc[i * TN + j];
        }
    }
}
