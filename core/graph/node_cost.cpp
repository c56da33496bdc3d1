#include "node_cost.h"

#include <phx/op_counts.h>

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

OperandView view_of(const std::vector<Operand>& operands, phx_value v) {
  if (v == PHX_VALUE_NONE) return {};
  const Operand& o = operands[v];
  return {o.dtype, o.rank, o.shape};
}

double nanoseconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return double(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

OpCounts counts_of(const Node& node, const std::vector<Operand>& operands) {
  std::vector<OperandView> in, out;
  for (phx_value v : node.inputs) in.push_back(view_of(operands, v));
  for (phx_value v : node.outputs) out.push_back(view_of(operands, v));
  return op_counts(node.op, node.params_ptr(), in, out);
}

}  // namespace

double node_flops(const Node& node, const std::vector<Operand>& operands) {
  return counts_of(node, operands).flops;
}

uint64_t roofline_ns(const Node& node, const std::vector<Operand>& operands) {
  const OpCounts counts = counts_of(node, operands);
  return uint64_t(kNominalLaunchNs + counts.flops / kNominalFlopsPerNs +
                  double(counts.bytes) / kNominalBytesPerNs);
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
