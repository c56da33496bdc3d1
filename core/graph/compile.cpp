#include "compile.h"

#include <phx/abi_structs.h>
#include <phx/progress.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>

#include "calibration.h"
#include "errors.h"
#include "passes.h"
#include "transfer.h"

namespace phx::graph {
namespace {

// Named for the progress line of a long compile.
struct NamedPass {
  const char* name;
  Pass run;
};

constexpr NamedPass kPasses[] = {
    {"remove_dead_nodes", remove_dead_nodes},
    {"fuse_attention", fuse_attention},
    {"fuse_qdq", fuse_qdq},
    {"fuse_gelu", fuse_gelu},
    {"fuse_matmul_epilogues", fuse_matmul_epilogues},
    {"fuse_norms", fuse_norms},
    {"calibrate", calibrate},
    {"assess_devices", assess_devices},
    {"place_nodes", place_nodes},
    {"fold_constants", fold_constants},
    {"report_placement", report_placement},
};

// A new tensor of device holding a copy of source (whose device's work has finished).
Tensor& copy_onto(Context& context, Device& device, const Tensor& source) {
  Tensor& copy = context.create_tensor(device, source.dtype, source.rank, source.shape);
  try {
    copy_tensor(copy, source);
  } catch (...) {
    context.destroy_tensor(copy);
    throw;
  }
  return copy;
}

// The constant value on a device: host bytes written into a new tensor, a tensor of that
// device read in place, a tensor of another device copied.
Constant place_constant(Context& context, Device& device, const Value& value) {
  Constant constant;
  constant.operand = value.operand();
  if (value.tensor == 0) {
    constant.owned = &context.create_tensor(device, value.dtype, value.rank, value.shape);
    try {
      write_from_host(*constant.owned, value.bytes.data());
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
  if (source->device == &device) {
    constant.referenced = value.tensor;
    return constant;
  }
  source->device->wait_for_streams();
  constant.owned = &copy_onto(context, device, *source);
  return constant;
}

// Lowers what the passes decided into the executable: the folded nodes computed into
// constants, then a step per remaining node on its device, with a copy step wherever a
// value is read on another device than the one that holds it, and after a node of another
// device that writes a graph output.
class Lowering {
 public:
  // progress counts the live nodes, as each is folded or becomes a step.
  Lowering(Program& program, Executable& exe, Progress& progress)
      : program_(program),
        graph_(program.graph),
        exe_(exe),
        progress_(progress),
        constant_(graph_.values.size()) {
    for (size_t i = 0; i < graph_.inputs.size(); ++i)
      where_[{graph_.inputs[i], 0}] =
          with_range({Slot::input, static_cast<uint32_t>(i)}, graph_.inputs[i]);
    for (size_t v = 0; v < graph_.values.size(); ++v)
      constant_[v] = graph_.values[v].kind == PHX_VALUE_CONSTANT;
  }

  void run() {
    compute_folded_nodes();
    make_steps();
    drop_unread_constants();
  }

 private:
  Slot add_constant(Constant constant) {
    exe_.constants.push_back(constant);
    return {Slot::constant, static_cast<uint32_t>(exe_.constants.size() - 1)};
  }

  Slot add_intermediate(phx_value v, uint32_t device) {
    exe_.intermediate_dtypes.push_back(graph_.values[v].dtype);
    exe_.intermediate_devices.push_back(device);
    return with_range(
        {Slot::intermediate, static_cast<uint32_t>(exe_.intermediate_dtypes.size() - 1)}, v);
  }

  // Records the calibrated range of v as slot's, where there are ranges.
  Slot with_range(Slot slot, phx_value v) {
    if (!program_.ranges.empty()) exe_.ranges[{slot.kind, slot.index}] = program_.ranges[v];
    return slot;
  }

  const Tensor* constant_tensor(Slot slot) const {
    const Constant& c = exe_.constants[slot.index];
    return c.owned != nullptr ? c.owned : &lookup(reinterpret_cast<phx_tensor>(c.referenced));
  }

  // Where value v is on device d: placed there the first time a constant is asked for,
  // copied there by a step before the reader otherwise.
  Slot slot_on(phx_value v, uint32_t d) {
    if (auto it = where_.find({v, d}); it != where_.end()) return it->second;
    Device& device = *program_.devices[d];
    exe_.constants.reserve(exe_.constants.size() + 1);
    Slot slot;
    if (graph_.values[v].kind == PHX_VALUE_CONSTANT) {
      slot = with_range(add_constant(place_constant(*exe_.context, device, graph_.values[v])), v);
    } else if (constant_[v]) {  // a folded node's result, on the device that folded it
      const Tensor& source = *constant_tensor(home_slot(v));
      Constant constant;
      constant.operand = exe_.constants[home_slot(v).index].operand;
      constant.owned = &copy_onto(*exe_.context, device, source);
      slot = with_range(add_constant(constant), v);
    } else {
      Step copy;
      copy.name = "copy of " + graph_.values[v].name;
      copy.device = d;
      copy.copy = true;
      copy.inputs = {home_slot(v)};
      slot = add_intermediate(v, d);
      copy.outputs = {slot};
      exe_.steps.push_back(std::move(copy));
      ++exe_.copies_per_run;
    }
    where_[{v, d}] = slot;
    return slot;
  }

  Slot home_slot(phx_value v) const { return where_.at({v, home_.at(v)}); }

  // Runs the folded nodes once, each on its device's stream, into tensors that become
  // constants of that device.
  void compute_folded_nodes() {
    if (std::none_of(program_.folded.begin(), program_.folded.end(), [](bool f) { return f; }))
      return;
    Context& context = *exe_.context;
    std::vector<Stream*> streams(program_.devices.size(), nullptr);
    try {
      for (size_t n = 0; n < program_.nodes.size(); ++n) {
        if (!program_.folded[n]) continue;
        progress_.update(lowered_++, program_.nodes[n].name);
        const uint32_t d = program_.placement[n];
        if (streams[d] == nullptr) streams[d] = &context.create_stream(*program_.devices[d]);
        fold(*streams[d], program_.nodes[n], d);
      }
      for (Stream* stream : streams)
        if (stream != nullptr) stream->wait(UINT64_MAX);
    } catch (...) {
      for (Stream* stream : streams)
        if (stream != nullptr) context.destroy_stream(*stream);
      throw;
    }
    for (Stream* stream : streams)
      if (stream != nullptr) context.destroy_stream(*stream);
  }

  void fold(Stream& stream, const Node& node, uint32_t d) {
    const Tensor* in[kMaxOpInputs] = {};
    const Tensor* out[kMaxOpOutputs] = {};
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] == PHX_VALUE_NONE) continue;
      // A folded input of another device was computed on another stream: done first.
      if (home_.count(node.inputs[i]) != 0 && home_.at(node.inputs[i]) != d)
        program_.devices[home_.at(node.inputs[i])]->wait_for_streams();
      in[i] = constant_tensor(slot_on(node.inputs[i], d));
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const Value& value = graph_.values[node.outputs[o]];
      Constant constant;
      constant.operand = value.operand();
      exe_.constants.reserve(exe_.constants.size() + 1);
      constant.owned =
          &exe_.context->create_tensor(*program_.devices[d], value.dtype, value.rank, value.shape);
      out[o] = constant.owned;
      where_[{node.outputs[o], d}] = with_range(add_constant(constant), node.outputs[o]);
      home_[node.outputs[o]] = d;
      constant_[node.outputs[o]] = true;
    }
    stream.submit(node.op, node.params_ptr(), in, node.inputs.size(), out, node.outputs.size(),
                  node.name.c_str());
  }

  void make_steps() {
    for (const phx_value v : graph_.inputs) home_[v] = 0;
    for (size_t n = 0; n < program_.nodes.size(); ++n) {
      if (!program_.live[n] || program_.folded[n]) continue;
      const Node& node = program_.nodes[n];
      progress_.update(lowered_++, node.name);
      const uint32_t d = program_.placement[n];
      Step step;
      step.name = node.name;
      step.device = d;
      step.op = node.op;
      step.params = node.params;
      step.has_params = node.has_params;
      step.predicted_time_ns = program_.placed_time_ns[n];
      step.claimed = program_.placed_by_claim[n];
      for (phx_value v : node.inputs)
        step.inputs.push_back(v == PHX_VALUE_NONE ? Slot{} : slot_on(v, d));
      std::vector<std::pair<phx_value, uint32_t>> outputs_to_copy;
      for (phx_value v : node.outputs) {
        const auto output = std::find(graph_.outputs.begin(), graph_.outputs.end(), v);
        const bool graph_output = output != graph_.outputs.end();
        const Slot slot =
            graph_output && d == 0
                ? with_range({Slot::output, static_cast<uint32_t>(output - graph_.outputs.begin())},
                             v)
                : add_intermediate(v, d);
        if (graph_output && d != 0)
          outputs_to_copy.emplace_back(v, static_cast<uint32_t>(output - graph_.outputs.begin()));
        step.outputs.push_back(slot);
        where_[{v, d}] = slot;
        home_[v] = d;
      }
      exe_.steps.push_back(std::move(step));
      for (const auto& [v, index] : outputs_to_copy) {
        Step copy;
        copy.name = "copy of " + graph_.values[v].name;
        copy.copy = true;
        copy.inputs = {where_.at({v, d})};
        copy.outputs = {with_range(Slot{Slot::output, index}, v)};
        where_[{v, 0}] = copy.outputs[0];
        exe_.steps.push_back(std::move(copy));
        ++exe_.copies_per_run;
      }
    }
  }

  // Constants no step reads (those only folded nodes read) are freed now.
  void drop_unread_constants() {
    std::vector<bool> read(exe_.constants.size(), false);
    for (const Step& step : exe_.steps)
      for (const Slot& slot : step.inputs)
        if (slot.kind == Slot::constant) read[slot.index] = true;
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
    for (Step& step : exe_.steps)
      for (Slot& slot : step.inputs)
        if (slot.kind == Slot::constant) slot.index = renumbered[slot.index];
    std::map<std::pair<uint8_t, uint32_t>, phx_plugin_value_range> ranges;
    for (const auto& [slot, range] : exe_.ranges)
      if (slot.first != Slot::constant)
        ranges[slot] = range;
      else if (read[slot.second])
        ranges[{slot.first, renumbered[slot.second]}] = range;
    exe_.ranges = std::move(ranges);
    for (const Constant& c : exe_.constants)
      exe_.constant_bytes += element_count(c.operand) * phx_dtype_size(c.operand.dtype);
  }

  Program& program_;
  const Graph& graph_;
  Executable& exe_;
  Progress& progress_;
  size_t lowered_ = 0;                                    // live nodes folded or made steps so far
  std::vector<bool> constant_;                            // per value: a constant or folded
  std::map<std::pair<phx_value, uint32_t>, Slot> where_;  // a value's slot on a device
  std::map<phx_value, uint32_t> home_;  // the device that computed a value or holds an input
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

// The devices the steps run on, the executable's first, and a stream of its own on each
// of the others; steps renumbered to index them.
void use_devices(const Program& program, Executable& exe) {
  std::vector<uint32_t> index(program.devices.size(), UINT32_MAX);
  index[0] = 0;
  exe.devices = {program.devices[0]};
  exe.streams = {nullptr};
  auto use = [&](uint32_t d) {
    if (index[d] != UINT32_MAX) return index[d];
    exe.streams.reserve(exe.streams.size() + 1);
    exe.devices.reserve(exe.devices.size() + 1);
    exe.streams.push_back(&exe.context->create_stream(*program.devices[d]));
    exe.devices.push_back(program.devices[d]);
    return index[d] = static_cast<uint32_t>(exe.devices.size() - 1);
  };
  for (Step& step : exe.steps) step.device = use(step.device);
  for (uint32_t& d : exe.intermediate_devices) d = use(d);
}

// The runs of consecutive steps on one device whose plugin compiles graphs, which each
// plan hands to the plugin whole.
void find_native_parts(Executable& exe) {
  for (size_t k = 0; k < exe.steps.size();) {
    const Step& step = exe.steps[k];
    if (step.copy || !exe.devices[step.device]->plugin->compiles_graphs()) {
      ++k;
      continue;
    }
    PartSpan span{step.device, k, 0};
    for (; k < exe.steps.size() && !exe.steps[k].copy && exe.steps[k].device == span.device; ++k)
      ++span.count;
    exe.parts.push_back(span);
  }
}

}  // namespace

void check_compile_options(const phx_compile_options& options) {
  constexpr uint32_t known = PHX_COMPILE_NO_MEMORY_PLAN | PHX_COMPILE_NO_CONSTANT_FOLDING |
                             PHX_COMPILE_NO_FUSION | PHX_COMPILE_DETERMINISTIC;
  if ((options.flags & ~known) != 0)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "unknown compile flags " + std::to_string(options.flags & ~known));
  const int placement = enum_value(options.placement);
  if (placement != PHX_PLACEMENT_FIRST && placement != PHX_PLACEMENT_COST)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "unknown placement policy " + std::to_string(placement) + " in options.placement");
  require(options.other_devices != nullptr || options.other_device_count == 0,
          "options.other_devices is null");
  require(options.calibration_inputs != nullptr || options.calibration_sample_count == 0,
          "options.calibration_inputs is null but calibration_sample_count is not 0");
}

std::unique_ptr<Executable> compile(Context& context, const Graph& graph,
                                    const phx_compile_options& options) {
  const auto start = std::chrono::steady_clock::now();
  require(graph.context == &context, "the graph belongs to another context");
  if (graph.outputs.empty())
    fail(PHX_STATUS_INVALID_ARGUMENT, "the graph has no outputs (phx_graph_add_output)");
  // The passes, then the lowering; started first, so that show_after counts the whole
  // compile.
  Progress progress(std::size(kPasses), "passes");
  Program program(graph, context.device(options.device), options.flags);
  program.policy = options.placement;
  program.samples = read_samples(context, graph, options);
  for (size_t i = 0; i < options.other_device_count; ++i) {
    Device* other = &context.device(options.other_devices[i]);
    if (std::find(program.devices.begin(), program.devices.end(), other) == program.devices.end())
      program.devices.push_back(other);
  }
  for (size_t i = 0; i < std::size(kPasses); ++i) {
    progress.update(i, kPasses[i].name);
    kPasses[i].run(program);
  }
  progress.next_stage(
      static_cast<size_t>(std::count(program.live.begin(), program.live.end(), true)),
      "nodes lowered");

  auto exe = std::make_unique<Executable>();
  exe->context = &context;
  exe->device = program.devices[0];
  exe->flags = options.flags;
  describe_interface(graph, *exe);
  // The executable frees what the lowering made if anything after it throws.
  Lowering(program, *exe, progress).run();
  use_devices(program, *exe);
  find_native_parts(*exe);
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
    exe->plan = exe->make_plan(shapes);
  }
  if (!program.samples.empty()) exe->calibration_error = measure_calibration_error(*exe, program);
  exe->compile_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  return exe;
}

}  // namespace phx::graph
