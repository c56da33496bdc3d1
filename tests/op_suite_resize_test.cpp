// The conformance suite of resize (API 0.3), on every device found at run time, through
// the public C API, against float64 references computed here as ONNX's reference
// implementation of Resize computes them (onnx/backend/test/case/node/resize.py): each
// output coordinate mapped to x's by the coordinate transform, then the two neighbours
// of that coordinate in every dimension (x's edge past its ends) weighted by the mode's
// coefficients, the weights multiplied across dimensions. A device that does not claim
// resize for a dtype must answer PHX_STATUS_UNSUPPORTED.
//
// Tolerances:
// - nearest picks values: exact (tolerance 0; the coordinates are computed in double as
//   the reference does, so ties round alike).
// - linear, one output: a weighted sum of x over the 2^rank corners of its cell. However
//   the device orders the sum (one dimension at a time, as the CPU, or all at once), each
//   dimension costs at most its two weights rounded to f32 (u each), their products and
//   the sum (2u), relative to S = sum |weight * x| over the corners; so (3 rank + 1) u S
//   with u = 2^-24, plus the final rounding to the output's dtype.

#include <cmath>

#include "op_suite.h"

using namespace phx_test;

namespace {

// A suite name of its own: phx-conformance links every suite file, and each file's
// instantiation would otherwise run the OpSuite tests of the others again.
using ResizeTest = OpSuite;

struct ResizeCase {
  Shape x, out;
  std::vector<float> scales;  // empty: every scale 0 (output / input)
};

std::vector<ResizeCase> resize_cases() {
  return {
      {{5}, {8}, {}},
      {{3, 5}, {7, 4}, {}},
      {{1, 2, 4, 4}, {1, 2, 8, 8}, {1.0f, 1.0f, 2.0f, 2.0f}},
      {{1, 1, 4, 4}, {1, 1, 2, 2}, {1.0f, 1.0f, 0.6f, 0.6f}},  // ONNX's downsample tests
      {{1, 1, 4, 4}, {1, 1, 3, 1}, {}},  // an output dimension of 1 (pytorch_half_pixel's 0)
      {{2, 3, 5}, {3, 3, 2}, {}},        // the batch dimension resized too
      {{2, 1, 2, 1, 2, 1, 2, 3}, {1, 2, 3, 1, 2, 2, 1, 4}, {}},  // rank 8
      {{2, 3}, {2, 3}, {}},                                      // every dimension unchanged
      {{1, 3, 64, 64}, {1, 3, 128, 96}, {}},                     // enough rows for threads
  };
}

// ONNX's coordinate transform (the reference's get_original_coordinate), with the
// reference's length_resized = scale * in.
double source_coordinate(phx_resize_coordinates mode, int64_t o, int64_t in, double scale) {
  const double resized = scale * static_cast<double>(in), x = static_cast<double>(o);
  switch (mode) {
    case PHX_RESIZE_ASYMMETRIC:
      return x / scale;
    case PHX_RESIZE_ALIGN_CORNERS:
      return resized == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
    case PHX_RESIZE_PYTORCH_HALF_PIXEL:
      return resized == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
    case PHX_RESIZE_HALF_PIXEL:
      break;
  }
  return (x + 0.5) / scale - 0.5;
}

// The reference's coefficients of the neighbours floor(c) and floor(c) + 1 of a
// coordinate, or of c - 1 and c for an integer c (its ratio is then 1).
struct Neighbours {
  int64_t index[2];
  double weight[2];
};

Neighbours neighbours_of(phx_resize_mode mode, phx_resize_nearest nearest, double c, int64_t in) {
  const bool integer = c == std::floor(c);
  const double ratio = integer ? 1.0 : c - std::floor(c);
  const int64_t first = static_cast<int64_t>(std::floor(c)) - (integer ? 1 : 0);
  Neighbours n{};
  for (int i = 0; i < 2; ++i) n.index[i] = std::clamp<int64_t>(first + i, 0, in - 1);  // edge
  bool upper = true;  // nearest: whether the upper neighbour is taken
  if (!integer) {
    switch (nearest) {
      case PHX_RESIZE_ROUND_PREFER_FLOOR:
        upper = ratio > 0.5;
        break;
      case PHX_RESIZE_ROUND_PREFER_CEIL:
        upper = ratio >= 0.5;
        break;
      case PHX_RESIZE_FLOOR:
        upper = false;
        break;
      case PHX_RESIZE_CEIL:
        upper = true;
        break;
    }
  }
  if (mode == PHX_RESIZE_LINEAR) {
    n.weight[0] = 1.0 - ratio;
    n.weight[1] = ratio;
  } else {
    n.weight[0] = upper ? 0.0 : 1.0;
    n.weight[1] = upper ? 1.0 : 0.0;
  }
  return n;
}

Expected resize_reference(const phx_resize_params& p, const HostTensor& x, const Shape& out) {
  const size_t rank = x.shape.size();
  Expected expected;
  for_each_index(out, [&](const Index& o, int64_t) {
    std::vector<Neighbours> n(rank);
    for (size_t d = 0; d < rank; ++d) {
      const double scale = p.scales[d] > 0.0f
                               ? static_cast<double>(p.scales[d])
                               : static_cast<double>(out[d]) / static_cast<double>(x.shape[d]);
      n[d] = neighbours_of(p.mode, p.nearest,
                           source_coordinate(p.coordinates, o[d], x.shape[d], scale), x.shape[d]);
    }
    double sum = 0.0, abs_sum = 0.0;
    for (int64_t corner = 0; corner < (int64_t{1} << rank); ++corner) {
      double weight = 1.0;
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d) {
        const int bit = static_cast<int>(corner >> (rank - 1 - d) & 1);
        weight *= n[d].weight[bit];
        offset = offset * x.shape[d] + n[d].index[bit];
      }
      if (weight == 0.0) continue;
      sum += weight * x.at(offset);
      abs_sum += std::fabs(weight * x.at(offset));
    }
    const double tolerance = p.mode == PHX_RESIZE_NEAREST
                                 ? 0.0
                                 : (3.0 * static_cast<double>(rank) + 1.0) * kF32Epsilon * abs_sum +
                                       final_rounding(x.dtype, sum);
    expected.add(sum, tolerance);
  });
  return expected;
}

phx_resize_params resize_params(const ResizeCase& c, phx_resize_mode mode,
                                phx_resize_coordinates coordinates, phx_resize_nearest nearest) {
  phx_resize_params p{sizeof(phx_resize_params),         mode, coordinates, nearest,
                      static_cast<uint32_t>(c.x.size()), {},   {}};
  std::copy(c.out.begin(), c.out.end(), p.shape);
  std::copy(c.scales.begin(), c.scales.end(), p.scales);
  return p;
}

constexpr phx_resize_coordinates kCoordinates[] = {PHX_RESIZE_HALF_PIXEL, PHX_RESIZE_ASYMMETRIC,
                                                   PHX_RESIZE_ALIGN_CORNERS,
                                                   PHX_RESIZE_PYTORCH_HALF_PIXEL};

// Calls check(what, params, x, out shape, expected) for every case, dtype and coordinate
// transform of a mode.
template <class Check>
void for_each_resize(Random& rng, phx_resize_mode mode, phx_resize_nearest nearest, Check check) {
  for (phx_dtype dt : kFloatDtypes) {
    for (phx_resize_coordinates coordinates : kCoordinates) {
      for (const ResizeCase& c : resize_cases()) {
        const HostTensor x = rng.tensor(dt, c.x, -100.0, 100.0);
        const phx_resize_params params = resize_params(c, mode, coordinates, nearest);
        check(std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(c.out) +
                  " coordinates " + std::to_string(coordinates) + " nearest " +
                  std::to_string(nearest),
              params, x, c.out, resize_reference(params, x, c.out));
      }
    }
  }
}

TEST_P(ResizeTest, ResizeNearestWithEveryRoundingAndCoordinateTransform) {
  Random rng(300);
  for (phx_resize_nearest nearest : {PHX_RESIZE_ROUND_PREFER_FLOOR, PHX_RESIZE_ROUND_PREFER_CEIL,
                                     PHX_RESIZE_FLOOR, PHX_RESIZE_CEIL})
    for_each_resize(rng, PHX_RESIZE_NEAREST, nearest,
                    [&](const std::string& what, const phx_resize_params& params,
                        const HostTensor& x, const Shape& out, const Expected& expected) {
                      check_op(what, PHX_OP_RESIZE, &params, {&x}, x.dtype, out, expected);
                    });
}

TEST_P(ResizeTest, ResizeLinearWithEveryCoordinateTransform) {
  Random rng(301);
  for_each_resize(rng, PHX_RESIZE_LINEAR, PHX_RESIZE_ROUND_PREFER_FLOOR,
                  [&](const std::string& what, const phx_resize_params& params, const HostTensor& x,
                      const Shape& out, const Expected& expected) {
                    check_op(what, PHX_OP_RESIZE, &params, {&x}, x.dtype, out, expected);
                  });
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Devices, ResizeTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
