// The runtime tests' kernel: y = max(x, 0) over n f32 elements, n in the push constants,
// the workgroup size a specialization constant (so that pipelines per constant are used).
#version 450

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint n; } push;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < push.n) y[i] = max(x[i], 0.0);
}
