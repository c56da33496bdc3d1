#include "calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "errors.h"
#include "op_support.h"
#include "transfer.h"

namespace phx::graph {
namespace {

// Tensors and a stream made for one sample, freed however the sample ends.
class Scratch {
 public:
  explicit Scratch(Context& context) : context_(context) {}
  ~Scratch() {
    if (stream_ != nullptr) {
      try {
        context_.destroy_stream(*stream_);
      } catch (const Error& e) {
        context_.logger->warn("calibration: destroying its stream: {}", e.what());
      }
    }
    for (Tensor* tensor : tensors_) context_.destroy_tensor(*tensor);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  Tensor& tensor(Device& device, const Operand& operand) {
    tensors_.reserve(tensors_.size() + 1);
    Tensor& t = context_.create_tensor(device, operand.dtype, operand.rank, operand.shape);
    tensors_.push_back(&t);
    return t;
  }
  Stream& stream(Device& device) {
    if (stream_ == nullptr) stream_ = &context_.create_stream(device);
    return *stream_;
  }

 private:
  Context& context_;
  std::vector<Tensor*> tensors_;
  Stream* stream_ = nullptr;
};

std::vector<float> read_f32(const Tensor& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.element_count));
  tensor.device->wait_for_streams();
  read_to_host(tensor, values.data());
  return values;
}

// The running range of one value over the samples.
struct Accumulator {
  double min = INFINITY, max = -INFINITY, sum_squares = 0;
  uint64_t count = 0;

  void add(const std::vector<float>& values) {
    for (float x : values) {
      if (!std::isfinite(x)) continue;
      min = std::min(min, double(x));
      max = std::max(max, double(x));
      sum_squares += double(x) * x;
      ++count;
    }
  }
  phx_plugin_value_range range() const {
    if (count == 0) return {0, 0, 0};
    return {float(min), float(max), float(std::sqrt(sum_squares / double(count)))};
  }
};

Device& calibration_device(Context& context) {
  for (const auto& device : context.devices)
    if (device->type == PHX_DEVICE_CPU) return *device;
  fail(PHX_STATUS_UNSUPPORTED,
       "calibration runs the graph in float on a CPU device, and the context has none");
}

// The sample's tensor of each graph value on device: inputs copied, constants written or
// copied, the live nodes run. Returns them per value (null for the others).
std::vector<const Tensor*> run_float(Program& program, const std::vector<const Tensor*>& sample,
                                     Device& device, Scratch& scratch) {
  const Graph& graph = program.graph;
  std::vector<Shape> shapes;
  for (const Tensor* t : sample) shapes.emplace_back(t->shape, t->shape + t->rank);
  const std::vector<Operand> operands = concrete_operands(program, shapes);
  std::vector<const Tensor*> tensors(graph.values.size(), nullptr);
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    Tensor& copy = scratch.tensor(device, operands[graph.inputs[i]]);
    sample[i]->device->wait_for_streams();
    copy_tensor(copy, *sample[i]);
    tensors[graph.inputs[i]] = &copy;
  }
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const Value& value = graph.values[v];
    if (value.kind != PHX_VALUE_CONSTANT) continue;
    Tensor& copy = scratch.tensor(device, operands[v]);
    if (value.tensor == 0) {
      write_from_host(copy, value.bytes.data());
    } else {
      const Tensor* source = nullptr;
      try {
        source = &lookup(reinterpret_cast<phx_tensor>(value.tensor));
      } catch (const Error&) {
        fail(PHX_STATUS_INVALID_ARGUMENT,
             "constant '" + value.name + "' is a tensor that was destroyed before the compile");
      }
      source->device->wait_for_streams();
      copy_tensor(copy, *source);
    }
    tensors[v] = &copy;
  }
  Stream& stream = scratch.stream(device);
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    if (!program.live[n]) continue;
    const Node& node = program.nodes[n];
    if (!device_runs(device, variant_of_node(graph, node)))
      fail(PHX_STATUS_UNSUPPORTED, "calibration: node '" + node.name + "' does not run on device " +
                                       std::to_string(device.index) + " (" + device.name +
                                       "), which runs the graph in float");
    const Tensor* in[kMaxOpInputs] = {};
    const Tensor* out[kMaxOpOutputs] = {};
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] != PHX_VALUE_NONE) in[i] = tensors[node.inputs[i]];
    for (size_t o = 0; o < node.outputs.size(); ++o)
      out[o] = tensors[node.outputs[o]] = &scratch.tensor(device, operands[node.outputs[o]]);
    stream.submit(node.op, node.params_ptr(), in, node.inputs.size(), out, node.outputs.size(),
                  node.name.c_str());
  }
  stream.wait(UINT64_MAX);
  return tensors;
}

}  // namespace

Samples read_samples(Context& context, const Graph& graph, const phx_compile_options& options) {
  Samples samples(options.calibration_sample_count);
  const size_t inputs = graph.inputs.size();
  for (size_t s = 0; s < samples.size(); ++s) {
    std::map<std::string, int64_t> sizes;  // of the dynamic dimensions, by name
    for (size_t i = 0; i < inputs; ++i) {
      const std::string what =
          "calibration sample " + std::to_string(s) + ", input " + std::to_string(i);
      const phx_tensor handle = options.calibration_inputs[s * inputs + i];
      if (handle == nullptr) fail(PHX_STATUS_INVALID_ARGUMENT, what + " is null");
      const Tensor* tensor = nullptr;
      try {
        tensor = &lookup(handle);
      } catch (const Error&) {
        fail(PHX_STATUS_INVALID_ARGUMENT, what + " is not a live tensor (destroyed?)");
      }
      require(tensor->context == &context, (what + " belongs to another context").c_str());
      const Value& value = graph.values[graph.inputs[i]];
      bool fits = tensor->dtype == value.dtype && tensor->rank == value.rank;
      for (uint32_t d = 0; fits && d < value.rank; ++d) {
        if (value.shape[d] != PHX_DIM_DYNAMIC) {
          fits = tensor->shape[d] == value.shape[d];
          continue;
        }
        const auto [size, added] = sizes.emplace(value.dim_names[d], tensor->shape[d]);
        fits = added || size->second == tensor->shape[d];
      }
      if (!fits)
        fail(PHX_STATUS_INVALID_ARGUMENT, what + " ('" + value.name + "') is " +
                                              phx_dtype_name(tensor->dtype) +
                                              " of another shape than the input takes");
      samples[s].push_back(tensor);
    }
  }
  return samples;
}

void calibrate(Program& program) {
  if (program.samples.empty()) return;
  const Graph& graph = program.graph;
  Device& device = calibration_device(*graph.context);
  std::vector<Accumulator> accumulators(graph.values.size());
  for (const std::vector<const Tensor*>& sample : program.samples) {
    Scratch scratch(*graph.context);
    const std::vector<const Tensor*> tensors = run_float(program, sample, device, scratch);
    for (size_t v = 0; v < tensors.size(); ++v)
      if (tensors[v] != nullptr && tensors[v]->dtype == PHX_DTYPE_F32)
        accumulators[v].add(read_f32(*tensors[v]));
    auto& outputs = program.float_outputs.emplace_back();
    for (phx_value v : graph.outputs)
      outputs.push_back(tensors[v]->dtype == PHX_DTYPE_F32 ? read_f32(*tensors[v])
                                                           : std::vector<float>{});
  }
  for (const Accumulator& accumulator : accumulators) program.ranges.push_back(accumulator.range());
}

double measure_calibration_error(Executable& exe, const Program& program) {
  double worst = 0;
  for (size_t s = 0; s < program.samples.size(); ++s) {
    Scratch scratch(*exe.context);
    std::vector<Shape> shapes;
    std::vector<const Tensor*> inputs, outputs;
    for (const Tensor* t : program.samples[s]) {
      shapes.emplace_back(t->shape, t->shape + t->rank);
      Tensor& copy = scratch.tensor(*exe.device, operand_of(*t));
      t->device->wait_for_streams();
      copy_tensor(copy, *t);
      inputs.push_back(&copy);
    }
    if (exe.plan.outputs.empty() || exe.plan.input_shapes != shapes)
      exe.plan = exe.make_plan(shapes);
    for (const Operand& output : exe.plan.outputs)
      outputs.push_back(&scratch.tensor(*exe.device, output));
    Stream& stream = scratch.stream(*exe.device);
    exe.run(stream, inputs.data(), outputs.data(), exe.constant_tensors());
    stream.wait(UINT64_MAX);
    for (size_t o = 0; o < outputs.size(); ++o) {
      const std::vector<float>& reference = program.float_outputs[s][o];
      if (reference.empty()) continue;
      const std::vector<float> got = read_f32(*outputs[o]);
      double largest = 0, error = 0;
      for (size_t k = 0; k < reference.size(); ++k) {
        largest = std::max(largest, std::fabs(double(reference[k])));
        const double difference = std::fabs(double(got[k]) - reference[k]);
        error = std::isnan(difference) ? INFINITY : std::max(error, difference);
      }
      if (largest > 0) worst = std::max(worst, error / largest);
    }
  }
  // The consumer's runs are counted, not calibration's, whose stream is gone.
  exe.run_count = 0;
  exe.last_stream = nullptr;
  return worst;
}

}  // namespace phx::graph
