// Values whose contents the importer knows: constants and the shape arithmetic computed
// from them at import (Shape, Gather, Concat, Range ... onnx.h "Shapes"), and the small
// inputs an operator reads as settings (Reshape's shape, Clip's bounds, Slice's starts).
// Kept at full precision (int64, double) until a graph node needs one, then narrowed as
// the graph's dtypes are.
#pragma once

#include <onnx/onnx_pb.h>
#include <phynexus/phynexus.h>

#include <cstdint>
#include <string>
#include <vector>

namespace phx::onnx_import {

// v as an int64, toward zero, saturated (NaN: 0): a float a model gives where an integer
// is meant, which may be anything.
int64_t saturated(double v);

struct KnownValue {
  int32_t elem_type = 0;  // onnx::TensorProto_DataType
  std::vector<int64_t> dims;
  std::vector<int64_t> ints;  // the elements of an integral or bool value
  std::vector<double> reals;  // the elements of a float value

  size_t size() const { return integral() ? ints.size() : reals.size(); }
  bool integral() const;
  int64_t int_at(size_t i) const { return integral() ? ints[i] : saturated(reals[i]); }
  double real_at(size_t i) const { return integral() ? static_cast<double>(ints[i]) : reals[i]; }
};

// Tensors of at most this many elements are known at import when they are constants;
// bigger ones (weights) go to the graph without an import-time copy.
constexpr int64_t kMaxKnownElements = 1 << 16;

// Reads tensor in full precision. what names it in messages. Refuses what
// read_tensor refuses, except that int64 values beyond i32 are kept (a Slice's end of
// INT64_MAX), and double is taken.
KnownValue read_known(const onnx::TensorProto& tensor, const std::string& what);

// The bytes of known as a graph constant of dtype_of(elem_type); refuses int64 values
// beyond i32 and a double value.
std::vector<uint8_t> known_bytes(const KnownValue& known, const std::string& what);

// size bytes of dense dtype elements at data (dtype_of(elem_type)) as a value of the
// model's elem_type (an INT64 input given as i32 values stays INT64).
KnownValue known_from_bytes(int32_t elem_type, phx_dtype dtype, std::vector<int64_t> dims,
                            const void* data);

// A scalar or 1-D integral value of count elements with these values, or a rank-0 one.
KnownValue known_ints(int32_t elem_type, std::vector<int64_t> dims, std::vector<int64_t> ints);

}  // namespace phx::onnx_import
