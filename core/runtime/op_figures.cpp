#include "op_figures.h"

namespace phx {

OpFigures op_figures(phx_op_id op, const void* params, const Tensor* const* inputs,
                     size_t input_count, const Tensor* const* outputs, size_t output_count) {
  OpFigures figures;
  for (size_t i = 0; i < input_count; ++i)
    if (inputs[i] != nullptr) figures.bytes += inputs[i]->byte_size;
  for (size_t i = 0; i < output_count; ++i) figures.bytes += outputs[i]->byte_size;

  const Tensor& out = *outputs[0];
  const Tensor* a = input_count > 0 ? inputs[0] : nullptr;
  const Tensor* b = input_count > 1 ? inputs[1] : nullptr;
  const double out_elements = double(out.element_count);
  switch (op) {
    case PHX_OP_MATMUL:
    case PHX_OP_QMATMUL: {  // both take phx_matmul_params; K is a's last (or, transposed,
                            // second last) dimension
      const auto* matmul = static_cast<const phx_matmul_params*>(params);
      const bool transposed = matmul != nullptr && matmul->transpose_a != 0;
      const int64_t k = a->rank < 2 ? a->shape[0] : a->shape[a->rank - (transposed ? 2 : 1)];
      figures.flops = 2 * out_elements * double(k);
      break;
    }
    case PHX_OP_CONV2D:
    case PHX_OP_QCONV2D: {  // per output element, C_in / groups x KH x KW multiply-adds:
                            // the weight's elements per output channel
      const double per_channel = double(b->element_count) / double(b->shape[0]);
      figures.flops = 2 * out_elements * per_channel;
      break;
    }
    case PHX_OP_CONV_TRANSPOSE2D: {  // each input element meets C_out / groups x KH x KW
      const double per_input = double(b->element_count) / double(b->shape[0]);
      figures.flops = 2 * double(a->element_count) * per_input;
      break;
    }
    case PHX_OP_ATTENTION: {  // q k^T and its product with v: 2 x 2 x Skv per output element
      figures.flops = 4 * out_elements * double(b->shape[b->rank - 2]);
      break;
    }
    default:
      figures.flops = out_elements;
  }
  return figures;
}

}  // namespace phx
