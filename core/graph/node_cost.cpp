#include "node_cost.h"

#include <algorithm>
#include <chrono>

#include "transfer.h"

namespace phx::graph {
namespace {

constexpr double kNominalFlopsPerNs = 50;     // 50 GFLOP/s
constexpr double kNominalBytesPerNs = 10;     // 10 GB/s
constexpr double kNominalLaunchNs = 1000;     // one op's dispatch
constexpr double kHostCopyLatencyNs = 20000;  // the deterministic copy model
constexpr double kHostCopyBytesPerNs = 4;

double elements(const Operand& operand) { return double(element_count(operand)); }

double flops(const Node& node, const std::vector<Operand>& operands) {
  const Operand& out = operands[node.outputs[0]];
  const Operand& a = operands[node.inputs[0]];
  switch (node.op) {
    case PHX_OP_MATMUL:
    case PHX_OP_QMATMUL: {  // both take phx_matmul_params
      const bool transposed = node.params.matmul.transpose_a != 0;
      const int64_t k = a.rank < 2 ? 1 : a.shape[a.rank - (transposed ? 2 : 1)];
      return 2 * elements(out) * double(k);
    }
    case PHX_OP_CONV2D:
    case PHX_OP_QCONV2D: {  // the weight [C_out, C_in / groups, kh, kw] is input 1 of both
      const Operand& w = operands[node.inputs[1]];
      return 2 * elements(out) * double(w.shape[1] * w.shape[2] * w.shape[3]);
    }
    case PHX_OP_CONV_TRANSPOSE2D: {  // each input pixel meets C_out / groups kernels
      const Operand& w = operands[node.inputs[1]];
      return 2 * elements(a) * double(w.shape[1] * w.shape[2] * w.shape[3]);
    }
    case PHX_OP_ATTENTION: {
      const Operand& k = operands[node.inputs[1]];
      return 4 * elements(out) * double(k.shape[k.rank - 2]);
    }
    default:
      return 4 * elements(out);
  }
}

double nanoseconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return double(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

}  // namespace

uint64_t roofline_ns(const Node& node, const std::vector<Operand>& operands) {
  double bytes = 0;
  auto add = [&](phx_value v) {
    if (v != PHX_VALUE_NONE) bytes += elements(operands[v]) * phx_dtype_size(operands[v].dtype);
  };
  std::for_each(node.inputs.begin(), node.inputs.end(), add);
  std::for_each(node.outputs.begin(), node.outputs.end(), add);
  return uint64_t(kNominalLaunchNs + flops(node, operands) / kNominalFlopsPerNs +
                  bytes / kNominalBytesPerNs);
}

CopyCost copy_cost(Context& context, Device& from, Device& to, bool deterministic) {
  if (&from == &to) return {};
  if (deterministic) return {kHostCopyLatencyNs, 1 / kHostCopyBytesPerNs};
  constexpr int64_t kSmall = 4096, kLarge = 1 << 20;
  auto best_of_three = [&](int64_t bytes) {
    Tensor& src = context.create_tensor(from, PHX_DTYPE_U8, 1, &bytes);
    Tensor* dst = nullptr;
    double best = 1e300;
    try {
      dst = &context.create_tensor(to, PHX_DTYPE_U8, 1, &bytes);
      from.wait_for_streams();
      to.wait_for_streams();
      for (int i = 0; i < 3; ++i)
        best = std::min(best, nanoseconds_of([&] { copy_tensor(*dst, src); }));
    } catch (...) {
      if (dst != nullptr) context.destroy_tensor(*dst);
      context.destroy_tensor(src);
      throw;
    }
    context.destroy_tensor(*dst);
    context.destroy_tensor(src);
    return best;
  };
  const double small = best_of_three(kSmall), large = best_of_three(kLarge);
  return {small, std::max(0.0, (large - small) / double(kLarge - kSmall))};
}

}  // namespace phx::graph
