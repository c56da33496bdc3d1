// The calibration math: ranges per channel (min-max, moving average of per-tensor
// min-max, or percentiles from histograms), then scales and zero points by the rules of
// docs/quantization.md.
#include "calibrator.h"

#include <phx/abi_structs.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "errors.h"

namespace phx {
namespace {

struct QuantRange {
  double qmin, qmax;
  double positive;  // the largest magnitude a symmetric range maps to (TFLite's 127)
  int32_t symmetric_zero_point;
};

QuantRange quant_range(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_U8:
      return {0.0, 255.0, 127.0, 128};
    case PHX_DTYPE_I16:
      return {-32768.0, 32767.0, 32767.0, 0};
    default:
      return {-128.0, 127.0, 127.0, 0};
  }
}

}  // namespace

// ---- Histogram -------------------------------------------------------------------------

void Calibrator::Histogram::grow_to(double value) {
  if (bins_.empty()) bins_.assign(kBins, 0);
  if (value <= top_) return;
  if (top_ == 0.0) {  // only zeros so far: they stay in bin 0 whatever the top
    top_ = value;
    return;
  }
  int64_t factor = 1;
  while (top_ * static_cast<double>(factor) < value) factor *= 2;
  std::vector<uint64_t> merged(kBins, 0);
  for (int64_t i = 0; i < kBins; ++i)
    merged[static_cast<size_t>(std::min<int64_t>(i / factor, kBins - 1))] +=
        bins_[static_cast<size_t>(i)];
  bins_ = std::move(merged);
  top_ *= static_cast<double>(factor);
}

void Calibrator::Histogram::add(const float* magnitudes, size_t count, float largest) {
  grow_to(largest);
  largest_ = std::max(largest_, static_cast<double>(largest));
  const double per_bin = top_ > 0.0 ? kBins / top_ : 0.0;
  for (size_t i = 0; i < count; ++i) {
    const auto bin = static_cast<int64_t>(static_cast<double>(magnitudes[i]) * per_bin);
    ++bins_[static_cast<size_t>(std::min<int64_t>(bin, kBins - 1))];
  }
  count_ += count;
}

double Calibrator::Histogram::quantile(double below, double target) const {
  if (below >= target || bins_.empty()) return 0.0;
  double cumulative = below;
  for (int i = 0; i < kBins; ++i) {
    cumulative += static_cast<double>(bins_[static_cast<size_t>(i)]);
    if (cumulative >= target) return std::min((i + 1) * (top_ / kBins), largest_);
  }
  return largest_;
}

// ---- Calibrator ------------------------------------------------------------------------

Calibrator::Calibrator(const phx_calibration_options& options) : options_(options) {
  // Read as ints: a caller's out-of-range value is no valid enum to load (UBSan says so).
  const int method = enum_value(options.method);
  if (method < PHX_CALIBRATION_MINMAX || method > PHX_CALIBRATION_MOVING_AVERAGE)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "method: unknown calibration method " + std::to_string(method));
  const int dtype = enum_value(options.dtype);
  if (dtype != PHX_DTYPE_I8 && dtype != PHX_DTYPE_U8 && dtype != PHX_DTYPE_I16)
    fail(PHX_STATUS_INVALID_ARGUMENT, "dtype: must be i8, u8 or i16, got " + std::to_string(dtype));
  if (!(options.percentile > 0.0 && options.percentile <= 100.0))
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "percentile: must be in (0, 100], got " + std::to_string(options.percentile));
  if (!(options.averaging_constant > 0.0 && options.averaging_constant <= 1.0))
    fail(PHX_STATUS_INVALID_ARGUMENT, "averaging_constant: must be in (0, 1], got " +
                                          std::to_string(options.averaging_constant));
}

void Calibrator::observe(const float* values, const int64_t* shape, uint32_t rank) {
  const bool per_channel = options_.channel_axis >= 0;
  const auto axis = static_cast<uint32_t>(options_.channel_axis);
  if (per_channel && axis >= rank)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the channel axis " + std::to_string(axis) +
                                          " is past the tensor's rank " + std::to_string(rank));
  int64_t outer = 1, channels = 1, inner = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    if (!per_channel || d > axis)
      inner *= shape[d];
    else if (d == axis)
      channels = shape[d];
    else
      outer *= shape[d];
  }
  if (!channels_.empty() && channels_.size() != static_cast<size_t>(channels))
    fail(PHX_STATUS_INVALID_ARGUMENT, "the tensor has " + std::to_string(channels) +
                                          " channels, earlier ones had " +
                                          std::to_string(channels_.size()));
  if (channels_.empty()) channels_.resize(static_cast<size_t>(channels));
  std::vector<float> gathered;
  gathered.reserve(static_cast<size_t>(outer * inner));
  for (int64_t c = 0; c < channels; ++c) {
    gathered.clear();
    for (int64_t o = 0; o < outer; ++o) {
      const float* row = values + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        if (std::isfinite(row[i])) gathered.push_back(row[i]);
    }
    observe_channel(channels_[static_cast<size_t>(c)], gathered);
  }
  ++observed_;
}

void Calibrator::observe_channel(Channel& c, const std::vector<float>& values) {
  if (values.empty()) return;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const double tensor_min = *lo, tensor_max = *hi;
  if (options_.method == PHX_CALIBRATION_MOVING_AVERAGE && c.seen) {
    // PyTorch's MovingAverageMinMaxObserver: the newest tensor weighs c.
    c.min += options_.averaging_constant * (tensor_min - c.min);
    c.max += options_.averaging_constant * (tensor_max - c.max);
  } else {
    c.min = c.seen ? std::min(c.min, tensor_min) : tensor_min;
    c.max = c.seen ? std::max(c.max, tensor_max) : tensor_max;
  }
  c.seen = true;
  if (options_.method != PHX_CALIBRATION_PERCENTILE) return;
  c.count += values.size();
  std::vector<float> magnitudes;
  magnitudes.reserve(values.size());
  if (options_.symmetric) {
    for (float v : values) magnitudes.push_back(std::fabs(v));
    c.magnitude.add(magnitudes.data(), magnitudes.size(),
                    static_cast<float>(std::max(-tensor_min, tensor_max)));
    return;
  }
  for (float v : values)
    if (v > 0.0f) magnitudes.push_back(v);
  c.positive.add(magnitudes.data(), magnitudes.size(),
                 static_cast<float>(std::max(tensor_max, 0.0)));
  magnitudes.clear();
  for (float v : values)
    if (v < 0.0f) magnitudes.push_back(-v);
  c.negative.add(magnitudes.data(), magnitudes.size(),
                 static_cast<float>(std::max(-tensor_min, 0.0)));
}

void Calibrator::range(const Channel& c, double* lo, double* hi) const {
  *lo = std::min(c.min, 0.0);
  *hi = std::max(c.max, 0.0);
  if (options_.method != PHX_CALIBRATION_PERCENTILE || !c.seen) return;
  // The clipping point of a tail holds options_.percentile % of all values below it.
  const double n = static_cast<double>(c.count);
  const double target = options_.percentile / 100.0 * n;
  if (options_.symmetric) {
    *hi = c.magnitude.quantile(0.0, target);
    *lo = -*hi;
    return;
  }
  *hi = c.positive.quantile(n - static_cast<double>(c.positive.count()), target);
  *lo = -c.negative.quantile(n - static_cast<double>(c.negative.count()), target);
}

void Calibrator::compute(float* scales, int32_t* zero_points) const {
  const QuantRange q = quant_range(options_.dtype);
  for (size_t i = 0; i < channel_count(); ++i) {
    double lo = 0.0, hi = 0.0;
    if (!channels_.empty()) range(channels_[i], &lo, &hi);
    if (options_.symmetric) {
      const auto scale = static_cast<float>(std::max(-lo, hi) / q.positive);
      scales[i] = scale > 0.0f ? scale : 1.0f;
      zero_points[i] = q.symmetric_zero_point;
      continue;
    }
    const auto scale = static_cast<float>((hi - lo) / (q.qmax - q.qmin));
    scales[i] = scale > 0.0f ? scale : 1.0f;
    // The real 0 maps to an integer exactly (ONNX Runtime, PyTorch), ties to even.
    const double zero_point = std::nearbyint(q.qmin - lo / static_cast<double>(scales[i]));
    zero_points[i] = static_cast<int32_t>(std::clamp(zero_point, q.qmin, q.qmax));
  }
}

}  // namespace phx
