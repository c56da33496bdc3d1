// Ops on values known at import: the shape arithmetic of exported models (Shape ->
// Gather -> Concat -> Reshape) computed by the importer, so that the graph gets the
// result as a constant.
#pragma once

#include <functional>

#include "known_value.h"

namespace phx::onnx_import {

// NumPy broadcasting of two shapes; false when they do not broadcast.
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>& out);

// Steps a row-major multi-index of dims to the next element (past the last: all 0).
void next_index(std::vector<int64_t>& index, const std::vector<int64_t>& dims);

// a op b elementwise with broadcasting, in int64 for integral values and double
// otherwise; the result has a's element type unless result_type is given.
KnownValue known_binary(const KnownValue& a, const KnownValue& b,
                        const std::function<int64_t(int64_t, int64_t)>& int_op,
                        const std::function<double(double, double)>& real_op,
                        int32_t result_type = 0);

// cond ? a : b elementwise with three-way broadcasting, of integral a and b.
KnownValue known_where(const KnownValue& cond, const KnownValue& a, const KnownValue& b);

// Integer arithmetic on values of a model, which may be hostile: two's complement
// wrap-around (as ONNX's int64 and NumPy), never undefined behaviour.
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// a / b truncated; b must not be 0. INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t wrapping_div(int64_t a, int64_t b) { return b == -1 ? wrapping_sub(0, a) : a / b; }

// The elements of known as a vector of int64 (shapes, axes, starts).
std::vector<int64_t> known_int_list(const KnownValue& known);

}  // namespace phx::onnx_import
