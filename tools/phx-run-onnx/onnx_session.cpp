#include "onnx_session.h"

#include <phx/progress.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace phx_tools {

void check(phx_status status, const std::string& doing) {
  if (status != PHX_STATUS_OK) throw PhxError(status, doing + ": " + phx_last_error());
}

HostTensor read_tensor_file(const std::string& path, phx_dtype declared) {
  phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
  t.dtype = declared;
  check(phx_onnx_tensor_read(path.c_str(), &t), "reading " + path);
  HostTensor out;
  out.name = t.name;
  out.dtype = t.dtype;
  out.shape.assign(t.shape, t.shape + t.rank);
  const auto* data = static_cast<const uint8_t*>(t.data);
  out.bytes.assign(data, data + t.size);
  phx_onnx_tensor_free(&t);
  return out;
}

void write_tensor_file(const std::string& path, const HostTensor& tensor) {
  check(phx_onnx_tensor_write(path.c_str(), tensor.name.c_str(), tensor.dtype, tensor.shape.size(),
                              tensor.shape.data(), tensor.bytes.data(), tensor.bytes.size()),
        "writing " + path);
}

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float m = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -m : m;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// Element i of t as a double.
double element(const HostTensor& t, size_t i) {
  const uint8_t* p = t.bytes.data() + i * phx_dtype_size(t.dtype);
  switch (t.dtype) {
    case PHX_DTYPE_F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case PHX_DTYPE_F16:
    case PHX_DTYPE_BF16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return t.dtype == PHX_DTYPE_F16 ? half_to_float(v)
                                      : std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
    }
    case PHX_DTYPE_I8:
      return static_cast<int8_t>(*p);
    case PHX_DTYPE_U8:
      return *p;
    case PHX_DTYPE_I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case PHX_DTYPE_I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case PHX_DTYPE_INVALID:
      break;
  }
  return 0;
}

// The tolerance of the dtype: the ONNX backend test runner's own for f32 (rtol 1e-3,
// atol 1e-7: its reference implementations compute in float64 and the models are single
// ops); for the 16-bit floats a few units of their last place (2^-11 for f16, 2^-8 for
// bf16, times 4) with an absolute part for values near zero; integers exact.
Tolerance dtype_tolerance(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return {1e-3, 1e-7};
    case PHX_DTYPE_F16:
      return {4 * std::ldexp(1.0, -11), 1e-3};
    case PHX_DTYPE_BF16:
      return {4 * std::ldexp(1.0, -8), 1e-2};
    default:
      return {};
  }
}

// The unit roundoff of a float dtype (half its epsilon); 0 for the others.
double unit_roundoff(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return std::ldexp(1.0, -24);
    case PHX_DTYPE_F16:
      return std::ldexp(1.0, -11);
    case PHX_DTYPE_BF16:
      return std::ldexp(1.0, -8);
    default:
      return 0;
  }
}

// The value of property key of device, or "" when it has none.
std::string device_property(phx_context context, size_t device, const char* key) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  check(phx_device_get(context, device, &info), "describing a device");
  for (size_t i = 0; i < info.property_count; ++i)
    if (std::strcmp(info.properties[i].key, key) == 0) return info.properties[i].value;
  return "";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
  s << ']';
  return s.str();
}

}  // namespace

HostTensor random_tensor(const phx_value_info& input, uint64_t seed) {
  HostTensor t;
  t.name = input.name != nullptr ? input.name : "";
  t.dtype = input.dtype;
  for (uint32_t d = 0; d < input.rank; ++d)
    t.shape.push_back(input.shape[d] == PHX_DIM_DYNAMIC ? 1 : input.shape[d]);
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  const size_t width = phx_dtype_size(t.dtype);
  t.bytes.resize(n * width);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = t.bytes.data() + i * width;
    const float f = uniform(rng);
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const int32_t small = static_cast<int32_t>(rng() % 4);
    switch (t.dtype) {
      case PHX_DTYPE_F32:
        std::memcpy(p, &f, 4);
        break;
      case PHX_DTYPE_BF16: {
        const uint16_t b = static_cast<uint16_t>(bits >> 16);
        std::memcpy(p, &b, 2);
        break;
      }
      case PHX_DTYPE_F16: {  // |f| < 1: a normal half from the top of f's mantissa
        const uint32_t e = (bits >> 23) & 0xff;
        const uint16_t h = e < 113
                               ? static_cast<uint16_t>((bits >> 16) & 0x8000u)
                               : static_cast<uint16_t>(((bits >> 16) & 0x8000u) |
                                                       ((e - 112) << 10) | ((bits >> 13) & 0x3ffu));
        std::memcpy(p, &h, 2);
        break;
      }
      default:
        std::memcpy(p, &small, width);  // little-endian: the low bytes
        break;
    }
  }
  return t;
}

OnnxSession::OnnxSession(phx_context context, const std::string& path,
                         const std::vector<size_t>& devices,
                         const std::vector<HostTensor>& input_values, const ImportSizes& sizes,
                         uint32_t flags)
    : context_(context), device_(devices.at(0)) {
  std::vector<phx_onnx_tensor> values;
  for (const HostTensor& v : input_values) {
    phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
    t.name = v.name.c_str();
    t.dtype = v.dtype;
    t.rank = v.shape.size();
    for (size_t d = 0; d < t.rank; ++d) t.shape[d] = v.shape[d];
    t.data = const_cast<uint8_t*>(v.bytes.data());
    t.size = v.bytes.size();
    values.push_back(t);
  }
  phx_onnx_options load_options = PHX_ONNX_OPTIONS_INIT;
  load_options.flags = flags;
  load_options.input_values = values.data();
  load_options.input_value_count = values.size();
  std::vector<const char*> dim_names;
  std::vector<int64_t> dim_sizes;
  for (const auto& [name, size] : sizes.dims) {
    dim_names.push_back(name.c_str());
    dim_sizes.push_back(size);
  }
  load_options.dim_names = dim_names.data();
  load_options.dim_sizes = dim_sizes.data();
  load_options.dim_count = dim_names.size();
  std::vector<phx_onnx_input_shape> shapes;
  for (const auto& [name, shape] : sizes.input_shapes)
    shapes.push_back({name.c_str(), shape.size(), shape.data()});
  load_options.input_shapes = shapes.data();
  load_options.input_shape_count = shapes.size();
  check(phx_model_load_onnx(context, path.c_str(), &load_options, &graph_), "loading " + path);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device_;
  options.other_devices = devices.size() > 1 ? devices.data() + 1 : nullptr;
  options.other_device_count = devices.size() - 1;
  try {
    check(phx_graph_compile(context, graph_, &options, &executable_), "compiling " + path);
    check(phx_stream_create(context, device_, &stream_), "creating a stream");
  } catch (...) {
    if (executable_ != nullptr) phx_executable_destroy(executable_);
    phx_graph_destroy(graph_);
    throw;
  }
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  check(phx_executable_describe(executable_, &info), "describing the executable");
  input_count_ = info.input_count;
  output_count_ = info.output_count;
}

OnnxSession::~OnnxSession() {
  phx_stream_destroy(stream_);
  phx_executable_destroy(executable_);
  phx_graph_destroy(graph_);
}

phx_value_info OnnxSession::input(size_t i) const {
  phx_value_info vi = PHX_VALUE_INFO_INIT;
  check(phx_executable_input_info(executable_, i, &vi), "describing an input");
  return vi;
}

std::string OnnxSession::output_name(size_t i) const {
  phx_value_info vi = PHX_VALUE_INFO_INIT;
  check(phx_executable_output_info(executable_, i, &vi), "describing an output");
  return vi.name;
}

std::vector<NodePlacement> OnnxSession::placement() const {
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  check(phx_executable_describe(executable_, &info), "describing the executable");
  std::vector<NodePlacement> out;
  for (size_t i = 0; i < info.node_count; ++i) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    check(phx_executable_describe_node(executable_, i, &node), "describing a node");
    out.push_back({node.name, phx_op_name(node.op), node.device});
  }
  return out;
}

TensorList::~TensorList() {
  for (phx_tensor t : items) phx_tensor_destroy(t);
}

TensorList OnnxSession::upload(const std::vector<HostTensor>& inputs) {
  if (inputs.size() != input_count_)
    throw PhxError(PHX_STATUS_INVALID_ARGUMENT, "the model has " + std::to_string(input_count_) +
                                                    " inputs; " + std::to_string(inputs.size()) +
                                                    " given");
  TensorList tensors;
  for (const HostTensor& in : inputs) {
    phx_tensor t = nullptr;
    check(phx_tensor_create(context_, device_, in.dtype, in.shape.size(), in.shape.data(), &t),
          "creating input '" + in.name + "' " + shape_text(in.shape));
    tensors.items.push_back(t);
    check(phx_tensor_upload(t, 0, in.bytes.data(), in.bytes.size()), "uploading an input");
  }
  return tensors;
}

TensorList OnnxSession::make_outputs(const TensorList& inputs) {
  TensorList outputs;
  for (size_t i = 0; i < output_count_; ++i) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    check(
        phx_executable_output_desc(executable_, inputs.items.data(), inputs.items.size(), i, &desc),
        "describing output " + std::to_string(i));
    phx_tensor t = nullptr;
    check(phx_tensor_create(context_, device_, desc.dtype, desc.rank, desc.shape, &t),
          "creating output " + std::to_string(i));
    outputs.items.push_back(t);
  }
  return outputs;
}

void OnnxSession::run_once(const TensorList& inputs, const TensorList& outputs) {
  check(phx_executable_run(stream_, executable_, inputs.items.data(), inputs.items.size(),
                           outputs.items.data(), outputs.items.size(), nullptr),
        "running the model");
  check(phx_stream_synchronize(stream_), "waiting for the run");
}

std::vector<HostTensor> OnnxSession::run(const std::vector<HostTensor>& inputs) {
  const TensorList in = upload(inputs);
  const TensorList out = make_outputs(in);
  run_once(in, out);
  std::vector<HostTensor> results;
  for (size_t i = 0; i < out.items.size(); ++i) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    check(phx_tensor_describe(out.items[i], &desc), "describing an output");
    HostTensor r;
    r.name = "output_" + std::to_string(i);
    r.dtype = desc.dtype;
    r.shape.assign(desc.shape, desc.shape + desc.rank);
    r.bytes.resize(desc.byte_size);
    check(phx_tensor_download(out.items[i], 0, r.bytes.data(), r.bytes.size()), "downloading");
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<double> OnnxSession::time_runs(const std::vector<HostTensor>& inputs, int repeats) {
  const TensorList in = upload(inputs);
  const TensorList out = make_outputs(in);
  // The warm-up, not timed: the first run pays for first-touch allocations and caches.
  run_once(in, out);
  // A terminal sees how far the runs are; drawing costs a clock read per run, outside
  // the timed part.
  phx::Progress progress(static_cast<size_t>(repeats), "runs");
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    progress.update(static_cast<size_t>(i));
    const auto start = std::chrono::steady_clock::now();
    run_once(in, out);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    times.push_back(std::chrono::duration<double, std::nano>(elapsed).count());
  }
  return times;
}

ComputePrecision OnnxSession::compute_precision() const {
  ComputePrecision p;
  p.name = "f32";
  auto coarser = [&p](double u, const std::string& name) {
    if (u <= p.unit_roundoff) return;
    p.unit_roundoff = u;
    p.name = name;
  };
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  check(phx_executable_describe(executable_, &info), "describing the executable");
  for (size_t i = 0; i < info.node_count; ++i) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    check(phx_executable_describe_node(executable_, i, &node), "describing a node");
    // The dtype a node computes in is its first input's: f16 and bf16 nodes round there.
    if (node.compute_dtype == PHX_DTYPE_F16 || node.compute_dtype == PHX_DTYPE_BF16)
      coarser(unit_roundoff(node.compute_dtype), phx_dtype_name(node.compute_dtype));
    // What a device's matrix unit does to f32 inputs (docs/tpu-sim.md, "Numerics"):
    // matmul, conv2d and conv_transpose2d.
    if (node.op != PHX_OP_MATMUL && node.op != PHX_OP_CONV2D && node.op != PHX_OP_CONV_TRANSPOSE2D)
      continue;
    const std::string products = device_property(context_, node.device, "matmul_precision");
    if (products == "bf16") coarser(std::ldexp(1.0, -8), "bf16 products");
    if (products == "bf16x3") coarser(std::ldexp(1.0, -16), "bf16x3 products");
  }
  // The graph numbers its values from 0 as they are added, so the first number not found
  // ends them (graph.h does not promise it: were there gaps, K would come out smaller and
  // the tolerance tighter, never looser).
  for (phx_value v = 0;; ++v) {
    phx_value_info value = PHX_VALUE_INFO_INIT;
    if (phx_graph_value_info(graph_, v, &value) != PHX_STATUS_OK) break;
    int64_t count = 1;
    for (uint32_t d = 0; d < value.rank; ++d) {
      if (value.shape[d] == PHX_DIM_DYNAMIC) continue;
      p.reduction_length = std::max(p.reduction_length, value.shape[d]);
      count *= value.shape[d];
    }
    if (value.kind == PHX_VALUE_CONSTANT && value.rank >= 2 && value.shape[0] > 0)
      p.reduction_length = std::max(p.reduction_length, count / value.shape[0]);
  }
  return p;
}

// For a float output (integers stay exact) with S = max(1, scale), u_out the unit
// roundoff of its dtype, u the precision's and K its reduction length:
//   rtol = 4 (u_out + u)              the rounding of the inputs of the products and of
//                                     the output, a few units each
//   atol = (K 2^-23 + 4 u) S          a sum of K terms accumulated in f32, each term off
//                                     by u of its size, which S stands for (a sum that
//                                     cancels is far smaller than its terms)
// each at least the dtype's own tolerance (dtype_tolerance), so that a model computed
// in f32 is held to ONNX's rtol 1e-3 as the node tests are.
Tolerance precision_tolerance(phx_dtype dtype, const ComputePrecision& precision, double scale) {
  const Tolerance floor = dtype_tolerance(dtype);
  const double u_out = unit_roundoff(dtype);
  if (u_out == 0) return floor;
  const double u = precision.unit_roundoff;
  const double s = std::max(1.0, scale);
  const double k = static_cast<double>(precision.reduction_length);
  return {std::max(floor.rtol, 4 * (u_out + u)),
          std::max(floor.atol, (k * std::ldexp(1.0, -23) + 4 * u) * s)};
}

double largest_magnitude(const HostTensor& t) {
  double largest = 0;
  const size_t n = t.bytes.size() / phx_dtype_size(t.dtype);
  for (size_t i = 0; i < n; ++i) {
    const double v = std::fabs(element(t, i));
    if (std::isfinite(v)) largest = std::max(largest, v);
  }
  return largest;
}

bool outputs_match(const HostTensor& got, const HostTensor& expected, std::string* why) {
  return outputs_match(got, expected, dtype_tolerance(got.dtype), why);
}

bool outputs_match(const HostTensor& got, const HostTensor& expected, const Tolerance& tolerance,
                   std::string* why) {
  if (got.dtype != expected.dtype) {
    *why = std::string("dtype ") + phx_dtype_name(got.dtype) + ", expected " +
           phx_dtype_name(expected.dtype);
    return false;
  }
  if (got.shape != expected.shape) {
    *why = "shape " + shape_text(got.shape) + ", expected " + shape_text(expected.shape);
    return false;
  }
  const size_t n = got.bytes.size() / phx_dtype_size(got.dtype);
  double worst_excess = 0;
  size_t worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = element(got, i), e = element(expected, i);
    if (std::isnan(e) && std::isnan(g)) continue;
    if (std::isinf(e) && g == e) continue;
    const double excess = std::fabs(g - e) - (tolerance.atol + tolerance.rtol * std::fabs(e));
    if (!(excess <= 0) && (worst_excess == 0 || !(excess <= worst_excess))) {
      worst_excess = std::isnan(excess) ? INFINITY : excess;
      worst = i;
    }
  }
  if (worst_excess == 0) return true;
  std::ostringstream s;
  s.precision(9);
  const double e = element(expected, worst);
  s << "element " << worst << " is " << element(got, worst) << ", expected " << e << " (tolerance "
    << tolerance.atol + tolerance.rtol * std::fabs(e) << ")";
  *why = s.str();
  return false;
}

}  // namespace phx_tools
