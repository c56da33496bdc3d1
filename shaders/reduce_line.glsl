// A workgroup-wide f32 sum and max for the ops that give a workgroup one line of
// elements (softmax, layer_norm, rms_norm). Every invocation must call them (barriers).
//
// On CPU devices (LINE_PER_INVOCATION, set by ops/softmax_norm.cpp) an invocation takes a
// whole line instead, and the sum and max are its own: lavapipe runs a barrier as a switch
// through every invocation of the workgroup, and a line of 49 (Swin's attention) paid
// fourteen of them, 50 ns per element. The including shader loops over its line as
//   for (uint i = line_first(); i < n; i += line_step())
// and takes its line from line_id(); GRID_WORKGROUP must be LINE_WORKGROUP.

#ifndef REDUCE_LINE_GLSL
#define REDUCE_LINE_GLSL

#define LINE_WORKGROUP 64u

layout(constant_id = 0) const uint LINE_PER_INVOCATION = 0u;

uint line_id() { return LINE_PER_INVOCATION != 0u ? flat_invocation() : flat_workgroup(); }
uint line_first() { return LINE_PER_INVOCATION != 0u ? 0u : gl_LocalInvocationID.x; }
uint line_step() { return LINE_PER_INVOCATION != 0u ? 1u : LINE_WORKGROUP; }

shared float line_partial[LINE_WORKGROUP];

float line_sum(float v) {
  if (LINE_PER_INVOCATION != 0u) return v;
  const uint lid = gl_LocalInvocationID.x;
  barrier();  // a previous call's readers are done with line_partial
  line_partial[lid] = v;
  barrier();
  for (uint half_size = LINE_WORKGROUP / 2u; half_size > 0u; half_size /= 2u) {
    if (lid < half_size) line_partial[lid] += line_partial[lid + half_size];
    barrier();
  }
  return line_partial[0];
}

// The maximum, NaN if any value is NaN.
float line_max(float v) {
  if (LINE_PER_INVOCATION != 0u) return v;
  const uint lid = gl_LocalInvocationID.x;
  barrier();
  line_partial[lid] = v;
  barrier();
  for (uint half_size = LINE_WORKGROUP / 2u; half_size > 0u; half_size /= 2u) {
    if (lid < half_size) {
      const float o = line_partial[lid + half_size];
      if (isnan(o) || o > line_partial[lid]) line_partial[lid] = o;
    }
    barrier();
  }
  return line_partial[0];
}

#endif  // REDUCE_LINE_GLSL
