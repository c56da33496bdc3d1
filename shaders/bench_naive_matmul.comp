// The benchmark's baseline (bench/bench_vulkan.cpp): f32 C = A B, one invocation per
// output element reading a row of A and a column of B from the buffers. Not used by ops.
#version 450

layout(local_size_x = 16, local_size_y = 16) in;

layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };

layout(push_constant) uniform Push {
  uint m;
  uint n;
  uint k;
} p;

void main() {
  const uint col = gl_GlobalInvocationID.x;
  const uint row = gl_GlobalInvocationID.y;
  if (row >= p.m || col >= p.n) return;
  float sum = 0.0;
  for (uint kk = 0u; kk < p.k; ++kk) sum = fma(a[row * p.k + kk], b[kk * p.n + col], sum);
  c[row * p.n + col] = sum;
}
