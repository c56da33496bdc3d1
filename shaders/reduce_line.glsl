// A workgroup-wide f32 sum and max for the ops that give a workgroup one line of
// elements (softmax, layer_norm, rms_norm). Every invocation must call them (barriers).

#ifndef REDUCE_LINE_GLSL
#define REDUCE_LINE_GLSL

#define LINE_WORKGROUP 64u

shared float line_partial[LINE_WORKGROUP];

float line_sum(float v) {
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
