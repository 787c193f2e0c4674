// int8 dot-product GEMM (Q8_0-style blocks on both sides), register-blocked, no shared memory.
//   C[m][n] = sum_b xscale[m][b] * wscale[n][b] * sum_{k in block b} xq[m][k] * wq[n][k]
// Blocks are 32 values of K; K is a multiple of 32. Values are int8 packed four to a uint,
// 32 values = two uvec4. The 4x8-bit dot product is emitted as SPIR-V OpSDot (SPV_KHR_integer_dot_
// product) through GL_EXT_spirv_intrinsics, because Debian 12's glslc does not know
// GL_EXT_integer_dot_product yet. The host only selects this kernel when the device reports the
// shaderIntegerDotProduct feature.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require

// OpSDot (4450) with PackedVectorFormat4x8Bit (literal 0); capabilities DotProduct (6019) and
// DotProductInput4x8BitPacked (6018).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_vector_format);

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;
layout(constant_id = 2) const uint TM = 4;
layout(constant_id = 3) const uint TN = 2;

layout(push_constant) uniform Params {
    uint M;
    uint N;
    uint K;    // multiple of 32
    uint ldk;  // == K
} p;

layout(std430, binding = 0) readonly buffer Xbuf { uvec4 xq[]; };
layout(std430, binding = 1) readonly buffer Wbuf { uvec4 wq[]; };
layout(std430, binding = 2) writeonly buffer Cbuf { float c[]; };
layout(std430, binding = 3) readonly buffer XSbuf { float xscale[]; };
layout(std430, binding = 4) readonly buffer WSbuf { float wscale[]; };

int dot32(uvec4 a0, uvec4 a1, uvec4 b0, uvec4 b1) {
    int s = 0;
    [[unroll]] for (uint e = 0; e < 4; e++) s += sdot4x8(a0[e], b0[e], 0);
    [[unroll]] for (uint e = 0; e < 4; e++) s += sdot4x8(a1[e], b1[e], 0);
    return s;
}

void main() {
    const uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * TN;
    const uint m0 = (gl_WorkGroupID.y * gl_WorkGroupSize.y + gl_LocalInvocationID.y) * TM;
    const uint nb = p.K / 32;

    uint xrow[TM];
    uint wrow[TN];
    [[unroll]] for (uint i = 0; i < TM; i++) xrow[i] = min(m0 + i, p.M - 1) * nb;
    [[unroll]] for (uint j = 0; j < TN; j++) wrow[j] = min(n0 + j, p.N - 1) * nb;

    float acc[TM * TN];
    [[unroll]] for (uint a = 0; a < TM * TN; a++) acc[a] = 0.0;

    for (uint b = 0; b < nb; b++) {
        uvec4 x0[TM];
        uvec4 x1[TM];
        float sx[TM];
        [[unroll]] for (uint i = 0; i < TM; i++) {
            x0[i] = xq[(xrow[i] + b) * 2];
            x1[i] = xq[(xrow[i] + b) * 2 + 1];
            sx[i] = xscale[xrow[i] + b];
        }
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uvec4 w0 = wq[(wrow[j] + b) * 2];
            const uvec4 w1 = wq[(wrow[j] + b) * 2 + 1];
            const float sw = wscale[wrow[j] + b];
            [[unroll]] for (uint i = 0; i < TM; i++)
                acc[i * TN + j] += float(dot32(x0[i], x1[i], w0, w1)) * (sx[i] * sw);
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
