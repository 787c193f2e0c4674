// Q4_0-style dequantising GEMM: 4-bit weights with one fp16 scale per 32 values, fp32
// activations, fp32 maths; register-blocked, no shared memory.
//   W[n][k] = (q[n][k] - 8) * d[n][k / 32]
// Layout (chosen for 128-bit loads, not ggml's byte order): a block of 32 weights is one uvec4;
// uint u of the block holds k = 8u..8u+7, nibble e (bits 4e..4e+3) is k = 8u + e. Scales are
// fp16, two per uint (block 2i in the low half). K is a multiple of 32.
// Each weight is dequantised once per invocation and reused for its TM tokens.
#version 450
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = 2) const uint TM = 4;
layout(constant_id = 3) const uint TN = 2;

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;    // multiple of 32
    uint ldk;  // == K
} p;

layout(std430, binding = 0) readonly buffer Xbuf { vec4 x[]; };
layout(std430, binding = 1) readonly buffer Wbuf { uvec4 wq[]; };
layout(std430, binding = 2) writeonly buffer Cbuf { float c[]; };
layout(std430, binding = 4) readonly buffer WSbuf { uint wscale[]; };

vec4 nibbles(uint q, uint first) {
    return vec4(float((q >> (4 * first)) & 15u), float((q >> (4 * first + 4)) & 15u),
                float((q >> (4 * first + 8)) & 15u), float((q >> (4 * first + 12)) & 15u)) - 8.0;
}

void main() {
    const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * TN;
    const uint m0 = (gl_WorkGroupID.y * gl_WorkGroupSize.y + gl_LocalInvocationID.y) * TM;
    const uint nb = p.K / 32;
    const uint k4n = p.K / 4;

    uint xrow[TM];
    uint wrow[TN];
    [[unroll]] for (uint i = 0; i < TM; i++) xrow[i] = min(m0 + i, p.M - 1) * k4n;
    [[unroll]] for (uint j = 0; j < TN; j++) wrow[j] = min(n0 + j, p.N - 1) * nb;

    float acc[TM * TN];
    [[unroll]] for (uint a = 0; a < TM * TN; a++) acc[a] = 0.0;

    for (uint b = 0; b < nb; b++) {
        uvec4 q[TN];
        float d[TN];
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uint blk = wrow[j] + b;
            q[j] = wq[blk];
            const vec2 pair = unpackHalf2x16(wscale[blk / 2]);
            d[j] = (blk & 1u) == 0u ? pair.x : pair.y;
        }
        [[unroll]] for (uint u = 0; u < 4; u++) {
            vec4 xlo[TM];
            vec4 xhi[TM];
            [[unroll]] for (uint i = 0; i < TM; i++) {
                xlo[i] = x[xrow[i] + b * 8 + u * 2];
                xhi[i] = x[xrow[i] + b * 8 + u * 2 + 1];
            }
            [[unroll]] for (uint j = 0; j < TN; j++) {
                const vec4 wlo = nibbles(q[j][u], 0) * d[j];
                const vec4 whi = nibbles(q[j][u], 4) * d[j];
                [[unroll]] for (uint i = 0; i < TM; i++)
                    acc[i * TN + j] += dot(xlo[i], wlo) + dot(xhi[i], whi);
            }
        }
    }

    [[unroll]] for (uint i = 0; i < TM; i++) {
        const uint m = m0 + i;
        if (m >= p.M) break;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uint n = n0 + j;
            if (n < p.N) c[m * p.N + n] = acc[i * TN + j];
        }
    }
}
