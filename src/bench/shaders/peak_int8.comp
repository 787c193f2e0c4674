// vkpeak-style int8 dot-product peak: every invocation runs 8 x 4 independent chains of
// saturating 4x8-bit dot-accumulate (SPIR-V OpSDotAccSat, as vkpeak's int8 test does: the
// saturation keeps compilers from folding the chain into a multiply). One dot = 4 MACs = 8 ops;
// each loop iteration does 4 (unrolled) x 8 x 4 dots = 1024 ops per invocation.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require

// OpSDotAccSat (4453), PackedVectorFormat4x8Bit; capabilities DotProduct, DotProductInput4x8BitPacked.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4453)
int sdot4x8_acc_sat(uint a, uint b, int acc, spirv_literal int packed_vector_format);

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform Params {
    uint iters;
    uint a;  // packed int8 operands, passed in so nothing is constant at compile time
    uint b;
    uint pad;
} p;

layout(std430, binding = 2) writeonly buffer Out { int o[]; };

void main() {
    const uint s = gl_GlobalInvocationID.x;
    ivec4 acc[8];
    uvec4 lhs[8];
    [[unroll]] for (uint j = 0; j < 8; j++) {
        acc[j] = ivec4(int(s + j));
        lhs[j] = uvec4(p.a + j, p.a ^ j, p.a + 2 * j, p.a ^ (3 * j));
    }
    for (uint i = 0; i < p.iters; i++) {
        [[unroll]] for (uint u = 0; u < 4; u++)
            [[unroll]] for (uint j = 0; j < 8; j++)
                [[unroll]] for (uint e = 0; e < 4; e++)
                    acc[j][e] = sdot4x8_acc_sat(lhs[j][e], p.b, acc[j][e], 0);
    }
    ivec4 sum = ivec4(0);
    [[unroll]] for (uint j = 0; j < 8; j++) sum += acc[j];
    o[gl_GlobalInvocationID.x] = sum.x + sum.y + sum.z + sum.w;
}
