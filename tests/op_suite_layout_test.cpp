// The conformance suite of the layout ops (reshape, concat, slice, gather, expand, tile,
// pad), of max_pool and avg_pool and of conv_transpose2d (API 0.3), on every device found
// at run time, through the public C API, against float64 references computed here from
// the same dtype-rounded inputs. A device that does not claim an (op, dtype) must answer
// PHX_STATUS_UNSUPPORTED; a claimed one must produce the right numbers.
//
// Tolerances:
// - The layout ops and max_pool move or pick values: exact (tolerance 0 compares the
//   values, the sign of zero included; every value an input holds is exact in float64).
// - avg_pool, one output: a sum of W window values in f32, then one division:
//   (W + 2) u sum |x| / count + u |ref| (the division), plus the final rounding; as
//   reduce_sum's (op_suite_test.cpp), u = 2^-24.
// - conv_transpose2d, one output: a sum of K = C_in / groups * KH * KW products at most
//   (fewer reach an output), plus the bias: op_suite.h's accumulation_tolerance with K;
//   the products of the inputs as the device multiplies them (as_multiplied: bf16 on the
//   TPU simulator), as conv2d's.

#include <climits>
#include <functional>

#include "op_suite.h"

using namespace phx_test;

namespace {

// A suite name of its own: phx-conformance links every suite file, and each file's
// instantiation would otherwise run the OpSuite tests of the others again.
using LayoutTest = OpSuite;

// Row-major offset of index in shape.
int64_t offset_of(const Shape& shape, const Index& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + index[d];
  return offset;
}

// Inputs of the layout ops: the whole range of an integer dtype, [-100, 100] for floats.
HostTensor layout_input(Random& rng, phx_dtype dt, const Shape& shape) {
  return is_float(dt) ? rng.tensor(dt, shape, -100.0, 100.0) : rng.tensor(dt, shape, -1e10, 1e10);
}

// x's values picked by pick(output index) (an offset into x, or -1 for the given fill).
template <class Pick>
Expected picked(const HostTensor& x, const Shape& out_shape, Pick pick, double fill = 0.0) {
  Expected expected;
  for_each_index(out_shape, [&](const Index& index, int64_t) {
    const int64_t at = pick(index);
    expected.add(at < 0 ? fill : x.at(at), 0.0);
  });
  return expected;
}

// ---- reshape -------------------------------------------------------------------------------

TEST_P(LayoutTest, ReshapeCopiesInferredAndZeroDimensions) {
  struct Case {
    Shape x;
    std::vector<int64_t> target;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, {6, 4}, {6, 4}},   {{2, 3, 4}, {-1}, {24}},
      {{2, 3, 4}, {0, -1}, {2, 12}}, {{2, 3, 4}, {4, 0, 2}, {4, 3, 2}},
      {{24}, {2, -1, 3}, {2, 4, 3}}, {{1}, {}, {}},
      {{}, {1, 1}, {1, 1}},          {{257, 129}, {129, 257}, {129, 257}}};
  Random rng(200);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = layout_input(rng, dt, c.x);
      phx_reshape_params params = {
          sizeof(phx_reshape_params), static_cast<uint32_t>(c.target.size()), {}};
      std::copy(c.target.begin(), c.target.end(), params.shape);
      Expected expected;
      for (double v : x.values) expected.add(v, 0.0);
      check_op(std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(c.out),
               PHX_OP_RESHAPE, &params, {&x}, dt, c.out, expected);
    }
  }
}

// ---- concat --------------------------------------------------------------------------------

TEST_P(LayoutTest, ConcatAlongEveryAxisOf1To9Inputs) {
  struct Case {
    std::vector<Shape> inputs;
    int32_t axis;
  };
  std::vector<Case> cases = {{{{2, 3}, {2, 5}}, 1},
                             {{{2, 3}, {4, 3}, {1, 3}}, 0},
                             {{{2, 3, 4}, {2, 1, 4}}, -2},
                             {{{2, 3, 4}, {2, 3, 1}, {2, 3, 7}}, -1},
                             {{{5}}, 0},
                             {{{300, 100}, {300, 200}}, 1},
                             {{{2, 2, 8}, {2, 3, 8}}, 1}};  // rows of 8, 8-aligned
  Case nine{{}, 1};
  for (int64_t i = 1; i <= 9; ++i) nine.inputs.push_back({3, i, 2});
  cases.push_back(nine);
  Random rng(201);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      std::vector<HostTensor> xs;
      for (const Shape& s : c.inputs) xs.push_back(layout_input(rng, dt, s));
      const size_t rank = c.inputs[0].size();
      const size_t axis =
          static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int32_t>(rank) : c.axis);
      Shape out_shape = c.inputs[0];
      out_shape[axis] = 0;
      for (const Shape& s : c.inputs) out_shape[axis] += s[axis];
      Expected expected;
      for_each_index(out_shape, [&](const Index& index, int64_t) {
        Index at = index;
        size_t i = 0;
        while (at[axis] >= c.inputs[i][axis]) at[axis] -= c.inputs[i++][axis];
        expected.add(xs[i].at(offset_of(c.inputs[i], at)), 0.0);
      });
      std::vector<const HostTensor*> inputs;
      for (const HostTensor& x : xs) inputs.push_back(&x);
      const phx_axis_params params = {sizeof(phx_axis_params), c.axis};
      check_op(std::string(phx_dtype_name(dt)) + " " + std::to_string(xs.size()) + " inputs to " +
                   shape_string(out_shape) + " axis " + std::to_string(c.axis),
               PHX_OP_CONCAT, &params, inputs, dt, out_shape, expected);
    }
  }
}

// ---- slice ---------------------------------------------------------------------------------

TEST_P(LayoutTest, SliceWithNegativeAndClampedBoundsAndSteps) {
  struct Case {
    Shape x;
    std::vector<int64_t> starts, ends, steps;
  };
  const std::vector<Case> cases = {
      {{10}, {2}, {7}, {1}},
      {{10}, {-3}, {INT64_MAX}, {1}},
      {{10}, {-1}, {INT64_MIN}, {-1}},  // reversed whole
      {{10}, {8}, {1}, {-3}},
      {{10}, {-100}, {100}, {4}},
      {{10}, {3}, {4}, {INT64_MAX}},
      {{10}, {9}, {-100}, {INT64_MIN}},
      {{4, 6}, {1, 0}, {3, 0}, {1, 0}},  // step 0 takes dimension 1 whole
      {{4, 6}, {0, 5}, {0, -7}, {0, -2}},
      {{3, 4, 5}, {0, 1, -1}, {3, 3, 0}, {2, 1, -2}},
      {{2, 3, 4, 5}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},  // zeroed: a copy
      {{300, 200}, {10, 190}, {290, 10}, {1, -1}}};
  Random rng(202);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = layout_input(rng, dt, c.x);
      // The reference: Python's slice indices, per dimension.
      std::vector<std::vector<int64_t>> taken(c.x.size());
      Shape out_shape;
      for (size_t d = 0; d < c.x.size(); ++d) {
        const int64_t n = c.x[d], step = c.steps[d];
        if (step == 0) {
          for (int64_t i = 0; i < n; ++i) taken[d].push_back(i);
        } else {
          auto norm = [&](int64_t v) {
            const double w = v < 0 ? static_cast<double>(v) + n : static_cast<double>(v);
            return step > 0 ? std::clamp(w, 0.0, double(n)) : std::clamp(w, -1.0, double(n - 1));
          };
          const double first = norm(c.starts[d]), end = norm(c.ends[d]);
          const double s = static_cast<double>(step);
          for (double i = first; step > 0 ? i < end : i > end; i += s)
            taken[d].push_back(static_cast<int64_t>(i));
        }
        out_shape.push_back(static_cast<int64_t>(taken[d].size()));
      }
      const Expected expected = picked(x, out_shape, [&](const Index& index) {
        Index at(index.size());
        for (size_t d = 0; d < index.size(); ++d) at[d] = taken[d][static_cast<size_t>(index[d])];
        return offset_of(c.x, at);
      });
      phx_slice_params params = PHX_SLICE_PARAMS_INIT;
      for (size_t d = 0; d < c.x.size(); ++d) {
        params.starts[d] = c.starts[d];
        params.ends[d] = c.ends[d];
        params.steps[d] = c.steps[d];
      }
      check_op(
          std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(out_shape),
          PHX_OP_SLICE, &params, {&x}, dt, out_shape, expected);
    }
  }
}

// ---- gather --------------------------------------------------------------------------------

TEST_P(LayoutTest, GatherAlongAnAxisWithNegativeAndOutOfRangeIndices) {
  struct Case {
    Shape data;
    int32_t axis;
    Shape indices;
    std::vector<double> index_values;  // empty: random in [-n, n)
  };
  const std::vector<Case> cases = {{{5, 3}, 0, {4}, {0, 4, -1, -5}},
                                   {{5, 3}, 1, {2, 2}, {}},
                                   {{2, 3, 4}, -1, {}, {-2}},  // a rank-0 index drops the axis
                                   {{2, 3, 4}, 1, {3}, {3, -4, 1}},          // out of range: zeros
                                   {{1000, 64}, 0, {200}, {}},               // an embedding lookup
                                   {{2, 3, 4}, 0, {1, 2, 1, 2, 1, 1}, {}}};  // rank 8 out
  Random rng(203);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor data = layout_input(rng, dt, c.data);
      const size_t axis =
          static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int32_t>(c.data.size()) : c.axis);
      const int64_t n = c.data[axis];
      HostTensor indices =
          rng.tensor(PHX_DTYPE_I32, c.indices, static_cast<double>(-n), static_cast<double>(n - 1));
      if (!c.index_values.empty()) indices.values = c.index_values;
      Shape out_shape(c.data.begin(), c.data.begin() + static_cast<int64_t>(axis));
      out_shape.insert(out_shape.end(), c.indices.begin(), c.indices.end());
      out_shape.insert(out_shape.end(), c.data.begin() + static_cast<int64_t>(axis) + 1,
                       c.data.end());
      const Expected expected = picked(data, out_shape, [&](const Index& index) -> int64_t {
        Index index_at(index.begin() + static_cast<int64_t>(axis),
                       index.begin() + static_cast<int64_t>(axis + c.indices.size()));
        auto i = static_cast<int64_t>(indices.at(offset_of(c.indices, index_at)));
        i = i < 0 ? i + n : i;
        if (i < 0 || i >= n) return -1;
        Index at(index.begin(), index.begin() + static_cast<int64_t>(axis));
        at.push_back(i);
        at.insert(at.end(), index.begin() + static_cast<int64_t>(axis + c.indices.size()),
                  index.end());
        return offset_of(c.data, at);
      });
      const phx_axis_params params = {sizeof(phx_axis_params), c.axis};
      check_op(std::string(phx_dtype_name(dt)) + shape_string(c.data) + " indices" +
                   shape_string(c.indices) + " axis " + std::to_string(c.axis),
               PHX_OP_GATHER, &params, {&data, &indices}, dt, out_shape, expected);
    }
  }
}

// ---- expand and tile -----------------------------------------------------------------------

TEST_P(LayoutTest, ExpandBroadcastsWithTheTarget) {
  struct Case {
    Shape x;
    std::vector<int64_t> target;
  };
  const std::vector<Case> cases = {{{3, 1}, {2, 3, 4}}, {{1}, {5}},
                                   {{4}, {3, 1}},       {{2, 1, 3}, {1, 4, 1}},
                                   {{2, 3}, {2, 3}},    {{1, 300}, {200, 300}}};
  Random rng(204);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = layout_input(rng, dt, c.x);
      const Shape out_shape = broadcast_shape(c.x, c.target);
      const Expected expected =
          picked(x, out_shape, [&](const Index& index) { return broadcast_offset(c.x, index); });
      phx_reshape_params params = {
          sizeof(phx_reshape_params), static_cast<uint32_t>(c.target.size()), {}};
      std::copy(c.target.begin(), c.target.end(), params.shape);
      check_op(
          std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(out_shape),
          PHX_OP_EXPAND, &params, {&x}, dt, out_shape, expected);
    }
  }
}

TEST_P(LayoutTest, TileRepeatsEveryDimension) {
  struct Case {
    Shape x;
    std::vector<uint32_t> repeats;  // empty: null parameters, all ones
  };
  const std::vector<Case> cases = {{{3}, {4}},       {{2, 3}, {2, 1}},
                                   {{2, 3}, {1, 3}}, {{2, 3, 2}, {2, 2, 3}},
                                   {{2, 3}, {}},     {{100, 7}, {3, 50}}};
  Random rng(205);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = layout_input(rng, dt, c.x);
      Shape out_shape = c.x;
      for (size_t d = 0; d < c.repeats.size(); ++d) out_shape[d] *= c.repeats[d];
      const Expected expected = picked(x, out_shape, [&](const Index& index) {
        Index at(index.size());
        for (size_t d = 0; d < index.size(); ++d) at[d] = index[d] % c.x[d];
        return offset_of(c.x, at);
      });
      phx_tile_params params = PHX_TILE_PARAMS_INIT;
      std::copy(c.repeats.begin(), c.repeats.end(), params.repeats);
      check_op(
          std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(out_shape),
          PHX_OP_TILE, c.repeats.empty() ? nullptr : &params, {&x}, dt, out_shape, expected);
    }
  }
}

// ---- pad -----------------------------------------------------------------------------------

TEST_P(LayoutTest, PadWithAConstantReflectionOrEdge) {
  struct Case {
    Shape x;
    std::vector<uint32_t> begin, end;
    // The constant, converted as cast converts: -2.5 rounds to -2 (ties to even) and
    // saturates to 0 for u8; an infinity saturates an integer; NaN makes it 0.
    float value = -2.5f;
  };
  const std::vector<Case> cases = {{{5}, {2}, {3}},
                                   {{4, 5}, {1, 0}, {2, 4}, INFINITY},
                                   {{3, 4, 5}, {2, 1, 0}, {0, 3, 4}, NAN},
                                   {{2, 3}, {0, 0}, {0, 0}},
                                   {{200, 150}, {3, 7}, {5, 2}}};
  Random rng(206);
  for (phx_dtype dt : kAllDtypes) {
    for (phx_pad_mode mode : {PHX_PAD_CONSTANT, PHX_PAD_REFLECT, PHX_PAD_EDGE}) {
      for (const Case& c : cases) {
        const HostTensor x = layout_input(rng, dt, c.x);
        const float value = c.value;
        Shape out_shape = c.x;
        for (size_t d = 0; d < c.x.size(); ++d) out_shape[d] += c.begin[d] + c.end[d];
        const Expected expected = picked(
            x, out_shape,
            [&](const Index& index) -> int64_t {
              Index at(index.size());
              for (size_t d = 0; d < index.size(); ++d) {
                const int64_t n = c.x[d];
                int64_t i = index[d] - c.begin[d];
                if (i < 0 || i >= n) {
                  if (mode == PHX_PAD_CONSTANT) return -1;
                  if (mode == PHX_PAD_EDGE) i = i < 0 ? 0 : n - 1;
                  if (mode == PHX_PAD_REFLECT) i = i < 0 ? -i : 2 * (n - 1) - i;
                }
                at[d] = i;
              }
              return offset_of(c.x, at);
            },
            round_to(dt, value));
        phx_pad_params params = PHX_PAD_PARAMS_INIT;
        params.mode = mode;
        params.value = value;
        std::copy(c.begin.begin(), c.begin.end(), params.begin);
        std::copy(c.end.begin(), c.end.end(), params.end);
        check_op(std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " +
                     shape_string(out_shape) + " mode " + std::to_string(mode),
                 PHX_OP_PAD, &params, {&x}, dt, out_shape, expected);
      }
    }
  }
}

// ---- max_pool and avg_pool -----------------------------------------------------------------

struct PoolCase {
  Shape x;  // [N, C, D1..Dk]
  std::vector<uint32_t> kernel, stride, pad_begin, pad_end, dilation;
  bool ceil_mode = false;
};

std::vector<PoolCase> pool_cases() {
  return {
      {{2, 3, 10}, {3}, {1}, {0}, {0}, {1}},
      {{1, 2, 11}, {3}, {2}, {1}, {2}, {2}},
      {{2, 3, 7, 9}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}},
      {{2, 3, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true},  // a last window dropped
      {{1, 2, 8, 7}, {3, 2}, {3, 2}, {2, 0}, {1, 1}, {1, 2}, true},
      {{1, 4, 9, 10}, {3, 3}, {1, 1}, {2, 1}, {0, 2}, {2, 1}},
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {0, 2, 1}, {1, 1, 2}, true},
      {{2, 16, 64, 64}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},  // parallel
      {{1, 2, 3}, {2}, {2}, {3}, {4}, {1}},                       // windows of padding only: 0
      {{1, 24, 14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},  // GoogLeNet's, parallel
  };
}

// Per output element of the pooling: the input offsets of its window inside x, and how many
// taps lie inside the padded extent.
template <class Visit>
void for_each_window(const PoolCase& c, const Shape& out_shape, Visit visit) {
  const size_t k = c.x.size() - 2;
  for_each_index(out_shape, [&](const Index& index, int64_t) {
    std::vector<int64_t> offsets;
    int64_t padded = 1;
    std::vector<std::vector<int64_t>> taps(k);
    for (size_t i = 0; i < k; ++i) {
      int64_t in_padded = 0;
      for (uint32_t t = 0; t < c.kernel[i]; ++t) {
        const int64_t at = index[2 + i] * c.stride[i] - c.pad_begin[i] + t * c.dilation[i];
        if (at >= -int64_t{c.pad_begin[i]} && at < c.x[2 + i] + c.pad_end[i]) ++in_padded;
        if (at >= 0 && at < c.x[2 + i]) taps[i].push_back(at);
      }
      padded *= in_padded;
    }
    Index at(c.x.size());
    at[0] = index[0];
    at[1] = index[1];
    std::function<void(size_t)> walk = [&](size_t i) {
      if (i == k) {
        offsets.push_back(offset_of(c.x, at));
        return;
      }
      for (int64_t t : taps[i]) {
        at[2 + i] = t;
        walk(i + 1);
      }
    };
    walk(0);
    visit(offsets, padded);
  });
}

Shape pool_output_shape(const PoolCase& c) {
  Shape out = c.x;
  for (size_t i = 0; i + 2 < c.x.size(); ++i) {
    const int64_t room = c.x[2 + i] + c.pad_begin[i] + c.pad_end[i] -
                         (int64_t{c.dilation[i]} * (c.kernel[i] - 1) + 1);
    int64_t o = (c.ceil_mode ? (room + c.stride[i] - 1) / c.stride[i] : room / c.stride[i]) + 1;
    if (c.ceil_mode && (o - 1) * c.stride[i] >= c.x[2 + i] + c.pad_begin[i]) --o;
    out[2 + i] = o;
  }
  return out;
}

phx_pool_params pool_params(const PoolCase& c, bool count_include_pad) {
  phx_pool_params p = PHX_POOL_PARAMS_INIT;
  for (size_t i = 0; i + 2 < c.x.size(); ++i) {
    p.kernel[i] = c.kernel[i];
    p.stride[i] = c.stride[i];
    p.pad_begin[i] = c.pad_begin[i];
    p.pad_end[i] = c.pad_end[i];
    p.dilation[i] = c.dilation[i];
  }
  p.ceil_mode = c.ceil_mode ? 1 : 0;
  p.count_include_pad = count_include_pad ? 1 : 0;
  return p;
}

TEST_P(LayoutTest, MaxPoolOver1To3SpatialDimensions) {
  Random rng(207);
  for (phx_dtype dt : kAllDtypes) {
    for (const PoolCase& c : pool_cases()) {
      const HostTensor x = layout_input(rng, dt, c.x);
      const Shape out_shape = pool_output_shape(c);
      Expected expected;
      for_each_window(c, out_shape, [&](const std::vector<int64_t>& offsets, int64_t) {
        double m = offsets.empty() ? 0.0 : -INFINITY;
        for (int64_t at : offsets) m = std::max(m, x.at(at));
        expected.add(m, 0.0);
      });
      const phx_pool_params params = pool_params(c, false);
      check_op(
          std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " + shape_string(out_shape),
          PHX_OP_MAX_POOL, &params, {&x}, dt, out_shape, expected);
    }
  }
}

TEST_P(LayoutTest, AvgPoolWithAndWithoutThePadding) {
  Random rng(208);
  for (phx_dtype dt : kFloatDtypes) {
    for (bool include_pad : {false, true}) {
      for (const PoolCase& c : pool_cases()) {
        const HostTensor x = rng.tensor(dt, c.x);
        const Shape out_shape = pool_output_shape(c);
        Expected expected;
        for_each_window(c, out_shape, [&](const std::vector<int64_t>& offsets, int64_t padded) {
          double sum = 0.0, abs_sum = 0.0;
          for (int64_t at : offsets) {
            sum += x.at(at);
            abs_sum += std::fabs(x.at(at));
          }
          const double count =
              include_pad ? static_cast<double>(padded) : static_cast<double>(offsets.size());
          const double ref = count == 0 ? 0.0 : sum / count;
          expected.add(ref, (static_cast<double>(offsets.size()) + 2) * kF32Epsilon * abs_sum /
                                    std::max(count, 1.0) +
                                kF32Epsilon * std::fabs(ref) + final_rounding(dt, ref));
        });
        const phx_pool_params params = pool_params(c, include_pad);
        check_op(std::string(phx_dtype_name(dt)) + shape_string(c.x) + " to " +
                     shape_string(out_shape) + (include_pad ? " count_include_pad" : ""),
                 PHX_OP_AVG_POOL, &params, {&x}, dt, out_shape, expected);
      }
    }
  }
}

// ---- conv_transpose2d ----------------------------------------------------------------------

struct TransposeCase {
  int64_t n, c_in, h, w, c_out, kh, kw;
  uint32_t stride[2] = {1, 1};
  uint32_t padding[4] = {0, 0, 0, 0};
  uint32_t output_padding[2] = {0, 0};
  uint32_t dilation[2] = {1, 1};
  uint32_t groups = 1;
  bool bias = false;
};

std::vector<TransposeCase> transpose_cases() {
  std::vector<TransposeCase> cases;
  cases.push_back({1, 1, 1, 1, 1, 1, 1});
  cases.push_back({2, 3, 5, 4, 2, 3, 3});
  TransposeCase strided{2, 4, 6, 5, 3, 4, 4, {2, 2}, {1, 1, 1, 1}, {0, 0}, {1, 1}, 1, true};
  cases.push_back(strided);
  TransposeCase asym{1, 2, 5, 7, 4, 3, 2, {3, 2}, {0, 2, 1, 0}, {2, 1}, {1, 2}, 1, true};
  cases.push_back(asym);
  TransposeCase grouped{1, 6, 4, 4, 9, 3, 3, {2, 1}, {1, 0, 0, 1}, {1, 0}, {2, 1}, 3, false};
  cases.push_back(grouped);
  TransposeCase depthwise{2, 5, 7, 6, 5, 2, 2, {2, 2}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 5, true};
  cases.push_back(depthwise);
  // Output rows and columns no input reaches: the bias only.
  TransposeCase wide_output_padding{1,      2,      3, 3,   2, 2, 2, {1, 1}, {0, 0, 0, 0},
                                    {2, 1}, {1, 1}, 1, true};
  cases.push_back(wide_output_padding);
  cases.push_back({1, 32, 16, 16, 16, 4, 4, {2, 2}, {1, 1, 1, 1}});  // K = 512, parallel
  return cases;
}

TEST_P(LayoutTest, ConvTranspose2dStridesPaddingDilationGroups) {
  Random rng(209);
  for (phx_dtype dt : kFloatDtypes) {
    for (const TransposeCase& c : transpose_cases()) {
      const int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
      const int64_t h_out = (c.h - 1) * c.stride[0] - c.padding[0] - c.padding[1] +
                            c.dilation[0] * (c.kh - 1) + c.output_padding[0] + 1;
      const int64_t w_out = (c.w - 1) * c.stride[1] - c.padding[2] - c.padding[3] +
                            c.dilation[1] * (c.kw - 1) + c.output_padding[1] + 1;
      const Shape x_shape{c.n, c.c_in, c.h, c.w}, w_shape{c.c_in, cout_g, c.kh, c.kw};
      const Shape out_shape{c.n, c.c_out, h_out, w_out};
      const HostTensor x = rng.tensor(dt, x_shape);
      const HostTensor weight = rng.tensor(dt, w_shape);
      const HostTensor bias = rng.tensor(dt, {c.c_out});
      const HostTensor x_multiplied = as_multiplied(x);
      const HostTensor weight_multiplied = as_multiplied(weight);
      std::vector<double> sum(static_cast<size_t>(element_count(out_shape)), 0.0);
      std::vector<double> abs_sum(sum.size(), 0.0);
      for (int64_t n = 0; n < c.n; ++n)
        for (int64_t ci = 0; ci < c.c_in; ++ci)
          for (int64_t co_g = 0; co_g < cout_g; ++co_g)
            for (int64_t ih = 0; ih < c.h; ++ih)
              for (int64_t iw = 0; iw < c.w; ++iw)
                for (int64_t i = 0; i < c.kh; ++i)
                  for (int64_t j = 0; j < c.kw; ++j) {
                    const int64_t oh = ih * c.stride[0] - c.padding[0] + i * c.dilation[0];
                    const int64_t ow = iw * c.stride[1] - c.padding[2] + j * c.dilation[1];
                    if (oh < 0 || oh >= h_out || ow < 0 || ow >= w_out) continue;
                    const int64_t co = ci / cin_g * cout_g + co_g;
                    const double product =
                        x_multiplied.at(offset_of(x_shape, {n, ci, ih, iw})) *
                        weight_multiplied.at(offset_of(w_shape, {ci, co_g, i, j}));
                    const auto at = static_cast<size_t>(offset_of(out_shape, {n, co, oh, ow}));
                    sum[at] += product;
                    abs_sum[at] += std::fabs(product);
                  }
      Expected expected;
      for_each_index(out_shape, [&](const Index& index, int64_t flat) {
        const auto at = static_cast<size_t>(flat);
        const double b = c.bias ? bias.at(index[1]) : 0.0;
        const double ref = sum[at] + b;
        expected.add(ref,
                     accumulation_tolerance(cin_g * c.kh * c.kw + 1, abs_sum[at] + std::fabs(b),
                                            PHX_ACTIVATION_NONE, ref, dt));
      });
      phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
      std::copy(std::begin(c.stride), std::end(c.stride), params.stride);
      std::copy(std::begin(c.padding), std::end(c.padding), params.padding);
      std::copy(std::begin(c.output_padding), std::end(c.output_padding), params.output_padding);
      std::copy(std::begin(c.dilation), std::end(c.dilation), params.dilation);
      params.groups = c.groups;
      std::vector<const HostTensor*> inputs = {&x, &weight};
      if (c.bias) inputs.push_back(&bias);
      check_op(std::string(phx_dtype_name(dt)) + " x" + shape_string(x_shape) + " w" +
                   shape_string(w_shape) + " groups " + std::to_string(c.groups) +
                   (c.bias ? " bias" : ""),
               PHX_OP_CONV_TRANSPOSE2D, &params, inputs, dt, out_shape, expected);
    }
  }
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Devices, LayoutTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
