// vkpeak-style arithmetic peak: every invocation runs 8 independent vec4 FMA chains, so the
// measured rate is the FMA throughput, not latency or memory. Each loop iteration does
// 4 (unrolled) x 8 (chains) x 4 (lanes) FMAs = 256 FLOP per invocation; the host counts them.
// The multiplier is just below 1 and the addend small, so values stay finite and normal.
// Built plain (fp32) and with -DF16 (f16vec4: packed fp16 maths on Mali).
#version 450
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define VEC4 f16vec4
#else
#define VEC4 vec4
#endif

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform Params {
    uint iters;
    float mul;   // e.g. 0.999: passed in so the compiler cannot fold the chains
    float add;
    uint pad;
} p;

layout(std430, binding = 2) writeonly buffer Out { float o[]; };

void main() {
    const float s = float(gl_GlobalInvocationID.x & 255u) * (1.0 / 256.0);
    VEC4 acc[8];
    [[unroll]] for (uint j = 0; j < 8; j++) acc[j] = VEC4(s + float(j) * 0.125);
    const VEC4 m = VEC4(p.mul);
    const VEC4 a = VEC4(p.add);
    for (uint i = 0; i < p.iters; i++) {
        [[unroll]] for (uint u = 0; u < 4; u++)
            [[unroll]] for (uint j = 0; j < 8; j++) acc[j] = fma(acc[j], m, a);
    }
    VEC4 sum = VEC4(0.0);
    [[unroll]] for (uint j = 0; j < 8; j++) sum += acc[j];
    o[gl_GlobalInvocationID.x] = float(sum.x + sum.y + sum.z + sum.w);
}
