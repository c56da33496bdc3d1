// A chain of elementwise f32 ops on tensors of one shape, fused by an executable
// (plugins/vulkan/executable.h, ElementwiseProgram in op_recorder.h): one invocation per
// element loads the operands the program uses, applies its steps to an accumulator and
// stores the result once (on CPU devices an invocation takes 8 elements, VEC8 below).
// The program is specialization constants, so that the driver compiles each program to
// straight-line code: STEP_k for k < STEP_COUNT is op | a << 3 | b << 7, op 0..6 = add,
// sub, mul, div, relu, gelu, silu, and a source 0 the accumulator or 1 + the operand's
// index. `precise` keeps each step rounded as the op's own shader rounds it (no
// multiply-add contracted across two steps).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define GRID_WORKGROUP 256u
#include "activation.glsl"
#include "grid.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 1) readonly buffer O0 { float o0[]; };
layout(set = 0, binding = 2) readonly buffer O1 { float o1[]; };
layout(set = 0, binding = 3) readonly buffer O2 { float o2[]; };
layout(set = 0, binding = 4) readonly buffer O3 { float o3[]; };
layout(set = 0, binding = 5) readonly buffer O4 { float o4[]; };
layout(set = 0, binding = 6) readonly buffer O5 { float o5[]; };
layout(set = 0, binding = 7) readonly buffer O6 { float o6[]; };
layout(set = 0, binding = 8) readonly buffer O7 { float o7[]; };

layout(push_constant) uniform Push {
  uint count;
  uint y_shift;  // moves an element index into each binding (its start is aligned down)
  uint shift[8];
} p;

layout(constant_id = 0) const uint STEP_COUNT = 0u;
layout(constant_id = 1) const uint OPERANDS_USED = 0u;  // bit k: operand k is read
layout(constant_id = 2) const uint STEP_0 = 0u;
layout(constant_id = 3) const uint STEP_1 = 0u;
layout(constant_id = 4) const uint STEP_2 = 0u;
layout(constant_id = 5) const uint STEP_3 = 0u;
layout(constant_id = 6) const uint STEP_4 = 0u;
layout(constant_id = 7) const uint STEP_5 = 0u;
layout(constant_id = 8) const uint STEP_6 = 0u;
layout(constant_id = 9) const uint STEP_7 = 0u;
layout(constant_id = 10) const uint STEP_8 = 0u;
layout(constant_id = 11) const uint STEP_9 = 0u;
layout(constant_id = 12) const uint STEP_10 = 0u;
layout(constant_id = 13) const uint STEP_11 = 0u;
layout(constant_id = 14) const uint STEP_12 = 0u;
layout(constant_id = 15) const uint STEP_13 = 0u;
layout(constant_id = 16) const uint STEP_14 = 0u;
layout(constant_id = 17) const uint STEP_15 = 0u;
layout(constant_id = 18) const uint STEP_16 = 0u;
layout(constant_id = 19) const uint STEP_17 = 0u;
layout(constant_id = 20) const uint STEP_18 = 0u;
layout(constant_id = 21) const uint STEP_19 = 0u;
layout(constant_id = 22) const uint STEP_20 = 0u;
layout(constant_id = 23) const uint STEP_21 = 0u;
layout(constant_id = 24) const uint STEP_22 = 0u;
layout(constant_id = 25) const uint STEP_23 = 0u;
layout(constant_id = 26) const uint STEP_24 = 0u;
layout(constant_id = 27) const uint STEP_25 = 0u;
layout(constant_id = 28) const uint STEP_26 = 0u;
layout(constant_id = 29) const uint STEP_27 = 0u;
layout(constant_id = 30) const uint STEP_28 = 0u;
layout(constant_id = 31) const uint STEP_29 = 0u;
layout(constant_id = 32) const uint STEP_30 = 0u;
layout(constant_id = 33) const uint STEP_31 = 0u;
layout(constant_id = 34) const uint STEP_32 = 0u;
layout(constant_id = 35) const uint STEP_33 = 0u;
layout(constant_id = 36) const uint STEP_34 = 0u;
layout(constant_id = 37) const uint STEP_35 = 0u;
layout(constant_id = 38) const uint STEP_36 = 0u;
layout(constant_id = 39) const uint STEP_37 = 0u;
layout(constant_id = 40) const uint STEP_38 = 0u;
layout(constant_id = 41) const uint STEP_39 = 0u;
layout(constant_id = 42) const uint STEP_40 = 0u;
layout(constant_id = 43) const uint STEP_41 = 0u;
layout(constant_id = 44) const uint STEP_42 = 0u;
layout(constant_id = 45) const uint STEP_43 = 0u;
layout(constant_id = 46) const uint STEP_44 = 0u;
layout(constant_id = 47) const uint STEP_45 = 0u;
layout(constant_id = 48) const uint STEP_46 = 0u;
layout(constant_id = 49) const uint STEP_47 = 0u;
layout(constant_id = 50) const uint STEP_48 = 0u;
layout(constant_id = 51) const uint STEP_49 = 0u;
layout(constant_id = 52) const uint STEP_50 = 0u;
layout(constant_id = 53) const uint STEP_51 = 0u;
layout(constant_id = 54) const uint STEP_52 = 0u;
layout(constant_id = 55) const uint STEP_53 = 0u;
layout(constant_id = 56) const uint STEP_54 = 0u;
layout(constant_id = 57) const uint STEP_55 = 0u;
layout(constant_id = 58) const uint STEP_56 = 0u;
layout(constant_id = 59) const uint STEP_57 = 0u;
layout(constant_id = 60) const uint STEP_58 = 0u;
layout(constant_id = 61) const uint STEP_59 = 0u;
layout(constant_id = 62) const uint STEP_60 = 0u;
layout(constant_id = 63) const uint STEP_61 = 0u;
layout(constant_id = 64) const uint STEP_62 = 0u;
layout(constant_id = 65) const uint STEP_63 = 0u;
// 1 (CPU devices, ops/elementwise_program.cpp): an invocation takes 8 consecutive elements,
// each operand's 8 and the result's moved as two uvec4s (as shaders/vec8.glsl does; every
// shift a multiple of 8).
layout(constant_id = 66) const uint VEC8 = 0u;

layout(set = 0, binding = 0) writeonly buffer YVec { uvec4 y_vec[]; };
layout(set = 0, binding = 1) readonly buffer O0Vec { uvec4 o0_vec[]; };
layout(set = 0, binding = 2) readonly buffer O1Vec { uvec4 o1_vec[]; };
layout(set = 0, binding = 3) readonly buffer O2Vec { uvec4 o2_vec[]; };
layout(set = 0, binding = 4) readonly buffer O3Vec { uvec4 o3_vec[]; };
layout(set = 0, binding = 5) readonly buffer O4Vec { uvec4 o4_vec[]; };
layout(set = 0, binding = 6) readonly buffer O5Vec { uvec4 o5_vec[]; };
layout(set = 0, binding = 7) readonly buffer O6Vec { uvec4 o6_vec[]; };
layout(set = 0, binding = 8) readonly buffer O7Vec { uvec4 o7_vec[]; };

float load_element(uint k, uint i) {
  switch (k) {
    case 0u: return o0[i + p.shift[0]];
    case 1u: return o1[i + p.shift[1]];
    case 2u: return o2[i + p.shift[2]];
    case 3u: return o3[i + p.shift[3]];
    case 4u: return o4[i + p.shift[4]];
    case 5u: return o5[i + p.shift[5]];
    case 6u: return o6[i + p.shift[6]];
    default: return o7[i + p.shift[7]];
  }
}

// Half h (elements 4h .. 4h + 3) of operand k's 8 elements from element i (a multiple of
// 8 once shifted).
uvec4 load4(uint k, uint i, uint h) {
  switch (k) {
    case 0u: return o0_vec[((i + p.shift[0]) >> 2) + h];
    case 1u: return o1_vec[((i + p.shift[1]) >> 2) + h];
    case 2u: return o2_vec[((i + p.shift[2]) >> 2) + h];
    case 3u: return o3_vec[((i + p.shift[3]) >> 2) + h];
    case 4u: return o4_vec[((i + p.shift[4]) >> 2) + h];
    case 5u: return o5_vec[((i + p.shift[5]) >> 2) + h];
    case 6u: return o6_vec[((i + p.shift[6]) >> 2) + h];
    default: return o7_vec[((i + p.shift[7]) >> 2) + h];
  }
}

float source(uint s, float acc, float operands[8]) {
  return s == 0u ? acc : operands[s - 1u];
}

float apply(uint step, float acc, float operands[8]) {
  const float u = source((step >> 3) & 15u, acc, operands);
  const float v = source((step >> 7) & 15u, acc, operands);
  precise float r;
  switch (step & 7u) {
    case 0u: r = u + v; break;
    case 1u: r = u - v; break;
    case 2u: r = u * v; break;
    case 3u: r = u / v; break;
    case 4u: r = u < 0.0 ? 0.0 : u; break;
    case 5u: r = gelu(u); break;
    default: r = silu(u); break;
  }
  return r;
}

#define STEP(k) \
  if (k < STEP_COUNT) acc = apply(STEP_##k, acc, operands);

// The program on one element's operands.
float evaluate(float operands[8]) {
  float acc = 0.0;
  STEP(0)
  STEP(1)
  STEP(2)
  STEP(3)
  STEP(4)
  STEP(5)
  STEP(6)
  STEP(7)
  STEP(8)
  STEP(9)
  STEP(10)
  STEP(11)
  STEP(12)
  STEP(13)
  STEP(14)
  STEP(15)
  STEP(16)
  STEP(17)
  STEP(18)
  STEP(19)
  STEP(20)
  STEP(21)
  STEP(22)
  STEP(23)
  STEP(24)
  STEP(25)
  STEP(26)
  STEP(27)
  STEP(28)
  STEP(29)
  STEP(30)
  STEP(31)
  STEP(32)
  STEP(33)
  STEP(34)
  STEP(35)
  STEP(36)
  STEP(37)
  STEP(38)
  STEP(39)
  STEP(40)
  STEP(41)
  STEP(42)
  STEP(43)
  STEP(44)
  STEP(45)
  STEP(46)
  STEP(47)
  STEP(48)
  STEP(49)
  STEP(50)
  STEP(51)
  STEP(52)
  STEP(53)
  STEP(54)
  STEP(55)
  STEP(56)
  STEP(57)
  STEP(58)
  STEP(59)
  STEP(60)
  STEP(61)
  STEP(62)
  STEP(63)
  return acc;
}

float load(uint k, uint i) {
  return (OPERANDS_USED & (1u << k)) != 0u ? load_element(k, i) : 0.0;
}

void run_one(uint i) {
  float operands[8];
  for (uint k = 0u; k < 8u; ++k) operands[k] = load(k, i);
  y[i + p.y_shift] = evaluate(operands);
}

void main() {
  if (VEC8 == 0u) {
    const uint i = flat_invocation();
    if (i < p.count) run_one(i);
    return;
  }
  const uint first = 8u * flat_invocation();
  if (first >= p.count) return;
  if (first + 8u > p.count) {  // the last, partial eight
    for (uint i = first; i < p.count; ++i) run_one(i);
    return;
  }
  uvec4 words[8][2];  // operand k's element 4h + q in words[k][h][q]
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      words[k][h] = (OPERANDS_USED & (1u << k)) != 0u ? load4(k, first, h) : uvec4(0u);
    }
  }
  // Not unrolled (see unary.comp): the steps' `precise` must survive.
  for (uint h = 0u; h < 2u; ++h) {
    uvec4 result;
    for (uint q = 0u; q < 4u; ++q) {
      float operands[8];
      for (uint k = 0u; k < 8u; ++k) operands[k] = uintBitsToFloat(words[k][h][q]);
      result[q] = floatBitsToUint(evaluate(operands));
    }
    y_vec[((first + p.y_shift) >> 2) + h] = result;
  }
}
