// phynexus._phynexus.Stream: streams, tickets, profile records, and eager ops (its events
// are bound in event.cpp, its asynchronous transfers in transfer.cpp). An eager
// op's outputs are made by the binding: their dtypes and shapes come from the op table's
// rules, asked through a one-node graph (phx_graph_add_node infers them), and cached per
// op, parameters and input descriptions, so an op added to the library needs no code here.
#include "binding.h"

namespace phx_python {
namespace {

using Descs = std::vector<phx_tensor_desc>;

// The cache key: everything the output descriptions depend on.
std::string desc_key(uint32_t op, const std::vector<uint64_t>& params,
                     const std::vector<const Tensor*>& inputs,
                     const std::vector<phx_dtype>& output_dtypes) {
  std::string key(reinterpret_cast<const char*>(&op), sizeof op);
  key.append(reinterpret_cast<const char*>(params.data()), params.size() * sizeof(uint64_t));
  key.push_back('|');
  for (const Tensor* input : inputs) {
    if (input == nullptr) {
      key.push_back('-');
      continue;
    }
    key.append(reinterpret_cast<const char*>(&input->desc.dtype), sizeof input->desc.dtype);
    key.append(reinterpret_cast<const char*>(input->desc.shape),
               sizeof(int64_t) * input->desc.rank);
    key.push_back(static_cast<char>('0' + input->desc.rank));
  }
  key.push_back('|');
  for (phx_dtype dtype : output_dtypes)
    key.append(reinterpret_cast<const char*>(&dtype), sizeof dtype);
  return key;
}

// The outputs' descriptions by the op's rules: a graph of the inputs and the one node.
phx_status infer_descs(phx_context context, const phx_graph_node_desc& node,
                       const std::vector<const Tensor*>& inputs, size_t output_count, Descs& out) {
  phx_graph graph = nullptr;
  phx_status status = phx_graph_create(context, &graph);
  std::vector<phx_value> values;
  for (const Tensor* input : inputs) {
    if (status != PHX_STATUS_OK) break;
    phx_value value = PHX_VALUE_NONE;
    if (input != nullptr) {
      phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
      desc.dtype = input->desc.dtype;
      desc.rank = input->desc.rank;
      desc.shape = input->desc.shape;
      status = phx_graph_add_input(graph, &desc, &value);
    }
    values.push_back(value);
  }
  std::vector<phx_value> outputs(output_count);
  phx_graph_node_desc with_inputs = node;
  with_inputs.inputs = values.data();
  with_inputs.input_count = values.size();
  if (status == PHX_STATUS_OK) status = phx_graph_add_node(graph, &with_inputs, outputs.data());
  for (size_t i = 0; status == PHX_STATUS_OK && i < output_count; ++i) {
    phx_value_info info = PHX_VALUE_INFO_INIT;
    status = phx_graph_value_info(graph, outputs[i], &info);
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    desc.dtype = info.dtype;
    desc.rank = info.rank;
    for (uint32_t d = 0; d < info.rank; ++d) desc.shape[d] = info.shape[d];
    out.push_back(desc);
  }
  if (graph != nullptr) {
    // Keeps the node's error as the thread's last error across the destroy.
    std::string message = phx_last_error();
    phx_graph_destroy(graph);
    if (status != PHX_STATUS_OK) raise_error(status, message);
  }
  return status;
}

size_t output_count_of(uint32_t op) {
  phx_op_info info = PHX_OP_INFO_INIT;
  check(phx_op_info_get(static_cast<phx_op_id>(op), &info));
  return info.output_count;
}

Descs output_descs(ContextState& context, uint32_t op, const std::vector<uint64_t>& params,
                   const std::vector<const Tensor*>& inputs,
                   const std::vector<phx_dtype>& output_dtypes) {
  std::string key = desc_key(op, params, inputs, output_dtypes);
  {
    std::lock_guard<std::mutex> lock(context.mutex);
    auto found = context.output_desc_cache.find(key);
    if (found != context.output_desc_cache.end()) return found->second;
  }
  const size_t output_count = output_count_of(op);
  phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
  node.op = static_cast<phx_op_id>(op);
  node.params = params.empty() ? nullptr : params.data();
  node.output_dtypes = output_dtypes.empty() ? nullptr : output_dtypes.data();
  node.output_count = output_count;
  Descs descs;
  check(infer_descs(context.context, node, inputs, output_count, descs));
  std::lock_guard<std::mutex> lock(context.mutex);
  context.output_desc_cache.emplace(std::move(key), descs);
  return descs;
}

std::vector<const Tensor*> tensors_of(const std::vector<TensorPtr>& inputs) {
  std::vector<const Tensor*> out;
  for (const TensorPtr& input : inputs) {
    if (input != nullptr) handle_of(*input);
    out.push_back(input.get());
  }
  return out;
}

uint64_t submit(Stream& self, uint32_t op, const std::vector<uint64_t>& params,
                const std::vector<TensorPtr>& inputs, const std::vector<TensorPtr>& outputs) {
  std::vector<phx_tensor> in, out;
  for (const TensorPtr& input : inputs) in.push_back(handle_or_null(input));
  for (const TensorPtr& output : outputs) {
    if (output == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: an output is None");
    out.push_back(handle_of(*output));
  }
  const phx_op_desc desc = {sizeof desc,
                            static_cast<phx_op_id>(op),
                            params.empty() ? nullptr : params.data(),
                            in.data(),
                            in.size(),
                            out.data(),
                            out.size()};
  uint64_t ticket = 0;
  phx_status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self.state->mutex);
    status = phx_op_run(self.state->stream, &desc, &ticket);
  }
  check(status);
  self.last_ticket = ticket;
  return ticket;
}

// Runs op on the stream with new output tensors on the stream's device.
std::vector<TensorPtr> run_op(Stream& self, uint32_t op, const py::object& params_object,
                              const std::vector<TensorPtr>& inputs,
                              const std::vector<int>& output_dtype_ids) {
  std::vector<uint64_t> params = params_from_bytes(params_object);
  std::vector<phx_dtype> output_dtypes;
  for (int dtype : output_dtype_ids) output_dtypes.push_back(static_cast<phx_dtype>(dtype));
  const Descs descs = output_descs(*self.owner, op, params, tensors_of(inputs), output_dtypes);
  std::vector<TensorPtr> outputs;
  for (const phx_tensor_desc& desc : descs)
    outputs.push_back(create_tensor(self.owner, self.state->device, desc.dtype,
                                    std::vector<int64_t>(desc.shape, desc.shape + desc.rank)));
  submit(self, op, params, inputs, outputs);
  return outputs;
}

template <typename Call>
void blocking(Stream& self, Call call) {
  phx_status status;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self.state->mutex);
    status = call(self.state->stream);
  }
  check(status);
}

py::list profile_records(Stream& self) {
  auto lock = lock_without_gil(self.state->mutex);
  size_t count = 0;
  check(phx_profile_count(self.state->stream, &count));
  py::list out;
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    check(phx_profile_get(self.state->stream, i, &record));
    py::dict metrics;
    for (size_t m = 0; m < record.metric_count; ++m)
      metrics[record.metrics[m].name] = record.metrics[m].value;
    py::dict entry;
    entry["ticket"] = record.ticket;
    entry["op"] = phx_op_name(record.op);
    entry["signature"] = record.signature;
    entry["host_time_ns"] = record.host_time_ns;
    entry["metrics"] = metrics;
    entry["node"] = record.node != nullptr ? record.node : "";
    out.append(entry);
  }
  return out;
}

Stream new_stream(const ContextPtr& context, size_t device) {
  phx_context handle = require(context, "Stream: the context").context;
  auto state = std::make_shared<StreamState>();
  state->device = device;
  check(phx_stream_create(handle, device, &state->stream));
  return Stream{context, state, 0};
}

}  // namespace

StreamState::~StreamState() {
  if (stream != nullptr) phx_stream_destroy(stream);
}

StreamPtr default_stream(const ContextPtr& context, size_t device) {
  std::lock_guard<std::mutex> lock(require(context, "Stream.default: the context").mutex);
  StreamPtr& slot = context->default_streams[device];
  if (slot == nullptr) {
    auto state = std::make_shared<StreamState>();
    state->device = device;
    check(phx_stream_create(context->context, device, &state->stream));
    slot = state;
  }
  return slot;
}

std::unique_lock<std::mutex> lock_without_gil(std::mutex& mutex) {
  std::unique_lock<std::mutex> lock(mutex, std::defer_lock);
  py::gil_scoped_release release;
  lock.lock();
  return lock;
}

std::vector<uint64_t> params_from_bytes(const py::object& params) {
  if (params.is_none()) return {};
  // Checked here: a cast of another type would raise pybind11's bare RuntimeError.
  if (!py::isinstance<py::bytes>(params))
    raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: a parameter struct must be bytes or None");
  std::string bytes = params.cast<std::string>();
  // The library reads struct_size bytes: they must all be here.
  size_t struct_size = 0;
  if (bytes.size() >= sizeof struct_size)
    std::memcpy(&struct_size, bytes.data(), sizeof struct_size);
  if (bytes.size() < sizeof struct_size || struct_size != bytes.size())
    raise_error(PHX_STATUS_INVALID_ARGUMENT,
                "phynexus: a parameter struct's bytes must begin with their own size");
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  return aligned;
}

// An eager op on the default stream of the device of its first input.
std::vector<TensorPtr> run_on_default_stream(uint32_t op, const py::object& params,
                                             const std::vector<TensorPtr>& inputs,
                                             const std::vector<int>& output_dtypes) {
  const Tensor* first = nullptr;
  for (const TensorPtr& input : inputs)
    if (input != nullptr && first == nullptr) first = input.get();
  if (first == nullptr) raise_error(PHX_STATUS_INVALID_ARGUMENT, "phynexus: an op needs an input");
  Stream stream{first->owner, default_stream(first->owner, first->desc.device), 0};
  return run_op(stream, op, params, inputs, output_dtypes);
}

void bind_stream(py::module_& module) {
  module.def("run_op", &run_on_default_stream);
  py::class_<Stream> stream(module, "Stream");
  stream.def(py::init(&new_stream))
      .def_static("default",
                  [](const ContextPtr& context, size_t device) {
                    return Stream{context, default_stream(context, device), 0};
                  })
      .def_property_readonly("device_index", [](const Stream& self) { return self.state->device; })
      .def_property_readonly("last_ticket", [](const Stream& self) { return self.last_ticket; })
      .def("run_op", &run_op)
      .def("run_op_into",
           [](Stream& self, uint32_t op, const py::object& params,
              const std::vector<TensorPtr>& inputs, const std::vector<TensorPtr>& outputs) {
             return submit(self, op, params_from_bytes(params), inputs, outputs);
           })
      .def("synchronize",
           [](Stream& self) {
             blocking(self, [](phx_stream s) { return phx_stream_synchronize(s); });
             forget_finished_transfers(self);
           })
      .def("wait",
           [](Stream& self, uint64_t ticket) {
             blocking(self, [ticket](phx_stream s) { return phx_stream_wait(s, ticket); });
             forget_finished_transfers(self);
           })
      .def("query",
           [](Stream& self, uint64_t ticket) {
             int done = 0;
             {
               auto lock = lock_without_gil(self.state->mutex);
               check(phx_stream_query(self.state->stream, ticket, &done));
             }
             forget_finished_transfers(self);
             return done != 0;
           })
      .def("profile_records", &profile_records)
      .def("profile_clear", [](Stream& self) {
        auto lock = lock_without_gil(self.state->mutex);
        check(phx_profile_clear(self.state->stream));
      });
  bind_events(module, stream);
  bind_transfers(stream);
}

}  // namespace phx_python
