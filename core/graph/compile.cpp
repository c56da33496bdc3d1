#include "compile.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "errors.h"
#include "passes.h"
#include "transfer.h"

namespace phx::graph {
namespace {

constexpr Pass kPasses[] = {remove_dead_nodes, fuse_matmul_epilogues, check_device_support,
                            fold_constants};

Operand operand_of_value(const Value& value) { return value.operand(); }

void write_bytes(Tensor& tensor, const std::vector<unsigned char>& bytes) {
  auto& plugin = *tensor.device->plugin;
  plugin.call("buffer_write", tensor.device->index, [&] {
    return plugin.api().buffer_write(plugin.instance(), tensor.buffer, 0, bytes.data(),
                                     bytes.size());
  });
}

// The constant value on the executable's device: host bytes written into a new tensor,
// a tensor of that device read in place, a tensor of another device copied.
Constant place_constant(Executable& exe, const Value& value) {
  Context& context = *exe.context;
  Constant constant;
  constant.operand = operand_of_value(value);
  if (value.tensor == 0) {
    constant.owned = &context.create_tensor(*exe.device, value.dtype, value.rank, value.shape);
    try {
      write_bytes(*constant.owned, value.bytes);
    } catch (...) {
      context.destroy_tensor(*constant.owned);
      throw;
    }
    return constant;
  }
  Tensor* source = nullptr;
  try {
    source = &lookup(reinterpret_cast<phx_tensor>(value.tensor));
  } catch (const Error&) {
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "constant '" + value.name + "' is a tensor that was destroyed before the compile");
  }
  if (source->device == exe.device) {
    constant.referenced = value.tensor;
    return constant;
  }
  constant.owned = &context.create_tensor(*exe.device, value.dtype, value.rank, value.shape);
  try {
    source->device->wait_for_streams();
    copy_through_host(*constant.owned, *source);
  } catch (...) {
    context.destroy_tensor(*constant.owned);
    throw;
  }
  return constant;
}

// Assigns the slots of the values the steps read and write.
class SlotMap {
 public:
  explicit SlotMap(const Graph& graph) : slots_(graph.values.size()) {
    for (size_t i = 0; i < graph.inputs.size(); ++i)
      slots_[graph.inputs[i]] = {Slot::input, static_cast<uint32_t>(i)};
    for (size_t o = 0; o < graph.outputs.size(); ++o)
      slots_[graph.outputs[o]] = {Slot::output, static_cast<uint32_t>(o)};
  }
  Slot& operator[](phx_value v) { return slots_[v]; }

 private:
  std::vector<Slot> slots_;
};

class Lowering {
 public:
  Lowering(Program& program, Executable& exe)
      : program_(program), graph_(program.graph), exe_(exe), slots_(graph_) {}

  void run() {
    place_constants();
    compute_folded_nodes();
    drop_unread_constants();
    make_steps();
  }

 private:
  Slot constant_slot(Constant constant) {
    exe_.constants.push_back(constant);
    return {Slot::constant, static_cast<uint32_t>(exe_.constants.size() - 1)};
  }

  void place_constants() {
    std::vector<bool> read(graph_.values.size(), false);
    for (size_t n = 0; n < program_.nodes.size(); ++n)
      if (program_.live[n])
        for (phx_value v : program_.nodes[n].inputs)
          if (v != PHX_VALUE_NONE) read[v] = true;
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (read[v] && graph_.values[v].kind == PHX_VALUE_CONSTANT) {
        exe_.constants.reserve(exe_.constants.size() + 1);
        slots_[static_cast<phx_value>(v)] = constant_slot(place_constant(exe_, graph_.values[v]));
      }
  }

  const Tensor* constant_tensor(const Slot& slot) {
    const Constant& c = exe_.constants[slot.index];
    return c.owned != nullptr ? c.owned : &lookup(reinterpret_cast<phx_tensor>(c.referenced));
  }

  // Runs the folded nodes once, on a stream of their own, into tensors that become
  // constants.
  void compute_folded_nodes() {
    if (std::none_of(program_.folded.begin(), program_.folded.end(), [](bool f) { return f; }))
      return;
    Context& context = *exe_.context;
    Stream& stream = context.create_stream(*exe_.device);
    try {
      for (size_t n = 0; n < program_.nodes.size(); ++n)
        if (program_.folded[n]) fold(stream, program_.nodes[n]);
      stream.wait(UINT64_MAX);
    } catch (...) {
      context.destroy_stream(stream);
      throw;
    }
    context.destroy_stream(stream);
  }

  void fold(Stream& stream, const Node& node) {
    const Tensor* in[kMaxOpInputs] = {};
    const Tensor* out[kMaxOpOutputs] = {};
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] != PHX_VALUE_NONE) in[i] = constant_tensor(slots_[node.inputs[i]]);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const Value& value = graph_.values[node.outputs[o]];
      Constant constant;
      constant.operand = operand_of_value(value);
      exe_.constants.reserve(exe_.constants.size() + 1);
      constant.owned =
          &exe_.context->create_tensor(*exe_.device, value.dtype, value.rank, value.shape);
      out[o] = constant.owned;
      slots_[node.outputs[o]] = constant_slot(constant);
    }
    stream.submit(node.op, node.params_ptr(), in, node.inputs.size(), out, node.outputs.size(),
                  node.name.c_str());
  }

  // Constants only folded nodes read are freed now: the runs never read them.
  void drop_unread_constants() {
    std::vector<bool> read(exe_.constants.size(), false);
    for (size_t n = 0; n < program_.nodes.size(); ++n)
      if (program_.live[n] && !program_.folded[n])
        for (phx_value v : program_.nodes[n].inputs)
          if (v != PHX_VALUE_NONE && slots_[v].kind == Slot::constant) read[slots_[v].index] = true;
    std::vector<uint32_t> renumbered(exe_.constants.size());
    std::vector<Constant> kept;
    kept.reserve(exe_.constants.size());  // nothing below throws once a tensor is freed
    for (size_t k = 0; k < exe_.constants.size(); ++k) {
      Constant& c = exe_.constants[k];
      if (read[k]) {
        renumbered[k] = static_cast<uint32_t>(kept.size());
        kept.push_back(c);
      } else if (c.owned != nullptr) {
        exe_.context->destroy_tensor(*c.owned);
      }
    }
    exe_.constants = std::move(kept);
    for (size_t v = 0; v < graph_.values.size(); ++v) {
      Slot& slot = slots_[static_cast<phx_value>(v)];
      if (slot.kind == Slot::constant) slot.index = renumbered[slot.index];
    }
    for (const Constant& c : exe_.constants)
      exe_.constant_bytes += element_count(c.operand) * phx_dtype_size(c.operand.dtype);
  }

  void make_steps() {
    for (size_t n = 0; n < program_.nodes.size(); ++n) {
      if (!program_.live[n] || program_.folded[n]) continue;
      const Node& node = program_.nodes[n];
      Step step;
      step.name = node.name;
      step.op = node.op;
      step.params = node.params;
      step.has_params = node.has_params;
      for (phx_value v : node.inputs)
        step.inputs.push_back(v == PHX_VALUE_NONE ? Slot{} : slots_[v]);
      for (phx_value v : node.outputs) {
        if (slots_[v].kind == Slot::none) {
          slots_[v] = {Slot::intermediate, static_cast<uint32_t>(exe_.intermediate_dtypes.size())};
          exe_.intermediate_dtypes.push_back(graph_.values[v].dtype);
        }
        step.outputs.push_back(slots_[v]);
      }
      exe_.steps.push_back(std::move(step));
    }
  }

  Program& program_;
  const Graph& graph_;
  Executable& exe_;
  SlotMap slots_;
};

void describe_interface(const Graph& graph, Executable& exe) {
  for (phx_value v : graph.inputs) {
    const Value& value = graph.values[v];
    InputSpec spec;
    spec.name = value.name;
    spec.operand = value.operand();
    std::copy(std::begin(value.dim_names), std::end(value.dim_names), spec.dim_names);
    exe.inputs.push_back(std::move(spec));
  }
  exe.output_names = graph.output_names;
  for (phx_value v : graph.outputs) exe.output_dtypes.push_back(graph.values[v].dtype);
}

}  // namespace

std::unique_ptr<Executable> compile(Context& context, const Graph& graph,
                                    const phx_compile_options& options) {
  const auto start = std::chrono::steady_clock::now();
  require(graph.context == &context, "the graph belongs to another context");
  if (graph.outputs.empty())
    fail(PHX_STATUS_INVALID_ARGUMENT, "the graph has no outputs (phx_graph_add_output)");
  Device& device = context.device(options.device);
  Program program{graph, device, options.flags, graph.nodes, {}, {}};
  for (Pass pass : kPasses) pass(program);

  auto exe = std::make_unique<Executable>();
  exe->context = &context;
  exe->device = &device;
  exe->flags = options.flags;
  describe_interface(graph, *exe);
  // The executable frees what the lowering made if anything after it throws.
  Lowering(program, *exe).run();
  exe->graph_node_count = graph.nodes.size();
  exe->fused_nodes = program.fused_nodes;
  exe->removed_nodes =
      static_cast<size_t>(std::count(program.live.begin(), program.live.end(), false)) -
      program.fused_nodes;
  exe->folded_nodes =
      static_cast<size_t>(std::count(program.folded.begin(), program.folded.end(), true));
  const bool dynamic = std::any_of(graph.inputs.begin(), graph.inputs.end(),
                                   [&](phx_value v) { return graph.values[v].dynamic(); });
  if (!dynamic) {
    std::vector<Shape> shapes;
    for (const InputSpec& spec : exe->inputs)
      shapes.emplace_back(spec.operand.shape, spec.operand.shape + spec.operand.rank);
    exe->make_plan(shapes);
  }
  exe->compile_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  return exe;
}

}  // namespace phx::graph
