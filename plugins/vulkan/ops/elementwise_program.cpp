// Fused chains of elementwise f32 ops (shaders/elementwise_program.comp): one dispatch
// over every element, the program given as specialization constants.
#include <algorithm>
#include <string>
#include <vector>

#include "op_util.h"

namespace phx::vulkan {
namespace {

constexpr uint64_t kWorkgroup = 256;

uint32_t op_code(phx_op_id op) {
  switch (op) {
    case PHX_OP_ADD:
      return 0;
    case PHX_OP_SUB:
      return 1;
    case PHX_OP_MUL:
      return 2;
    case PHX_OP_DIV:
      return 3;
    case PHX_OP_RELU:
      return 4;
    case PHX_OP_GELU:
      return 5;
    case PHX_OP_SILU:
      return 6;
    default:
      ops::fail_unsupported("elementwise_program: op " + std::to_string(op) +
                            " is not elementwise");
  }
}

// 0: the accumulator; 1 + k: operand k.
uint32_t source_code(uint8_t source) {
  return source == ElementwiseProgram::kAccumulator ? 0u : 1u + source;
}

}  // namespace

bool runs_elementwise_programs(const DeviceCaps& caps) {
  return caps.max_push_constant_bytes >= 40 && ops::device_holds(caps, PHX_DTYPE_F32);
}

void record_elementwise_program(OpRecorder& recorder, const ElementwiseProgram& program,
                                const phx_plugin_tensor* operands, const phx_plugin_tensor& y) {
  struct Push {
    uint32_t count, y_shift, shift[ElementwiseProgram::kMaxOperands];
  };
  const uint64_t total = ops::element_count(y);
  if (program.steps.empty() || program.steps.size() > ElementwiseProgram::kMaxSteps ||
      program.operand_count == 0 || program.operand_count > ElementwiseProgram::kMaxOperands)
    throw Error{PHX_STATUS_INTERNAL,
                "elementwise_program: " + std::to_string(program.steps.size()) + " steps, " +
                    std::to_string(program.operand_count) + " operands"};
  if (total == 0) return;
  if (total > ops::max_grid_groups(recorder.caps()) * kWorkgroup || total > UINT32_MAX)
    ops::fail_unsupported("elementwise_program: " + std::to_string(total) +
                          " elements, more than one dispatch covers");
  Push push = {};
  push.count = static_cast<uint32_t>(total);
  Binding bindings[1 + ElementwiseProgram::kMaxOperands];
  const ops::ElementRange yr = ops::bind_elements(recorder, y, 0, total);
  bindings[0] = yr.binding;
  push.y_shift = yr.shift;
  uint32_t used = 0;
  for (uint32_t k = 0; k < ElementwiseProgram::kMaxOperands; ++k) {
    // Operands past the program's are bound to the first one: every binding must be valid.
    const ops::ElementRange r =
        ops::bind_elements(recorder, operands[k < program.operand_count ? k : 0], 0, total);
    bindings[1 + k] = r.binding;
    push.shift[k] = r.shift;
  }
  std::vector<OpRecorder::SpecConstant> constants = {
      {0, static_cast<uint32_t>(program.steps.size())}, {1, 0}};
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ElementwiseProgram::Step& s = program.steps[i];
    for (uint8_t source : {s.a, s.b})
      if (source != ElementwiseProgram::kAccumulator) used |= 1u << source;
    constants.push_back({static_cast<uint32_t>(2 + i),
                         op_code(s.op) | source_code(s.a) << 3 | source_code(s.b) << 7});
  }
  constants[1].value = used;
  // On CPU devices 8 elements per invocation, where every binding's first element lies at
  // a multiple of 8 (elementwise_program.comp's VEC8).
  const DeviceCaps& caps = recorder.caps();
  const bool eight = ops::moves_eights(caps, PHX_DTYPE_F32) && push.y_shift % 8 == 0 &&
                     std::all_of(std::begin(push.shift), std::end(push.shift),
                                 [](uint32_t s) { return s % 8 == 0; });
  constants.push_back({66, eight ? 1u : 0u});
  const uint64_t invocations = eight ? (total + 7) / 8 : total;
  const uint64_t groups = (invocations + kWorkgroup - 1) / kWorkgroup;
  const uint64_t x = std::min<uint64_t>(groups, recorder.caps().max_workgroup_count[0]);
  recorder.dispatch("elementwise_program", bindings, &push, sizeof push, constants,
                    static_cast<uint32_t>(x), static_cast<uint32_t>((groups + x - 1) / x), 1);
}

}  // namespace phx::vulkan
