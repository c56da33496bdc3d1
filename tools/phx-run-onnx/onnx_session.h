// What phx-run-onnx and the ONNX conformance runner share: a model loaded through
// libphynexus_onnx, compiled for a device (with others for what it lacks), run on host
// tensors, and outputs compared with expected ones within the dtype's tolerance.
#pragma once

#include <phynexus/onnx.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace phx_tools {

// A failed phx_ call: its status and phx_last_error's message.
class PhxError : public std::runtime_error {
 public:
  PhxError(phx_status status, const std::string& message)
      : std::runtime_error(message), status(status) {}
  phx_status status;
};

// Throws PhxError when status is not OK, with doing before the library's message.
void check(phx_status status, const std::string& doing);

struct HostTensor {
  std::string name;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A TensorProto file (test_data_set_N/input_0.pb), narrowed as onnx.h says. declared is
// the dtype the model declares for it where known: PHX_DTYPE_BF16 takes a UINT16 file as
// bfloat16 bit patterns, as ONNX 1.12's test data stores bfloat16 (phx_onnx_tensor_read).
HostTensor read_tensor_file(const std::string& path, phx_dtype declared = PHX_DTYPE_INVALID);
void write_tensor_file(const std::string& path, const HostTensor& tensor);

// Random values for an input: floats uniform in [-1, 1), integers in [0, 4) (indices
// stay in range of small dimensions), from seed.
HostTensor random_tensor(const phx_value_info& input, uint64_t seed);

// Tensors destroyed with their owner.
struct TensorList {
  TensorList() = default;
  TensorList(TensorList&& other) noexcept : items(std::move(other.items)) {}
  TensorList(const TensorList&) = delete;
  TensorList& operator=(const TensorList&) = delete;
  ~TensorList();
  std::vector<phx_tensor> items;
};

// Per element e expected: |got - e| <= atol + rtol |e|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// What an executable's arithmetic loses, for the tolerance of its float outputs.
struct ComputePrecision {
  // The unit roundoff of the values its products take, where that is coarser than their
  // dtype's: 2^-8 where a device rounds f32 matmul inputs to bf16 (its matmul_precision
  // property "bf16", tpu-sim's default), 2^-16 for "bf16x3", 2^-11 or 2^-8 for float
  // nodes computed in f16 or bf16; 0 when every product is of f32 values.
  double unit_roundoff = 0;
  std::string name;  // "f32", "bf16 products", ...
  // An upper bound of the longest sum an output element takes (a matmul's K, a
  // convolution's fan-in): the largest dimension of any value of the graph, or of any
  // constant's element count over its first dimension (a weight's fan-in).
  int64_t reduction_length = 1;
};

// The tolerance of an output of dtype computed at precision, whose largest expected
// magnitude is scale (onnx_session.cpp says how it is derived).
Tolerance precision_tolerance(phx_dtype dtype, const ComputePrecision& precision, double scale);

struct NodePlacement {
  std::string name;
  std::string op;
  size_t device;
};

// Sizes of the model's dynamic dimensions, fixed at import (phx_onnx_options): by
// dimension name, and by input from tensors of the shapes it will run with.
struct ImportSizes {
  std::vector<std::pair<std::string, int64_t>> dims;
  std::vector<std::pair<std::string, std::vector<int64_t>>> input_shapes;
};

class OnnxSession {
 public:
  // Loads the model at path and compiles it for devices[0], with devices[1..] for the
  // nodes devices[0] lacks. input_values become constants of the model (by name:
  // phx_onnx_options.input_values); the session's inputs are the others. flags are
  // phx_onnx_options.flags. Throws PhxError.
  OnnxSession(phx_context context, const std::string& path, const std::vector<size_t>& devices,
              const std::vector<HostTensor>& input_values = {}, const ImportSizes& sizes = {},
              uint32_t flags = 0);
  ~OnnxSession();
  OnnxSession(const OnnxSession&) = delete;
  OnnxSession& operator=(const OnnxSession&) = delete;

  size_t input_count() const { return input_count_; }
  phx_value_info input(size_t i) const;
  size_t output_count() const { return output_count_; }
  std::string output_name(size_t i) const;
  std::vector<NodePlacement> placement() const;

  // Runs the executable on inputs (one per input, of its dtype) and returns the outputs.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  // The time of each of repeats runs (inputs and outputs on the device, uploads
  // excluded) after one warm-up run, which is not timed, in ns; a progress line on a
  // terminal (phx/progress.h).
  std::vector<double> time_runs(const std::vector<HostTensor>& inputs, int repeats);

  // How precisely the executable computes (the tolerance of --expect, onnx_session.cpp).
  ComputePrecision compute_precision() const;

 private:
  TensorList upload(const std::vector<HostTensor>& inputs);
  TensorList make_outputs(const TensorList& inputs);
  void run_once(const TensorList& inputs, const TensorList& outputs);

  phx_context context_;
  size_t device_;
  phx_graph graph_ = nullptr;
  phx_executable executable_ = nullptr;
  phx_stream stream_ = nullptr;
  size_t input_count_ = 0;
  size_t output_count_ = 0;
};

// Whether got matches expected: the same dtype and shape, and every element within
// tolerance, by default the dtype's (onnx_session.cpp says which). On a mismatch, *why
// says what differs (the worst element for values).
bool outputs_match(const HostTensor& got, const HostTensor& expected, std::string* why);
bool outputs_match(const HostTensor& got, const HostTensor& expected, const Tolerance& tolerance,
                   std::string* why);
// The largest |element| of t (0 for an empty one).
double largest_magnitude(const HostTensor& t);

}  // namespace phx_tools
