// The C API of libphynexus_onnx (onnx.h): model import and tensor files.
#include <phx/abi_structs.h>
#include <phynexus/onnx.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "import_error.h"
#include "importer.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

std::string hex(uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "%x", bits);
  return text;
}

phx_onnx_options options_or_defaults(const phx_onnx_options* given) {
  // A caller built against an older onnx.h passes a smaller struct: the fields it lacks
  // keep their defaults.
  const phx_onnx_options options =
      read_struct(given, phx_onnx_options PHX_ONNX_OPTIONS_INIT, "options");
  constexpr uint32_t kKnownFlags = PHX_ONNX_SKIP_CHECKER | PHX_ONNX_OUTPUT_EVERY_VALUE;
  if ((options.flags & ~kKnownFlags) != 0)
    refuse(PHX_STATUS_INVALID_ARGUMENT,
           "options->flags has unknown bits 0x" + hex(options.flags & ~kKnownFlags));
  if (options.dim_count != 0 && (options.dim_names == nullptr || options.dim_sizes == nullptr))
    refuse(PHX_STATUS_INVALID_ARGUMENT, "options give dim_count but no dim_names or dim_sizes");
  if (options.input_value_count != 0 && options.input_values == nullptr)
    refuse(PHX_STATUS_INVALID_ARGUMENT, "options give input_value_count but no input_values");
  if (options.input_shape_count != 0 && options.input_shapes == nullptr)
    refuse(PHX_STATUS_INVALID_ARGUMENT, "options give input_shape_count but no input_shapes");
  for (size_t i = 0; i < options.input_shape_count; ++i) {
    const phx_onnx_input_shape& given = options.input_shapes[i];
    const std::string what = "options->input_shapes[" + std::to_string(i) + "]";
    if (given.rank > PHX_MAX_RANK || (given.rank != 0 && given.shape == nullptr))
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             what + ": rank " + std::to_string(given.rank) +
                 (given.rank > PHX_MAX_RANK ? " is above the largest" : " with a null shape"));
    for (size_t d = 0; d < given.rank; ++d)
      if (given.shape[d] < 1)
        refuse(PHX_STATUS_INVALID_ARGUMENT, what + ".shape[" + std::to_string(d) + "] is " +
                                                std::to_string(given.shape[d]) + ", below 1");
  }
  for (size_t i = 0; i < options.dim_count; ++i)
    if (options.dim_sizes[i] < 1)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "options->dim_sizes[" + std::to_string(i) + "] is " +
                                              std::to_string(options.dim_sizes[i]) + ", below 1");
  return options;
}

void open_file(std::ifstream& in, const char* path) {
  in.open(path, std::ios::binary);
  if (!in)
    refuse(errno == ENOENT ? PHX_STATUS_NOT_FOUND : PHX_STATUS_INVALID_ARGUMENT,
           std::string("cannot open '") + path + "': " + std::strerror(errno));
}

void load(phx_context context, onnx::ModelProto& model, const phx_onnx_options* options,
          phx_graph* out_graph) {
  Importer importer(context, options_or_defaults(options));
  *out_graph = importer.import(model);
}

// The element type of a dtype a caller gave (any int); UNDEFINED for none of phx_dtype.
onnx::TensorProto::DataType elem_type_of(int dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return onnx::TensorProto::FLOAT;
    case PHX_DTYPE_F16:
      return onnx::TensorProto::FLOAT16;
    case PHX_DTYPE_BF16:
      return onnx::TensorProto::BFLOAT16;
    case PHX_DTYPE_I8:
      return onnx::TensorProto::INT8;
    case PHX_DTYPE_I16:
      return onnx::TensorProto::INT16;
    case PHX_DTYPE_I32:
      return onnx::TensorProto::INT32;
    case PHX_DTYPE_U8:
      return onnx::TensorProto::UINT8;
    default:
      return onnx::TensorProto::UNDEFINED;
  }
}

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace
}  // namespace phx::onnx_import

using namespace phx::onnx_import;

extern "C" PHX_ONNX_API phx_status phx_model_load_onnx(phx_context context, const char* path,
                                                       const phx_onnx_options* options,
                                                       phx_graph* out_graph) {
  return guard("phx_model_load_onnx", [&] {
    if (context == nullptr || path == nullptr || out_graph == nullptr)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "context, path and out_graph must not be null");
    std::ifstream in;
    open_file(in, path);
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&in))
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             std::string("'") + path + "' is not a valid ONNX model (ModelProto)");
    load(context, model, options, out_graph);
  });
}

extern "C" PHX_ONNX_API phx_status phx_model_load_onnx_memory(phx_context context, const void* data,
                                                              size_t size,
                                                              const phx_onnx_options* options,
                                                              phx_graph* out_graph) {
  return guard("phx_model_load_onnx_memory", [&] {
    if (context == nullptr || data == nullptr || out_graph == nullptr)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "context, data and out_graph must not be null");
    if (size > INT_MAX)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "a model of more than 2 GiB in one buffer");
    onnx::ModelProto model;
    if (!model.ParseFromArray(data, static_cast<int>(size)))
      refuse(PHX_STATUS_INVALID_ARGUMENT, "the bytes are not a valid ONNX model (ModelProto)");
    load(context, model, options, out_graph);
  });
}

extern "C" PHX_ONNX_API phx_status phx_onnx_tensor_read(const char* path,
                                                        phx_onnx_tensor* out_tensor) {
  return guard("phx_onnx_tensor_read", [&] {
    if (path == nullptr || out_tensor == nullptr)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "path and out_tensor must not be null");
    if (out_tensor->struct_size < sizeof(phx_onnx_tensor))
      refuse(PHX_STATUS_INVALID_ARGUMENT, "out_tensor->struct_size is too small");
    std::ifstream in;
    open_file(in, path);
    onnx::TensorProto proto;
    if (!proto.ParseFromIstream(&in))
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             std::string("'") + path + "' is not a valid ONNX tensor (TensorProto)");
    // numpy has no bfloat16: ONNX 1.12's backend test data stores bfloat16 tensors as
    // UINT16 holding the bit patterns, which a caller that knows the model declares
    // bfloat16 asks to take as such. Any other UINT16 stays refused.
    if (out_tensor->dtype == PHX_DTYPE_BF16 && proto.data_type() == onnx::TensorProto::UINT16)
      proto.set_data_type(onnx::TensorProto::BFLOAT16);
    const TensorBytes bytes = read_tensor(proto, std::string("'") + path + "'");
    phx_onnx_tensor t = *out_tensor;
    t.dtype = bytes.dtype;
    t.rank = bytes.dims.size();
    for (size_t i = 0; i < PHX_MAX_RANK; ++i) t.shape[i] = i < t.rank ? bytes.dims[i] : 1;
    t.size = bytes.size;
    t.data = nullptr;  // an empty tensor's: nothing to allocate
    if (bytes.size != 0) {
      t.data = std::malloc(bytes.size);
      if (t.data == nullptr) throw std::bad_alloc();
      std::memcpy(t.data, bytes.data, bytes.size);
    }
    try {
      t.name = copy_string(proto.name());
    } catch (...) {
      std::free(t.data);
      throw;
    }
    *out_tensor = t;
  });
}

extern "C" PHX_ONNX_API phx_status phx_onnx_tensor_write(const char* path, const char* name,
                                                         phx_dtype dtype, size_t rank,
                                                         const int64_t* shape, const void* data,
                                                         size_t size) {
  return guard("phx_onnx_tensor_write", [&] {
    if (path == nullptr || (data == nullptr && size != 0) || (rank != 0 && shape == nullptr))
      refuse(PHX_STATUS_INVALID_ARGUMENT, "path, data and shape must not be null");
    const auto type = elem_type_of(phx::enum_value(dtype));
    if (type == onnx::TensorProto::UNDEFINED)
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             "unknown dtype " + std::to_string(phx::enum_value(dtype)));
    if (rank > PHX_MAX_RANK) refuse(PHX_STATUS_INVALID_ARGUMENT, "rank above PHX_MAX_RANK");
    std::vector<int64_t> dims(shape, shape + rank);
    const int64_t count = element_count(dims, "the shape");
    if (static_cast<size_t>(count) * phx_dtype_size(dtype) != size)
      refuse(PHX_STATUS_INVALID_ARGUMENT, "size is not the shape's byte size");
    onnx::TensorProto proto;
    if (name != nullptr) proto.set_name(name);
    proto.set_data_type(type);
    for (int64_t d : dims) proto.add_dims(d);
    proto.set_raw_data(size != 0 ? data : "", size);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !proto.SerializeToOstream(&out) || !out.flush())
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             std::string("cannot write '") + path + "': " + std::strerror(errno));
  });
}

extern "C" PHX_ONNX_API void phx_onnx_tensor_free(phx_onnx_tensor* tensor) {
  if (tensor == nullptr) return;
  std::free(tensor->data);
  std::free(const_cast<char*>(tensor->name));
  tensor->data = nullptr;
  tensor->name = nullptr;
  tensor->size = 0;
  // A tensor read again starts as PHX_ONNX_TENSOR_INIT's: a bf16 left here would ask the
  // next read to take UINT16 as bfloat16.
  tensor->dtype = PHX_DTYPE_INVALID;
}
