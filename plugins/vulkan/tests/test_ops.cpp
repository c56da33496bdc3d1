// The ops of the runtime tests' own plugin (phx_vulkan_test.so, built from the runtime
// with these ops and tests/*.comp instead of ops/ and shaders/), so that the runtime is
// tested whatever the real ops do:
//   relu f32  test_relu: one dispatch, or one per 2^20 elements with bind_range when the
//             tensor is larger than a binding may be;
//   silu f32  stands for an empty dispatch (test_empty), to time the runtime alone;
//   anything else is UNSUPPORTED; executables run each node on its own (no
//   ElementwisePrograms).
#include <algorithm>
#include <string>

#include "op_recorder.h"

namespace phx::vulkan {

bool op_supported(const DeviceCaps&, phx_op_id op, phx_dtype dtype) {
  return dtype == PHX_DTYPE_F32 && (op == PHX_OP_RELU || op == PHX_OP_SILU);
}

void record_op(OpRecorder& recorder, const phx_plugin_op& op) {
  if (!op_supported(recorder.caps(), op.op, op.inputs[0].dtype))
    throw Error{PHX_STATUS_UNSUPPORTED, "the test plugin runs relu and silu on f32 only"};
  const phx_plugin_tensor& x = op.inputs[0];
  if (op.op == PHX_OP_SILU) {
    recorder.dispatch("test_empty", {recorder.bind(x)}, nullptr, 0, {}, 1, 1, 1);
    return;
  }
  uint64_t n = 1;
  for (uint32_t i = 0; i < x.rank; ++i) n *= uint64_t(x.shape[i]);
  constexpr uint32_t kGroup = 64;
  constexpr uint64_t kPiece = 1 << 20;  // elements per dispatch
  for (uint64_t first = 0; first < n; first += kPiece) {
    const uint32_t count = uint32_t(std::min(kPiece, n - first));
    uint64_t skip_x = 0, skip_y = 0;
    const Binding bx = recorder.bind_range(x, first * 4, count * 4ull, &skip_x);
    const Binding by = recorder.bind_range(op.outputs[0], first * 4, count * 4ull, &skip_y);
    if (skip_x != 0 || skip_y != 0)
      throw Error{PHX_STATUS_INTERNAL, "4 MiB pieces of an aligned tensor are aligned"};
    recorder.dispatch("test_relu", {bx, by}, &count, sizeof count, {{0, kGroup}},
                      (count + kGroup - 1) / kGroup, 1, 1);
  }
}

bool runs_elementwise_programs(const DeviceCaps&) { return false; }

void record_elementwise_program(OpRecorder&, const ElementwiseProgram&, const phx_plugin_tensor*,
                                const phx_plugin_tensor&) {
  throw Error{PHX_STATUS_UNSUPPORTED, "the test plugin runs no elementwise programs"};
}

}  // namespace phx::vulkan
