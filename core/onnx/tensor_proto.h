// ONNX tensors as Phynexus sees them: which ONNX element types map to which phx_dtype
// (int64 narrowed to i32, bool to u8, onnx.h "Dtypes"), and the contents of a
// TensorProto as dense bytes of that dtype.
#pragma once

#include <onnx/onnx_pb.h>
#include <phynexus/phynexus.h>

#include <cstdint>
#include <string>
#include <vector>

namespace phx::onnx_import {

// The dtype an ONNX element type (onnx::TensorProto_DataType) becomes; PHX_DTYPE_INVALID
// for one refused.
phx_dtype dtype_of(int32_t elem_type);

// The element type's name as ONNX spells it ("FLOAT", "INT64"), for messages.
std::string elem_type_name(int32_t elem_type);

// Whether the element type holds integers or booleans (as opposed to floats).
bool is_integral(int32_t elem_type);

// Bytes per element of the element type in a TensorProto's raw_data.
size_t raw_element_bytes(int32_t elem_type);

// A TensorProto's contents in the dtype it becomes: dense row-major bytes, either a view
// of the proto's raw_data (no copy when nothing needs converting) or owned bytes.
struct TensorBytes {
  phx_dtype dtype = PHX_DTYPE_INVALID;
  std::vector<int64_t> dims;
  std::vector<uint8_t> owned;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Reads tensor (what names it in messages: "initializer 'w'"). Refuses with
// UNSUPPORTED an element type dtype_of refuses, external data or a rank above
// PHX_MAX_RANK, and with INVALID_ARGUMENT data of the wrong size or int64 values outside
// i32. An empty tensor (a dimension of 0) gives size 0 and may give null data.
TensorBytes read_tensor(const onnx::TensorProto& tensor, const std::string& what);

// The element count of dims (1 for rank 0); refuses a negative dimension or an overflow.
int64_t element_count(const std::vector<int64_t>& dims, const std::string& what);

}  // namespace phx::onnx_import
