// phynexus._phynexus.Graph and Executable: the graph API (graph.h) for phynexus.nn and
// phynexus.compile.
#include <map>
#include <optional>
#include <utility>

#include "binding.h"

#ifdef PHX_PYTHON_ONNX
#include <phynexus/onnx.h>
#endif

namespace phx_python {
namespace {

struct Graph {
  ContextPtr owner;
  phx_graph graph = nullptr;
  // Tensors added as constants read in place: they must outlive the executables.
  std::vector<TensorPtr> constant_tensors;
  ~Graph() {
    if (graph != nullptr) phx_graph_destroy(graph);
  }
};
using GraphPtr = std::shared_ptr<Graph>;

struct Executable {
  ContextPtr owner;
  phx_executable executable = nullptr;
  std::vector<TensorPtr> constant_tensors;
  std::mutex mutex;
  ~Executable() {
    if (executable == nullptr) return;
    py::gil_scoped_release release;
    phx_executable_destroy(executable);
  }
};
using ExecutablePtr = std::shared_ptr<Executable>;

GraphPtr new_graph(const ContextPtr& context) {
  auto graph = std::make_shared<Graph>();
  graph->owner = context;
  check(phx_graph_create(require(context, "Graph: the context").context, &graph->graph));
  return graph;
}

// dim_names: empty, or a name per dimension ("" for none) of its dynamic dimensions (-1).
phx_value add_input(Graph& self, const std::string& name, int dtype,
                    const std::vector<int64_t>& shape, const std::vector<std::string>& dim_names) {
  if (!dim_names.empty() && dim_names.size() != shape.size())
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: add_input: a dim name per dimension");
  std::vector<const char*> names;
  for (const std::string& n : dim_names) names.push_back(n.empty() ? nullptr : n.c_str());
  phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
  desc.name = name.c_str();
  desc.dtype = static_cast<phx_dtype>(dtype);
  desc.rank = shape.size();
  desc.shape = shape.data();
  desc.dim_names = names.empty() ? nullptr : names.data();
  phx_value value = 0;
  check(phx_graph_add_input(self.graph, &desc, &value));
  return value;
}

phx_value add_constant(Graph& self, const std::string& name, int dtype,
                       const std::vector<int64_t>& shape, const py::buffer& data) {
  py::buffer_info info = data.request();
  if (!PyBuffer_IsContiguous(info.view(), 'C'))
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: a constant's buffer must be C-contiguous");
  phx_value value = 0;
  check(phx_graph_add_constant(self.graph, name.c_str(), static_cast<phx_dtype>(dtype),
                               shape.size(), shape.data(), info.ptr,
                               static_cast<size_t>(info.size * info.itemsize), &value));
  return value;
}

phx_value add_constant_tensor(Graph& self, const std::string& name, const TensorPtr& tensor) {
  if (tensor == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: the tensor is None");
  phx_value value = 0;
  check(phx_graph_add_constant_tensor(self.graph, name.c_str(), handle_of(*tensor), &value));
  self.constant_tensors.push_back(tensor);
  return value;
}

std::vector<phx_value> add_node(Graph& self, const std::string& name, uint32_t op,
                                const py::object& params_object,
                                const std::vector<std::optional<phx_value>>& inputs,
                                const std::vector<int>& output_dtype_ids, size_t output_count) {
  std::vector<uint64_t> params = params_from_bytes(params_object);
  std::vector<phx_value> values;
  for (const auto& input : inputs) values.push_back(input.value_or(PHX_VALUE_NONE));
  std::vector<phx_dtype> output_dtypes;
  for (int dtype : output_dtype_ids) output_dtypes.push_back(static_cast<phx_dtype>(dtype));
  phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
  desc.name = name.empty() ? nullptr : name.c_str();
  desc.op = static_cast<phx_op_id>(op);
  desc.params = params.empty() ? nullptr : params.data();
  desc.inputs = values.data();
  desc.input_count = values.size();
  desc.output_dtypes = output_dtypes.empty() ? nullptr : output_dtypes.data();
  desc.output_count = output_count;
  std::vector<phx_value> outputs(output_count);
  check(phx_graph_add_node(self.graph, &desc, outputs.data()));
  return outputs;
}

// (dtype, shape, kind): kind 0 an input, 1 a constant, 2 a node's output (phx_value_kind).
py::tuple value_info(Graph& self, phx_value value) {
  phx_value_info info = PHX_VALUE_INFO_INIT;
  check(phx_graph_value_info(self.graph, value, &info));
  return py::make_tuple(static_cast<int>(info.dtype),
                        std::vector<int64_t>(info.shape, info.shape + info.rank),
                        static_cast<int>(info.kind));
}

ExecutablePtr compile(Graph& self, size_t device, uint32_t flags,
                      const std::vector<size_t>& other_devices, int placement,
                      const std::vector<TensorPtr>& calibration_inputs, size_t sample_count) {
  std::vector<phx_tensor> samples;
  for (const TensorPtr& tensor : calibration_inputs) {
    if (tensor == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: a sample is None");
    samples.push_back(handle_of(*tensor));
  }
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device;
  options.flags = flags;
  options.other_devices = other_devices.empty() ? nullptr : other_devices.data();
  options.other_device_count = other_devices.size();
  options.placement = static_cast<phx_placement_policy>(placement);
  options.calibration_inputs = samples.empty() ? nullptr : samples.data();
  options.calibration_sample_count = sample_count;
  auto executable = std::make_shared<Executable>();
  executable->owner = self.owner;
  executable->constant_tensors = self.constant_tensors;
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_graph_compile(self.owner->context, self.graph, &options, &executable->executable);
  }
  check(status);
  return executable;
}

std::vector<phx_tensor> handles_of(const std::vector<TensorPtr>& tensors) {
  std::vector<phx_tensor> handles;
  for (const TensorPtr& tensor : tensors) {
    if (tensor == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: a tensor is None");
    handles.push_back(handle_of(*tensor));
  }
  return handles;
}

// Runs the executable on stream with new output tensors, shaped for these inputs.
std::vector<TensorPtr> run(Executable& self, Stream* stream_object,
                           const std::vector<TensorPtr>& inputs) {
  std::vector<phx_tensor> in = handles_of(inputs);
  auto lock = lock_without_gil(self.mutex);
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  check(phx_executable_describe(self.executable, &info));
  std::vector<TensorPtr> outputs;
  for (size_t i = 0; i < info.output_count; ++i) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    check(phx_executable_output_desc(self.executable, in.data(), in.size(), i, &desc));
    outputs.push_back(create_tensor(self.owner, info.device, desc.dtype,
                                    std::vector<int64_t>(desc.shape, desc.shape + desc.rank)));
  }
  std::vector<phx_tensor> out = handles_of(outputs);
  StreamPtr stream =
      stream_object == nullptr ? default_stream(self.owner, info.device) : stream_object->state;
  phx_status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> stream_lock(stream->mutex);
    status = phx_executable_run(stream->stream, self.executable, in.data(), in.size(), out.data(),
                                out.size(), nullptr);
  }
  check(status);
  return outputs;
}

py::dict describe(Executable& self) {
  auto lock = lock_without_gil(self.mutex);
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  check(phx_executable_describe(self.executable, &info));
  py::dict out;
  out["device"] = info.device;
  out["input_count"] = info.input_count;
  out["output_count"] = info.output_count;
  out["graph_node_count"] = info.graph_node_count;
  out["node_count"] = info.node_count;
  out["removed_nodes"] = info.removed_nodes;
  out["fused_nodes"] = info.fused_nodes;
  out["folded_nodes"] = info.folded_nodes;
  out["device_count"] = info.device_count;
  out["copies_per_run"] = info.copies_per_run;
  out["constant_bytes"] = info.constant_bytes;
  out["planned_bytes"] = info.planned_bytes;
  out["compile_time_ns"] = info.compile_time_ns;
  out["run_count"] = info.run_count;
  out["native_parts"] = info.native_parts;
  out["quantized_nodes"] = info.quantized_nodes;
  out["calibration_error"] = info.calibration_error;
  py::list nodes;
  for (size_t i = 0; i < info.node_count; ++i) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    check(phx_executable_describe_node(self.executable, i, &node));
    py::dict entry;
    entry["name"] = node.name;
    entry["op"] = phx_op_name(node.op);
    entry["device"] = node.device;
    entry["compute_dtype"] = phx_dtype_name(node.compute_dtype);
    nodes.append(entry);
  }
  out["nodes"] = nodes;
  py::list outputs;
  for (size_t i = 0; i < info.output_count; ++i) {
    phx_value_info output = PHX_VALUE_INFO_INIT;
    check(phx_executable_output_info(self.executable, i, &output));
    outputs.append(output.name);
  }
  out["outputs"] = outputs;
  return out;
}

py::bytes save(Executable& self) {
  auto lock = lock_without_gil(self.mutex);
  size_t size = 0;
  phx_status status;
  std::string buffer;
  {
    py::gil_scoped_release release;
    status = phx_executable_save(self.executable, nullptr, 0, &size);
    if (status == PHX_STATUS_OK) {
      buffer.resize(size);
      status = phx_executable_save(self.executable, buffer.data(), buffer.size(), &size);
    }
  }
  check(status);
  return py::bytes(buffer);
}

ExecutablePtr load(const ContextPtr& context, const py::bytes& data) {
  phx_context handle = require(context, "Executable.load: the context").context;
  std::string bytes = data;
  auto executable = std::make_shared<Executable>();
  executable->owner = context;
  phx_status status;
  {
    py::gil_scoped_release release;
    status =
        phx_executable_load(handle, bytes.data(), bytes.size(), nullptr, &executable->executable);
  }
  check(status);
  return executable;
}

#ifdef PHX_PYTHON_ONNX
// An ONNX model as a graph (onnx.h); dims gives sizes to the model's named dimensions,
// input_shapes the shapes of inputs by name.
// input_shapes: (name, shape) pairs, a name of None for the model's input at that
// position (phx_onnx_input_shape).
GraphPtr load_onnx(
    const ContextPtr& context, const std::string& path, const std::map<std::string, int64_t>& dims,
    const std::vector<std::pair<std::optional<std::string>, std::vector<int64_t>>>& input_shapes,
    uint32_t flags) {
  phx_context handle = require(context, "load_onnx: the context").context;
  auto graph = std::make_shared<Graph>();
  graph->owner = context;
  std::vector<const char*> names;
  std::vector<int64_t> sizes;
  for (const auto& [name, size] : dims) {
    names.push_back(name.c_str());
    sizes.push_back(size);
  }
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.flags = flags;
  options.dim_names = names.data();
  options.dim_sizes = sizes.data();
  options.dim_count = names.size();
  std::vector<phx_onnx_input_shape> shapes;
  for (const auto& [name, shape] : input_shapes)
    shapes.push_back({name ? name->c_str() : nullptr, shape.size(), shape.data()});
  options.input_shapes = shapes.data();
  options.input_shape_count = shapes.size();
  phx_status status;
  {
    py::gil_scoped_release release;
    status = phx_model_load_onnx(handle, path.c_str(), &options, &graph->graph);
  }
  check(status);
  return graph;
}
#endif

}  // namespace

void bind_graph(py::module_& module) {
#ifdef PHX_PYTHON_ONNX
  module.def("load_onnx", &load_onnx);
#endif
  py::class_<Graph, GraphPtr>(module, "Graph")
      .def(py::init(&new_graph))
      .def("add_input", &add_input, py::arg("name"), py::arg("dtype"), py::arg("shape"),
           py::arg("dim_names") = std::vector<std::string>())
      .def("add_constant", &add_constant)
      .def("add_constant_tensor", &add_constant_tensor)
      .def("add_node", &add_node)
      .def("add_output",
           [](Graph& self, phx_value value, const std::string& name) {
             check(phx_graph_add_output(self.graph, value, name.empty() ? nullptr : name.c_str()));
           })
      .def("value_info", &value_info)
      .def("compile", &compile);
  py::class_<Executable, ExecutablePtr>(module, "Executable")
      .def("run", &run, py::arg("stream").none(true), py::arg("inputs"))
      .def("describe", &describe)
      .def("save", &save)
      .def_static("load", &load);
}

}  // namespace phx_python
