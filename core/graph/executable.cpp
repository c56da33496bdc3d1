#include "executable.h"

#include "errors.h"
#include "graph.h"
#include "transfer.h"

namespace phx::graph {
namespace {

Operand with_shape(phx_dtype dtype, const Shape& shape) {
  Operand operand;
  operand.dtype = dtype;
  operand.rank = static_cast<uint32_t>(shape.size());
  std::fill(operand.shape, operand.shape + PHX_MAX_RANK, 1);
  std::copy(shape.begin(), shape.end(), operand.shape);
  return operand;
}

// A tensor that is a range of block: it has no handle and is never freed on its own.
std::unique_ptr<Tensor> view_of(const Tensor& block, const Operand& operand, uint64_t offset) {
  auto view = std::make_unique<Tensor>();
  view->context = block.context;
  view->device = block.device;
  view->dtype = operand.dtype;
  view->rank = operand.rank;
  std::copy(operand.shape, operand.shape + PHX_MAX_RANK, view->shape);
  view->element_count = element_count(operand);
  view->byte_size = view->element_count * phx_dtype_size(operand.dtype);
  view->buffer = block.buffer;
  view->offset = offset;
  return view;
}

}  // namespace

ExecutableTable& executable_table() {
  static ExecutableTable table;
  return table;
}

Executable::~Executable() {
  executable_table().remove(handle);
  // destroy_tensor waits for the device's queued work, this executable's runs included.
  plan.free_blocks();
  for (Constant& constant : constants)
    if (constant.owned != nullptr) context->destroy_tensor(*constant.owned);
  for (Stream* stream : streams)
    if (stream != nullptr) {
      try {
        context->destroy_stream(*stream);
      } catch (const Error& e) {
        context->logger->error("destroying an executable's stream: {}", e.what());
      }
    }
}

Plan& Plan::operator=(Plan&& other) noexcept {
  if (this == &other) return *this;
  free_blocks();
  input_shapes = std::move(other.input_shapes);
  intermediates = std::move(other.intermediates);
  outputs = std::move(other.outputs);
  planned_bytes = other.planned_bytes;
  lower_bound_bytes = other.lower_bound_bytes;
  context = other.context;
  blocks = std::move(other.blocks);
  views = std::move(other.views);
  native = std::move(other.native);
  other.blocks.clear();
  return *this;
}

void Plan::free_blocks() noexcept {
  native.clear();  // the plugins' executables refer to the blocks
  for (Tensor* block : blocks)
    if (block != nullptr) context->destroy_tensor(*block);
  blocks.clear();
  views.clear();
}

Plan Executable::make_plan(const std::vector<Shape>& input_shapes) const {
  Plan next;
  next.context = context;
  next.input_shapes = input_shapes;
  next.intermediates.resize(intermediate_dtypes.size());
  next.outputs.resize(output_dtypes.size());
  std::vector<Operand> input_operands(inputs.size()), constant_operands;
  for (const Constant& constant : constants) constant_operands.push_back(constant.operand);
  for (size_t i = 0; i < inputs.size(); ++i)
    input_operands[i] = with_shape(inputs[i].operand.dtype, input_shapes[i]);
  auto operand_at = [&](Slot slot) -> Operand& {
    switch (slot.kind) {
      case Slot::input:
        return input_operands[slot.index];
      case Slot::output:
        return next.outputs[slot.index];
      case Slot::constant:
        return constant_operands[slot.index];
      case Slot::intermediate:
      case Slot::none:
        break;
    }
    return next.intermediates[slot.index];
  };

  std::vector<Lifetime> lifetimes(intermediate_dtypes.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& step = steps[k];
    const Operand* in[kMaxOpInputs] = {};
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i].kind == Slot::none) continue;
      in[i] = &operand_at(step.inputs[i]);
      if (step.inputs[i].kind == Slot::intermediate) lifetimes[step.inputs[i].index].last = k;
    }
    Shape shapes[kMaxOpOutputs];
    try {
      if (step.copy)
        shapes[0] = Shape(in[0]->shape, in[0]->shape + in[0]->rank);
      else
        infer_output_shapes(step.op, step.params_ptr(), in, step.inputs.size(), shapes,
                            step.outputs.size());
      for (size_t o = 0; o < step.outputs.size(); ++o) {
        const Slot slot = step.outputs[o];
        const phx_dtype dtype =
            slot.kind == Slot::output ? output_dtypes[slot.index] : intermediate_dtypes[slot.index];
        operand_at(slot) = with_shape(dtype, shapes[o]);
        const uint64_t bytes = output_byte_size(operand_at(slot));
        if (slot.kind == Slot::intermediate) lifetimes[slot.index] = {bytes, k, k};
      }
    } catch (const Error& e) {
      fail(e.status(), "node '" + step.name + "': " + e.what());
    }
  }

  plan_device_memory(next, lifetimes);
  compile_native_parts(next, operand_at);
  return next;
}

// The parts for this plan's shapes; a part the plugin declines runs step by step.
void Executable::compile_native_parts(Plan& next,
                                      const std::function<Operand(Slot)>& operand_at) const {
  if (parts.empty()) return;
  const std::vector<const Tensor*> constant_data = constant_tensors();
  PartContext part;
  part.steps = &steps;
  if ((flags & PHX_COMPILE_NO_FUSION) != 0) part.flags |= PHX_PLUGIN_GRAPH_NO_FUSION;
  part.operand = operand_at;
  part.name = [&](Slot slot) -> std::string {
    switch (slot.kind) {
      case Slot::input:
        return inputs[slot.index].name;
      case Slot::output:
        return output_names[slot.index];
      case Slot::constant:
        return "constant " + std::to_string(slot.index);
      case Slot::intermediate:
      case Slot::none:
        break;
    }
    return "intermediate " + std::to_string(slot.index);
  };
  part.fixed_constant = [&](Slot slot) { return constants[slot.index].owned != nullptr; };
  if (!ranges.empty())
    part.range = [&](Slot slot) {
      const auto it = ranges.find({slot.kind, slot.index});
      return it != ranges.end() ? it->second : phx_plugin_value_range{0, 0, 0};
    };
  if ((flags & PHX_COMPILE_DETERMINISTIC) != 0) part.flags |= PHX_PLUGIN_GRAPH_DETERMINISTIC;
  part.constant = [&](Slot slot) { return constant_data[slot.index]; };
  try {
    for (size_t p = 0; p < parts.size(); ++p) {
      const auto saved = std::find_if(
          saved_parts.begin(), saved_parts.end(),
          [&](const SavedPart& s) { return s.part == p && s.input_shapes == next.input_shapes; });
      part.serialized = saved != saved_parts.end() ? saved->bytes.data() : nullptr;
      part.serialized_size = saved != saved_parts.end() ? saved->bytes.size() : 0;
      next.native.push_back(
          NativePart::compile(*context, *devices[parts[p].device], parts[p], part));
    }
  } catch (...) {
    next.free_blocks();
    throw;
  }
}

// One block per device for the intermediates that live there, each planned on its own.
void Executable::plan_device_memory(Plan& next, const std::vector<Lifetime>& lifetimes) const {
  const bool reuse = (flags & PHX_COMPILE_NO_MEMORY_PLAN) == 0;
  std::vector<uint64_t> offsets(lifetimes.size());
  next.blocks.assign(devices.size(), nullptr);
  try {
    for (uint32_t d = 0; d < devices.size(); ++d) {
      std::vector<Lifetime> here;
      std::vector<size_t> which;
      for (size_t v = 0; v < lifetimes.size(); ++v)
        if (intermediate_devices[v] == d) {
          here.push_back(lifetimes[v]);
          which.push_back(v);
        }
      const MemoryPlan memory = plan_memory(here, steps.size(), reuse);
      next.planned_bytes += memory.size;
      next.lower_bound_bytes += memory.lower_bound;
      for (size_t k = 0; k < which.size(); ++k) offsets[which[k]] = memory.offsets[k];
      if (memory.size == 0) continue;
      const auto size = static_cast<int64_t>(memory.size);
      next.blocks[d] = &context->create_tensor(*devices[d], PHX_DTYPE_U8, 1, &size);
    }
    for (size_t v = 0; v < next.intermediates.size(); ++v)
      next.views.push_back(
          view_of(*next.blocks[intermediate_devices[v]], next.intermediates[v], offsets[v]));
  } catch (...) {
    next.free_blocks();
    throw;
  }
}

phx_dtype Executable::slot_dtype(Slot slot) const {
  switch (slot.kind) {
    case Slot::input:
      return inputs[slot.index].operand.dtype;
    case Slot::output:
      return output_dtypes[slot.index];
    case Slot::constant:
      return constants[slot.index].operand.dtype;
    case Slot::intermediate:
      return intermediate_dtypes[slot.index];
    case Slot::none:
      break;
  }
  return PHX_DTYPE_INVALID;
}

phx_dtype Executable::compute_dtype(size_t k) const {
  for (size_t p = 0; p < plan.native.size(); ++p) {
    const NativePart* native = plan.native[p].get();
    if (native == nullptr || k < parts[p].first || k >= parts[p].first + parts[p].count) continue;
    const phx_dtype reported = native->compute_dtype(k - parts[p].first);
    if (reported != PHX_DTYPE_INVALID) return reported;
  }
  return slot_dtype(steps[k].inputs[0]);
}

std::vector<const Tensor*> Executable::constant_tensors() const {
  std::vector<const Tensor*> tensors(constants.size());
  for (size_t k = 0; k < constants.size(); ++k) {
    if (constants[k].owned != nullptr) {
      tensors[k] = constants[k].owned;
      continue;
    }
    try {
      tensors[k] = &lookup(reinterpret_cast<phx_tensor>(constants[k].referenced));
    } catch (const Error&) {
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "constant " + std::to_string(k) +
               " is a tensor that was destroyed; it must outlive the executable");
    }
  }
  return tensors;
}

uint64_t Executable::run(Stream& stream, const Tensor* const* run_inputs,
                         const Tensor* const* run_outputs,
                         const std::vector<const Tensor*>& constant_data) {
  if (last_stream != nullptr && last_stream != &stream) device->wait_for_streams();
  trace::Writer& tracer = context->tracer;
  const uint64_t trace_start = tracer.active() ? trace::now_ns() : 0;
  size_t traced_nodes = 0;
  auto tensor_at = [&](Slot slot) -> const Tensor* {
    switch (slot.kind) {
      case Slot::input:
        return run_inputs[slot.index];
      case Slot::output:
        return run_outputs[slot.index];
      case Slot::constant:
        return constant_data[slot.index];
      case Slot::intermediate:
        return plan.views[slot.index].get();
      case Slot::none:
        break;
    }
    return nullptr;
  };
  auto stream_of = [&](uint32_t d) -> Stream& { return d == 0 ? stream : *streams[d]; };
  uint64_t ticket = 0;
  bool last_is_copy = false;
  size_t next_part = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& step = steps[k];
    last_stream = &stream;
    if (next_part < plan.native.size() && parts[next_part].first == k) {
      const NativePart* native = plan.native[next_part++].get();
      if (native != nullptr) {
        const uint64_t submitted = native->run(stream_of(step.device), steps, tensor_at);
        if (step.device == 0) {
          ticket = submitted;
          last_is_copy = false;
          traced_nodes += native->span().count;
        }
        k += native->span().count - 1;
        continue;
      }
    }
    if (step.copy) {
      // The source's writer and the destination range's earlier readers are done first.
      const Tensor& src = *tensor_at(step.inputs[0]);
      const Tensor& dst = *tensor_at(step.outputs[0]);
      for (uint32_t d = 0; d < devices.size(); ++d)
        if (devices[d] == src.device || devices[d] == dst.device) stream_of(d).wait(UINT64_MAX);
      const uint64_t copy_start = trace_start != 0 ? trace::now_ns() : 0;
      copy_tensor(dst, src);
      if (copy_start != 0)
        tracer.copy(dst.device->index, src.device->index, src.byte_size, copy_start);
      last_is_copy = true;
      continue;
    }
    const Tensor* in[kMaxOpInputs] = {};
    const Tensor* out[kMaxOpOutputs] = {};
    for (size_t i = 0; i < step.inputs.size(); ++i) in[i] = tensor_at(step.inputs[i]);
    for (size_t o = 0; o < step.outputs.size(); ++o) out[o] = tensor_at(step.outputs[o]);
    const uint64_t submitted = stream_of(step.device)
                                   .submit(step.op, step.params_ptr(), in, step.inputs.size(), out,
                                           step.outputs.size(), step.name.c_str());
    if (step.device == 0) {
      ticket = submitted;
      last_is_copy = false;
      ++traced_nodes;
    }
  }
  // A run that ends with the host's copy into an output: its ticket is one of the stream,
  // issued after the work the copy waited for.
  if (last_is_copy) ticket = stream.issue_finished_ticket();
  if (trace_start != 0)
    stream.add_run_span({ticket, trace_start, trace::now_ns(), traced_nodes, run_count});
  ++run_count;
  return ticket;
}

}  // namespace phx::graph
