// The calibration math behind phx_calibrator (docs/quantization.md, "Calibration"):
// ranges gathered from observed f32 tensors, per tensor or per channel, turned into
// scales and zero points. Independent of handles and devices.
#pragma once

#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace phx {

class Calibrator {
 public:
  // Validates options (already normalized to the current struct layout, defaults
  // filled); throws via fail(PHX_STATUS_INVALID_ARGUMENT, ...) naming the bad field.
  explicit Calibrator(const phx_calibration_options& options);

  // Adds the values of a dense row-major f32 tensor; non-finite values are ignored.
  // Throws INVALID_ARGUMENT when the channel axis is past rank or the channel count
  // differs from earlier tensors; std::bad_alloc when out of memory.
  void observe(const float* values, const int64_t* shape, uint32_t rank);

  bool empty() const { return observed_ == 0; }
  size_t channel_count() const { return channels_.empty() ? 1 : channels_.size(); }

  // channel_count() entries each.
  void compute(float* scales, int32_t* zero_points) const;

  // A histogram of magnitudes (|x|, or one tail of x) over [0, top), kBins bins; top
  // doubles (adjacent bins merged) whenever a larger value arrives, so counts are
  // never spread by interpolation.
  class Histogram {
   public:
    static constexpr int kBins = 2048;
    void add(const float* magnitudes, size_t count, float largest);
    // The smallest bin edge v such that below + (values of the histogram <= v) is at
    // least target; capped at the largest value added.
    double quantile(double below, double target) const;
    uint64_t count() const { return count_; }

   private:
    void grow_to(double value);
    std::vector<uint64_t> bins_;
    double top_ = 0.0;
    double largest_ = 0.0;
    uint64_t count_ = 0;
  };

 private:
  struct Channel {
    bool seen = false;  // a finite value was observed
    double min = 0.0, max = 0.0;
    Histogram magnitude;  // PERCENTILE, symmetric: |x|
    Histogram positive;   // PERCENTILE, asymmetric: x > 0
    Histogram negative;   // PERCENTILE, asymmetric: -x for x < 0
    uint64_t count = 0;   // PERCENTILE: finite values observed
  };

  void observe_channel(Channel& c, const std::vector<float>& values);
  // The clipping range [lo, hi] of a channel (lo <= 0 <= hi).
  void range(const Channel& c, double* lo, double* hi) const;

  phx_calibration_options options_;
  std::vector<Channel> channels_;  // one per channel; empty until the first observe
  uint64_t observed_ = 0;          // tensors observed
};

}  // namespace phx
