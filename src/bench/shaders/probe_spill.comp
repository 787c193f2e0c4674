// --probe-limits: a kernel whose register demand is set by NACC accumulators per invocation.
// NACC = 128 mimics llama.cpp's large (128x128) tile, which Mesa's Valhall compiler spills;
// NACC = 8 is the probe that must not spill (the panvk lab, Mali-G610: 0 spills at 8 and 12,
// spills from 16 on, 69:85 at 32). It also stages 17 KiB in shared memory like the large quantised tile, so panvk sizes a workgroup-local (WLS) buffer for it.
// The bench only records it into command buffers (never submits it): what is measured is the
// memory the driver reserves per command buffer for thread-local storage (spills) and WLS.
#version 450
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint NACC = 128;

layout(std430, binding = 0) readonly buffer In { vec2 src[]; };
layout(std430, binding = 2) writeonly buffer Out { float dst[]; };

shared vec2 stage[2176];

void main() {
    const uint lid = gl_LocalInvocationIndex;
    float acc[NACC];
    [[unroll]] for (uint i = 0; i < NACC; i++) acc[i] = 0.0;
    for (uint kb = 0; kb < 64; kb++) {
        stage[lid] = src[gl_GlobalInvocationID.x * 64 + kb];
        barrier();
        [[unroll]] for (uint s = 0; s < 16; s++) {
            const vec2 v = stage[(lid + s * 7) & 2047u];
            [[unroll]] for (uint i = 0; i < NACC; i++)
                acc[i] = fma(v.x, stage[(i * 13 + s) & 2047u].y, fma(v.y, float(i + 1), acc[i]));
        }
        barrier();
    }
    float r = 0.0;
    [[unroll]] for (uint i = 0; i < NACC; i++) r += acc[i] * float(i + 1);
    dst[gl_GlobalInvocationID.x] = r;
}
