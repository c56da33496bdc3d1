// The C API of graphs and executables (graph.h): handles, argument checks, then the
// graph and the executable do the work.
#include <phx/abi_structs.h>
#include <phynexus/graph.h>

#include <optional>

#include "compile.h"
#include "errors.h"
#include "executable.h"
#include "executable_file.h"
#include "graph.h"

using namespace phx;
using namespace phx::graph;

namespace {

bool is_float(phx_dtype dtype) { return (PHX_DTYPE_BIT(dtype) & kFloatDtypes) != 0; }

Graph& lookup_graph(phx_graph handle) {
  return lookup_object<Graph>(graph_table(), handle, "graph");
}

Executable& lookup_executable(phx_executable handle) {
  return lookup_object<Executable>(executable_table(), handle, "executable");
}

// The tensors of a run, checked against the executable's inputs or outputs: their count,
// context and device.
void resolve_run_tensors(const Executable& exe, const phx_tensor* handles, size_t count,
                         size_t expected, const char* role, std::vector<const Tensor*>& tensors) {
  if (count != expected)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string("the executable takes ") +
                                          std::to_string(expected) + " " + role + "s, got " +
                                          std::to_string(count));
  require(handles != nullptr || count == 0, "a tensor array is null");
  for (size_t i = 0; i < count; ++i) {
    const Tensor& tensor = lookup(handles[i]);
    const std::string which = std::string(role) + " " + std::to_string(i);
    if (tensor.context != exe.context)
      fail(PHX_STATUS_INVALID_ARGUMENT, which + " belongs to another context");
    if (tensor.device != exe.device)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           which + " lives on device " + std::to_string(tensor.device->index) +
               ", the executable's is device " + std::to_string(exe.device->index));
    tensors.push_back(&tensor);
  }
}

std::string shape_text(const int64_t* shape, uint32_t rank) {
  std::string s = "[";
  for (uint32_t i = 0; i < rank; ++i) {
    if (i) s += "x";
    s += shape[i] == PHX_DIM_DYNAMIC ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

// The input shapes of a run: each input's dtype and static dimensions as the graph says,
// its dynamic ones of one name one size.
std::vector<Shape> input_shapes(const Executable& exe, const std::vector<const Tensor*>& inputs) {
  std::vector<Shape> shapes;
  std::vector<std::pair<std::string, int64_t>> sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    const InputSpec& spec = exe.inputs[i];
    const std::string which = "input " + std::to_string(i) + " ('" + spec.name + "')";
    if (t.dtype != spec.operand.dtype || t.rank != spec.operand.rank)
      fail(PHX_STATUS_INVALID_ARGUMENT, which + " must be " + phx_dtype_name(spec.operand.dtype) +
                                            shape_text(spec.operand.shape, spec.operand.rank) +
                                            ", got " + phx_dtype_name(t.dtype) +
                                            shape_text(t.shape, t.rank));
    for (uint32_t d = 0; d < t.rank; ++d) {
      const int64_t want = spec.operand.shape[d];
      if (want != PHX_DIM_DYNAMIC && want != t.shape[d])
        fail(PHX_STATUS_INVALID_ARGUMENT, which + " must be " +
                                              shape_text(spec.operand.shape, t.rank) + ", got " +
                                              shape_text(t.shape, t.rank));
      if (want != PHX_DIM_DYNAMIC) continue;
      auto it = std::find_if(sizes.begin(), sizes.end(),
                             [&](const auto& s) { return s.first == spec.dim_names[d]; });
      if (it == sizes.end())
        sizes.emplace_back(spec.dim_names[d], t.shape[d]);
      else if (it->second != t.shape[d])
        fail(PHX_STATUS_INVALID_ARGUMENT,
             which + " has " + std::to_string(t.shape[d]) + " in dimension " + std::to_string(d) +
                 ", which shares its name '" + spec.dim_names[d].substr(1) +
                 "' with a dimension of size " + std::to_string(it->second));
    }
    shapes.emplace_back(t.shape, t.shape + t.rank);
  }
  return shapes;
}

// A plan for the inputs' shapes; empty (no blocks, no outputs) when the executable's own
// plan is for them already.
Plan plan_for(const Executable& exe, const std::vector<const Tensor*>& inputs) {
  const std::vector<Shape> shapes = input_shapes(exe, inputs);
  if (exe.plan.input_shapes == shapes && !exe.plan.outputs.empty()) return Plan();
  return exe.make_plan(shapes);
}

// The plan a call works with: a new one, else the executable's.
const Plan& current(const Executable& exe, const Plan& fresh) {
  return fresh.outputs.empty() ? exe.plan : fresh;
}

void check_outputs(const Executable& exe, const Plan& plan,
                   const std::vector<const Tensor*>& outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& t = *outputs[o];
    const Operand& want = plan.outputs[o];
    if (t.dtype != want.dtype ||
        Shape(t.shape, t.shape + t.rank) != Shape(want.shape, want.shape + want.rank))
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "output " + std::to_string(o) + " ('" + exe.output_names[o] + "') must be " +
               phx_dtype_name(want.dtype) + shape_text(want.shape, want.rank) + ", got " +
               phx_dtype_name(t.dtype) + shape_text(t.shape, t.rank));
  }
}

}  // namespace

extern "C" {

PHX_API phx_status phx_graph_create(phx_context handle, phx_graph* out_graph) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_graph, "out_graph");
    const uintptr_t graph =
        register_object(context, std::make_unique<Graph>(), graph_table(), "graphs");
    *out_graph = reinterpret_cast<phx_graph>(graph);
  });
}

PHX_API phx_status phx_graph_destroy(phx_graph handle) {
  return guard(__func__, [&] {
    Graph& graph = lookup_graph(handle);
    graph.context->destroy_object(graph);
  });
}

PHX_API phx_status phx_graph_add_input(phx_graph handle, const phx_graph_input_desc* desc,
                                       phx_value* out_value) {
  return guard(__func__, [&] {
    Graph& graph = lookup_graph(handle);
    require(desc != nullptr, "desc is null");
    require_out(out_value, "out_value");
    const auto d = read_struct(desc, phx_graph_input_desc PHX_GRAPH_INPUT_DESC_INIT, "desc");
    *out_value = graph.add_input(d);
  });
}

PHX_API phx_status phx_graph_add_constant(phx_graph handle, const char* name, phx_dtype dtype,
                                          size_t rank, const int64_t* shape, const void* data,
                                          size_t size, phx_value* out_value) {
  return guard(__func__, [&] {
    Graph& graph = lookup_graph(handle);
    require_out(out_value, "out_value");
    *out_value = graph.add_constant(name, dtype, rank, shape, data, size);
  });
}

PHX_API phx_status phx_graph_add_constant_tensor(phx_graph handle, const char* name,
                                                 phx_tensor tensor, phx_value* out_value) {
  return guard(__func__, [&] {
    Graph& graph = lookup_graph(handle);
    const Tensor& t = lookup(tensor);
    require_out(out_value, "out_value");
    *out_value = graph.add_constant_tensor(name, t);
  });
}

PHX_API phx_status phx_graph_add_node(phx_graph handle, const phx_graph_node_desc* desc,
                                      phx_value* out_values) {
  return guard(__func__, [&] {
    Graph& graph = lookup_graph(handle);
    require(desc != nullptr, "desc is null");
    require_out(out_values, "out_values");
    const auto d = read_struct(desc, phx_graph_node_desc PHX_GRAPH_NODE_DESC_INIT, "desc");
    const std::vector<phx_value> values = graph.add_node(d);
    std::copy(values.begin(), values.end(), out_values);
  });
}

PHX_API phx_status phx_graph_add_output(phx_graph handle, phx_value value, const char* name) {
  return guard(__func__, [&] { lookup_graph(handle).add_output(value, name); });
}

PHX_API phx_status phx_graph_value_info(phx_graph handle, phx_value id, phx_value_info* out_info) {
  return guard(__func__, [&] {
    const Graph& graph = lookup_graph(handle);
    require_out(out_info, "out_info");
    check_struct_size(out_info->struct_size, "out_info");
    const Value& value = graph.value(id);
    phx_value_info info PHX_VALUE_INFO_INIT;
    info.kind = value.kind;
    info.name = value.name.c_str();
    info.dtype = value.dtype;
    info.rank = value.rank;
    std::copy(value.shape, value.shape + PHX_MAX_RANK, info.shape);
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_graph_compile(phx_context context_handle, phx_graph graph_handle,
                                     const phx_compile_options* options,
                                     phx_executable* out_executable) {
  return guard(__func__, [&] {
    Context& context = lookup(context_handle);
    const Graph& graph = lookup_graph(graph_handle);
    require_out(out_executable, "out_executable");
    const auto opts = read_struct(options, phx_compile_options PHX_COMPILE_OPTIONS_INIT, "options");
    check_compile_options(opts);
    const uint64_t start = context.tracer.active() ? trace::now_ns() : 0;
    auto compiled = compile(context, graph, opts);
    if (start != 0)
      context.tracer.graph_compile(graph.nodes.size(), compiled->devices.size(), start);
    const uintptr_t exe =
        register_object(context, std::move(compiled), executable_table(), "executables");
    *out_executable = reinterpret_cast<phx_executable>(exe);
  });
}

PHX_API phx_status phx_executable_destroy(phx_executable handle) {
  return guard(__func__, [&] {
    Executable& exe = lookup_executable(handle);
    exe.context->destroy_object(exe);
  });
}

PHX_API phx_status phx_executable_run(phx_stream stream_handle, phx_executable handle,
                                      const phx_tensor* inputs, size_t input_count,
                                      const phx_tensor* outputs, size_t output_count,
                                      uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Stream& stream = lookup(stream_handle);
    Executable& exe = lookup_executable(handle);
    require(exe.context == stream.context, "the stream belongs to another context");
    if (stream.device != exe.device)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "the executable was compiled for device " + std::to_string(exe.device->index) +
               ", the stream is on device " + std::to_string(stream.device->index));
    std::vector<const Tensor*> in, out;
    resolve_run_tensors(exe, inputs, input_count, exe.inputs.size(), "input", in);
    resolve_run_tensors(exe, outputs, output_count, exe.output_dtypes.size(), "output", out);
    // Everything is checked before a new plan replaces the old: a refused run changes
    // nothing.
    Plan fresh = plan_for(exe, in);
    check_outputs(exe, current(exe, fresh), out);
    const std::vector<const Tensor*> constants = exe.constant_tensors();
    if (!fresh.outputs.empty()) exe.plan = std::move(fresh);
    const uint64_t ticket = exe.run(stream, in.data(), out.data(), constants);
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

PHX_API phx_status phx_executable_output_desc(phx_executable handle, const phx_tensor* inputs,
                                              size_t input_count, size_t index,
                                              phx_tensor_desc* out_desc) {
  return guard(__func__, [&] {
    Executable& exe = lookup_executable(handle);
    require_out(out_desc, "out_desc");
    check_struct_size(out_desc->struct_size, "out_desc");
    if (index >= exe.output_dtypes.size())
      fail(PHX_STATUS_NOT_FOUND, "no output " + std::to_string(index) + " (the executable has " +
                                     std::to_string(exe.output_dtypes.size()) + ")");
    std::vector<const Tensor*> in;
    resolve_run_tensors(exe, inputs, input_count, exe.inputs.size(), "input", in);
    Plan fresh = plan_for(exe, in);
    if (!fresh.outputs.empty()) exe.plan = std::move(fresh);
    const Operand& output = exe.plan.outputs[index];
    phx_tensor_desc desc PHX_TENSOR_DESC_INIT;
    desc.device = exe.device->index;
    desc.dtype = output.dtype;
    desc.rank = output.rank;
    std::copy(output.shape, output.shape + PHX_MAX_RANK, desc.shape);
    desc.element_count = element_count(output);
    desc.byte_size = desc.element_count * phx_dtype_size(output.dtype);
    write_struct(out_desc, desc, "out_desc");
  });
}

PHX_API phx_status phx_executable_input_info(phx_executable handle, size_t index,
                                             phx_value_info* out_info) {
  return guard(__func__, [&] {
    const Executable& exe = lookup_executable(handle);
    require_out(out_info, "out_info");
    check_struct_size(out_info->struct_size, "out_info");
    if (index >= exe.inputs.size())
      fail(PHX_STATUS_NOT_FOUND, "no input " + std::to_string(index) + " (the executable has " +
                                     std::to_string(exe.inputs.size()) + ")");
    const InputSpec& spec = exe.inputs[index];
    phx_value_info info PHX_VALUE_INFO_INIT;
    info.kind = PHX_VALUE_INPUT;
    info.name = spec.name.c_str();
    info.dtype = spec.operand.dtype;
    info.rank = spec.operand.rank;
    std::copy(spec.operand.shape, spec.operand.shape + PHX_MAX_RANK, info.shape);
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_executable_output_info(phx_executable handle, size_t index,
                                              phx_value_info* out_info) {
  return guard(__func__, [&] {
    const Executable& exe = lookup_executable(handle);
    require_out(out_info, "out_info");
    check_struct_size(out_info->struct_size, "out_info");
    if (index >= exe.output_dtypes.size())
      fail(PHX_STATUS_NOT_FOUND, "no output " + std::to_string(index) + " (the executable has " +
                                     std::to_string(exe.output_dtypes.size()) + ")");
    phx_value_info info PHX_VALUE_INFO_INIT;
    info.kind = PHX_VALUE_NODE_OUTPUT;
    info.name = exe.output_names[index].c_str();
    info.dtype = exe.output_dtypes[index];
    std::fill(info.shape, info.shape + PHX_MAX_RANK, 1);
    if (index < exe.plan.outputs.size()) {
      const Operand& planned = exe.plan.outputs[index];
      info.rank = planned.rank;
      std::copy(planned.shape, planned.shape + PHX_MAX_RANK, info.shape);
    }
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_executable_describe(phx_executable handle, phx_executable_info* out_info) {
  return guard(__func__, [&] {
    const Executable& exe = lookup_executable(handle);
    require_out(out_info, "out_info");
    phx_executable_info info PHX_EXECUTABLE_INFO_INIT;
    info.device = exe.device->index;
    info.input_count = exe.inputs.size();
    info.output_count = exe.output_dtypes.size();
    info.graph_node_count = exe.graph_node_count;
    info.node_count = exe.steps.size() - exe.copies_per_run;
    info.removed_nodes = exe.removed_nodes;
    info.fused_nodes = exe.fused_nodes;
    info.folded_nodes = exe.folded_nodes;
    info.device_count = exe.devices.size();
    info.copies_per_run = exe.copies_per_run;
    info.constant_bytes = exe.constant_bytes;
    info.planned_bytes = exe.plan.planned_bytes;
    info.lower_bound_bytes = exe.plan.lower_bound_bytes;
    info.compile_time_ns = exe.compile_time_ns;
    info.run_count = exe.run_count;
    for (const auto& native : exe.plan.native)
      if (native != nullptr) {
        ++info.native_parts;
        info.native_nodes += native->span().count;
      }
    for (size_t k = 0; k < exe.steps.size(); ++k)
      if (!exe.steps[k].copy && is_float(exe.slot_dtype(exe.steps[k].inputs[0])) &&
          !is_float(exe.compute_dtype(k)))
        ++info.quantized_nodes;
    info.calibration_error = exe.calibration_error;
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_executable_stats(phx_executable handle, phx_metric* out_metrics,
                                        size_t capacity, size_t* out_count) {
  return guard(__func__, [&] {
    const Executable& exe = lookup_executable(handle);
    require_out(out_count, "out_count");
    require(out_metrics != nullptr || capacity == 0, "out_metrics is null but capacity is not 0");
    std::vector<phx_metric> metrics;
    for (const auto& native : exe.plan.native)
      if (native != nullptr) {
        const std::vector<phx_metric> part = native->stats();
        metrics.insert(metrics.end(), part.begin(), part.end());
      }
    std::copy_n(metrics.begin(), std::min(capacity, metrics.size()), out_metrics);
    *out_count = metrics.size();
  });
}

PHX_API phx_status phx_executable_describe_node(phx_executable handle, size_t index,
                                                phx_executable_node_info* out_info) {
  return guard(__func__, [&] {
    const Executable& exe = lookup_executable(handle);
    require_out(out_info, "out_info");
    check_struct_size(out_info->struct_size, "out_info");
    size_t k = 0, seen = 0;
    for (; k < exe.steps.size(); ++k)
      if (!exe.steps[k].copy && seen++ == index) break;
    if (k == exe.steps.size())
      fail(PHX_STATUS_NOT_FOUND, "no node " + std::to_string(index) + " (the executable runs " +
                                     std::to_string(seen) + ")");
    const Step& step = exe.steps[k];
    phx_executable_node_info info PHX_EXECUTABLE_NODE_INFO_INIT;
    info.name = step.name.c_str();
    info.op = step.op;
    info.device = exe.devices[step.device]->index;
    info.compute_dtype = exe.compute_dtype(k);
    info.predicted_time_ns = step.predicted_time_ns;
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_executable_save(phx_executable handle, void* buffer, size_t capacity,
                                       size_t* out_size) {
  return guard(__func__, [&] {
    Executable& exe = lookup_executable(handle);
    require_out(out_size, "out_size");
    require(buffer != nullptr || capacity == 0, "buffer is null but capacity is not 0");
    const std::vector<unsigned char> bytes = save_executable(exe);
    if (capacity != 0 && capacity < bytes.size())
      fail(PHX_STATUS_INVALID_ARGUMENT, "capacity " + std::to_string(capacity) +
                                            " is less than the " + std::to_string(bytes.size()) +
                                            " bytes the executable takes");
    if (capacity != 0) std::copy(bytes.begin(), bytes.end(), static_cast<unsigned char*>(buffer));
    *out_size = bytes.size();
  });
}

PHX_API phx_status phx_executable_load(phx_context context_handle, const void* data, size_t size,
                                       const phx_compile_options* options,
                                       phx_executable* out_executable) {
  return guard(__func__, [&] {
    Context& context = lookup(context_handle);
    require_out(out_executable, "out_executable");
    require(data != nullptr, "data is null");
    std::optional<phx_compile_options> opts;
    if (options != nullptr)
      opts = read_struct(options, phx_compile_options PHX_COMPILE_OPTIONS_INIT, "options");
    const uintptr_t exe =
        register_object(context, load_executable(context, data, size, opts ? &*opts : nullptr),
                        executable_table(), "executables");
    *out_executable = reinterpret_cast<phx_executable>(exe);
  });
}

}  // extern "C"
