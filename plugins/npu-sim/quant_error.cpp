#include "quant_error.h"

#include <cmath>
#include <vector>

namespace phx::npu_sim {
namespace {

using kernels::HostTensor;

// An f32 tensor in host memory that owns its values.
struct F32 {
  std::vector<float> values;
  HostTensor view;
};

F32 f32_like(const HostTensor& t) {
  F32 f;
  f.values.resize(static_cast<size_t>(kernels::element_count(t)));
  f.view = t;
  f.view.dtype = PHX_DTYPE_F32;
  f.view.data = f.values.data();
  return f;
}

F32 f32_vector(std::vector<float> values) {
  F32 f;
  f.values = std::move(values);
  f.view.dtype = PHX_DTYPE_F32;
  f.view.rank = 1;
  f.view.shape[0] = static_cast<int64_t>(f.values.size());
  for (uint32_t d = 1; d < PHX_MAX_RANK; ++d) f.view.shape[d] = 1;
  f.view.data = f.values.data();
  return f;
}

bool ok(phx_status status) { return status == PHX_STATUS_OK; }

// q as f32: (q - zero_point) * scale, per channel along axis when scale has several values.
bool dequantize(const HostTensor& q, const HostTensor& scale, const HostTensor& zero_point,
                int32_t axis, F32& out, kernels::ThreadPool& pool) {
  out = f32_like(q);
  if (q.dtype == PHX_DTYPE_F32) {  // already dequantized (qmatmul's f32 output)
    const auto* v = static_cast<const float*>(q.data);
    out.values.assign(v, v + out.values.size());
    return true;
  }
  phx_quantize_params params = PHX_QUANTIZE_PARAMS_INIT;
  params.axis = axis;
  const HostTensor in[3] = {q, scale, zero_point};
  return ok(kernels::run_op(PHX_OP_DEQUANTIZE, &params, in, 3, &out.view, 1, pool));
}

float scalar(const HostTensor& t) { return *static_cast<const float*>(t.data); }

// a_scale * b_scale: the scale of the int32 accumulators, [1] or one per channel.
F32 accumulator_scale(const HostTensor& a_scale, const HostTensor& b_scale) {
  const auto* b = static_cast<const float*>(b_scale.data);
  std::vector<float> s(static_cast<size_t>(kernels::element_count(b_scale)));
  for (size_t i = 0; i < s.size(); ++i) s[i] = scalar(a_scale) * b[i];
  return f32_vector(std::move(s));
}

double relative_error(const std::vector<float>& got, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(got[i]) - double(ref[i]);
    diff += d * d;
    norm += double(ref[i]) * ref[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : NAN;
}

// qmatmul and qconv2d: in holds all nine inputs.
std::optional<double> product_error(phx_op_id op, const void* params, const HostTensor* in,
                                    const HostTensor& out, kernels::ThreadPool& pool) {
  const bool conv = op == PHX_OP_QCONV2D;
  const HostTensor &a = in[0], &b = in[1], &a_scale = in[2], &a_zp = in[3], &b_scale = in[4],
                   &b_zp = in[5], &bias = in[6], &y_scale = in[7], &y_zp = in[8];
  // The host fills in defaults; the kernels' own defaults stand in should it pass none.
  const phx_matmul_params mm = params != nullptr && !conv
                                   ? *static_cast<const phx_matmul_params*>(params)
                                   : phx_matmul_params PHX_MATMUL_PARAMS_INIT;
  const phx_conv2d_params cv = params != nullptr && conv
                                   ? *static_cast<const phx_conv2d_params*>(params)
                                   : phx_conv2d_params PHX_CONV2D_PARAMS_INIT;
  // The axis of b's channels (one scale per output column or per output channel), and
  // that of the output's.
  const int32_t b_axis = conv ? 0 : (mm.transpose_b ? 0 : 1);
  const int32_t out_axis =
      conv ? (cv.layout == PHX_LAYOUT_NHWC ? 3 : 1) : static_cast<int32_t>(out.rank) - 1;
  const F32 acc_scale = accumulator_scale(a_scale, b_scale);
  F32 af, bf, bias_f, got, ref;
  if (!dequantize(a, a_scale, a_zp, 1, af, pool) || !dequantize(b, b_scale, b_zp, b_axis, bf, pool))
    return std::nullopt;
  if (bias.data != nullptr && !dequantize(bias, acc_scale.view, HostTensor{}, 0, bias_f, pool))
    return std::nullopt;
  const bool requantized = out.dtype != PHX_DTYPE_I32 && out.dtype != PHX_DTYPE_F32;
  if (!dequantize(out, requantized ? y_scale : acc_scale.view, requantized ? y_zp : HostTensor{},
                  out_axis, got, pool))
    return std::nullopt;
  ref = f32_like(out);
  const HostTensor ref_in[3] = {af.view, bf.view,
                                bias.data != nullptr ? bias_f.view : HostTensor{}};
  const void* ref_params = conv ? static_cast<const void*>(&cv) : static_cast<const void*>(&mm);
  if (!ok(kernels::run_op(conv ? PHX_OP_CONV2D : PHX_OP_MATMUL, ref_params, ref_in, 3, &ref.view, 1,
                          pool)))
    return std::nullopt;
  const double error = relative_error(got.values, ref.values);
  return std::isnan(error) ? std::nullopt : std::optional<double>(error);
}

}  // namespace

std::optional<double> quant_error_rel(phx_op_id op, const void* params, const HostTensor* inputs,
                                      size_t input_count, const HostTensor* outputs,
                                      size_t output_count, kernels::ThreadPool& pool) {
  try {
    HostTensor in[PHX_MAX_OP_INPUTS];
    for (size_t i = 0; i < input_count && i < PHX_MAX_OP_INPUTS; ++i) in[i] = inputs[i];
    switch (op) {
      case PHX_OP_QMATMUL:
      case PHX_OP_QCONV2D:
        return product_error(op, params, in, outputs[0], pool);
      case PHX_OP_QUANTIZE:
      case PHX_OP_DYNAMIC_QUANTIZE: {
        // quantize: scale and zero point are inputs 1 and 2; dynamic: outputs 1 and 2.
        const bool dynamic = op == PHX_OP_DYNAMIC_QUANTIZE;
        if (dynamic && output_count < 3) return std::nullopt;
        const HostTensor& scale = dynamic ? outputs[1] : in[1];
        const HostTensor& zp = dynamic ? outputs[2] : in[2];
        const int32_t axis = dynamic || params == nullptr
                                 ? 1
                                 : static_cast<const phx_quantize_params*>(params)->axis;
        F32 got;
        if (!dequantize(outputs[0], scale, zp, axis, got, pool)) return std::nullopt;
        const auto* x = static_cast<const float*>(in[0].data);
        const double error =
            relative_error(got.values, std::vector<float>(x, x + got.values.size()));
        return std::isnan(error) ? std::nullopt : std::optional<double>(error);
      }
      default:
        return std::nullopt;
    }
  } catch (const std::bad_alloc&) {  // the host copies; the op itself has succeeded
    return std::nullopt;
  }
}

}  // namespace phx::npu_sim
