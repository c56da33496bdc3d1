#include <phx/op_counts.h>
#include <phynexus/plugin.h>

#include <algorithm>

namespace phx {
namespace {

double elements(const OperandView& v) {
  double n = 1;
  for (uint32_t d = 0; d < v.rank; ++d) n *= double(v.shape[d]);
  return n;
}

// Elements of the weight per entry of its first dimension.
double per_first(const OperandView& weight) {
  return weight.rank > 0 && weight.shape[0] > 0 ? elements(weight) / double(weight.shape[0]) : 0;
}

}  // namespace

OpCounts op_counts(phx_op_id op, const void* params, std::span<const OperandView> inputs,
                   std::span<const OperandView> outputs) {
  OpCounts counts;
  double largest = 0;
  for (const OperandView& v : inputs) {
    if (v.shape == nullptr) continue;
    counts.bytes += uint64_t(elements(v)) * phx_plugin_dtype_size(v.dtype);
    largest = std::max(largest, elements(v));
  }
  for (const OperandView& v : outputs) {
    counts.bytes += uint64_t(elements(v)) * phx_plugin_dtype_size(v.dtype);
    largest = std::max(largest, elements(v));
  }
  const double out = outputs.empty() ? 0 : elements(outputs[0]);
  switch (op) {
    case PHX_OP_MATMUL:
    case PHX_OP_QMATMUL: {  // both take phx_matmul_params
      const OperandView& a = inputs[0];
      const auto* p = static_cast<const phx_matmul_params*>(params);
      const bool transposed = p != nullptr && p->transpose_a != 0 && a.rank >= 2;
      const int64_t k = a.rank == 0 ? 1 : a.shape[a.rank - (transposed ? 2 : 1)];
      counts.flops = 2 * out * double(k);
      break;
    }
    case PHX_OP_CONV2D:
    case PHX_OP_QCONV2D:  // the weight [C_out, ...] is input 1 of both
      counts.flops = 2 * out * per_first(inputs[1]);
      break;
    case PHX_OP_CONV_TRANSPOSE2D:  // the weight is [C_in, C_out / groups, KH, KW]
      counts.flops = 2 * elements(inputs[0]) * per_first(inputs[1]);
      break;
    case PHX_OP_ATTENTION: {  // q [..., Sq, D], k [..., Skv, D], out [..., Sq, Dv]
      const OperandView& k = inputs[1];
      const double skv = k.rank >= 2 ? double(k.shape[k.rank - 2]) : 0;
      counts.flops = 2 * skv * (elements(inputs[0]) + out);
      break;
    }
    case PHX_OP_MAX_POOL:
    case PHX_OP_AVG_POOL: {  // the kernel covers the spatial dimensions, 2 on from x's
      const auto* p = static_cast<const phx_pool_params*>(params);
      double window = 1;
      for (uint32_t d = 0; p != nullptr && d + 2 < inputs[0].rank && d < 3; ++d)
        window *= double(p->kernel[d]);
      counts.flops = out * (window + (op == PHX_OP_AVG_POOL ? 1 : 0));
      break;
    }
    default:
      counts.flops = largest;
      break;
  }
  return counts;
}

}  // namespace phx
