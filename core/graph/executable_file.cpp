#include "executable_file.h"

#include <phx/abi_structs.h>

#include <algorithm>
#include <chrono>

#include "byte_stream.h"
#include "graph.h"
#include "op_support.h"
#include "transfer.h"

namespace phx::graph {
namespace {

constexpr uint64_t kMagic = 0x31455845584e4850;  // "PHNXEXE1", little-endian
constexpr uint32_t kFormatVersion = 1;

// What a saved executable names a device by: a device of the same plugin (name and
// version) and of the same name and vendor computes the same; a driver's difference is
// the plugin's to find in its own data.
struct Identity {
  std::string plugin, plugin_version, name, vendor;

  static Identity of(const Device& device) {
    return {device.plugin->name, device.plugin->version, device.name, device.vendor};
  }
  bool operator==(const Identity&) const = default;
  std::string text() const {
    return "'" + name + "' (" + vendor + "; plugin " + plugin + " " + plugin_version + ")";
  }
};

void put_slot(ByteWriter& w, Slot slot) {
  w.put<uint8_t>(slot.kind);
  w.put<uint32_t>(slot.index);
}

void put_shape(ByteWriter& w, const int64_t* shape, uint32_t rank) {
  w.put<uint32_t>(rank);
  for (uint32_t d = 0; d < rank; ++d) w.put<int64_t>(shape[d]);
}

uint32_t device_of(const Executable& exe, const Tensor& tensor) {
  const auto it = std::find(exe.devices.begin(), exe.devices.end(), tensor.device);
  return static_cast<uint32_t>(it - exe.devices.begin());
}

void write_steps(ByteWriter& w, const Executable& exe) {
  w.put<uint32_t>(static_cast<uint32_t>(exe.steps.size()));
  for (const Step& step : exe.steps) {
    w.put_string(step.name);
    w.put<uint32_t>(step.device);
    w.put<uint8_t>(step.copy);
    w.put<uint32_t>(step.op);
    w.put<uint8_t>(step.claimed);
    w.put<uint64_t>(step.predicted_time_ns);
    const size_t params_size =
        step.has_params ? params_struct_size(find_op_schema(step.op)->params) : 0;
    w.put_bytes(&step.params, params_size);
    w.put<uint32_t>(static_cast<uint32_t>(step.inputs.size()));
    for (Slot slot : step.inputs) put_slot(w, slot);
    w.put<uint32_t>(static_cast<uint32_t>(step.outputs.size()));
    for (Slot slot : step.outputs) put_slot(w, slot);
  }
}

// ---- Reading ----------------------------------------------------------------------------

phx_dtype get_dtype(ByteReader& r) {
  const auto value = r.get<uint32_t>();
  if (value <= PHX_DTYPE_INVALID || value >= PHX_DTYPE_COUNT) r.damaged("an unknown dtype");
  return static_cast<phx_dtype>(value);
}

Operand get_operand(ByteReader& r, bool allow_dynamic) {
  Operand operand;
  operand.dtype = get_dtype(r);
  operand.rank = r.get<uint32_t>();
  if (operand.rank > PHX_MAX_RANK) r.damaged("a rank above PHX_MAX_RANK");
  std::fill(operand.shape, operand.shape + PHX_MAX_RANK, 1);
  for (uint32_t d = 0; d < operand.rank; ++d) {
    operand.shape[d] = r.get<int64_t>();
    if (operand.shape[d] < 1 && !(allow_dynamic && operand.shape[d] == PHX_DIM_DYNAMIC))
      r.damaged("a dimension below 1");
  }
  if (!allow_dynamic) {
    try {
      output_byte_size(operand);
    } catch (const Error&) {
      r.damaged("a shape whose byte size overflows");
    }
  }
  return operand;
}

Slot get_slot(ByteReader& r) {
  const auto kind = r.get<uint8_t>();
  if (kind > Slot::intermediate) r.damaged("an unknown slot kind");
  return {static_cast<Slot::Kind>(kind), r.get<uint32_t>()};
}

// The context's devices for the saved identities, as phx_executable_load says.
std::vector<Device*> match_devices(Context& context, const std::vector<Identity>& saved,
                                   const phx_compile_options* options) {
  std::vector<Device*> devices;
  auto taken = [&](const Device* d) {
    return std::find(devices.begin(), devices.end(), d) != devices.end();
  };
  if (options == nullptr) {
    for (const Identity& identity : saved) {
      Device* found = nullptr;
      for (const auto& device : context.devices)
        if (!taken(device.get()) && Identity::of(*device) == identity) {
          found = device.get();
          break;
        }
      if (found == nullptr)
        fail(PHX_STATUS_INCOMPATIBLE,
             "saved for device " + identity.text() + ", which the context does not have");
      devices.push_back(found);
    }
    return devices;
  }
  require(options->other_devices != nullptr || options->other_device_count == 0,
          "options.other_devices is null");
  std::vector<Device*> offered = {&context.device(options->device)};
  for (size_t i = 0; i < options->other_device_count; ++i)
    offered.push_back(&context.device(options->other_devices[i]));
  for (size_t k = 0; k < saved.size(); ++k) {
    Device* found = nullptr;
    for (size_t i = k == 0 ? 0 : 1; i < (k == 0 ? 1 : offered.size()) && found == nullptr; ++i)
      if (!taken(offered[i]) && Identity::of(*offered[i]) == saved[k]) found = offered[i];
    if (found == nullptr)
      fail(PHX_STATUS_INCOMPATIBLE,
           "saved for device " + saved[k].text() + ", and " +
               (k == 0 ? "options.device is " + Identity::of(*offered[0]).text()
                       : std::string("no device of options.other_devices is one")));
    devices.push_back(found);
  }
  return devices;
}

// Reads a saved executable into exe, checking that it is whole and consistent before
// anything that could act on it: the op rules, the slots, the devices' support.
class Loader {
 public:
  Loader(Context& context, ByteReader& r, Executable& exe) : context_(context), r_(r), exe_(exe) {}

  void read_interface() {
    exe_.flags = r_.get<uint32_t>();
    for (size_t i = 0, n = r_.get_count(16); i < n; ++i) {
      InputSpec spec;
      spec.name = r_.get_string();
      spec.operand = get_operand(r_, true);
      for (uint32_t d = 0; d < spec.operand.rank; ++d) spec.dim_names[d] = r_.get_string();
      exe_.inputs.push_back(std::move(spec));
    }
    for (size_t i = 0, n = r_.get_count(12); i < n; ++i) {
      exe_.output_names.push_back(r_.get_string());
      exe_.output_dtypes.push_back(get_dtype(r_));
    }
    if (exe_.output_dtypes.empty()) r_.damaged("no outputs");
    for (size_t i = 0, n = r_.get_count(8); i < n; ++i) {
      exe_.intermediate_dtypes.push_back(get_dtype(r_));
      exe_.intermediate_devices.push_back(device_index());
    }
    written_.assign(exe_.intermediate_dtypes.size(), false);
    written_outputs_.assign(exe_.output_dtypes.size(), false);
  }

  // The constants' shapes and bytes; their tensors are made once all is checked.
  void read_constants() {
    for (size_t i = 0, n = r_.get_count(24); i < n; ++i) {
      const uint32_t device = device_index();
      Constant constant;
      constant.operand = get_operand(r_, false);
      std::vector<unsigned char> bytes = r_.get_bytes();
      if (bytes.size() != output_byte_size(constant.operand))
        r_.damaged("a constant whose bytes are not its shape's");
      exe_.constant_bytes += bytes.size();
      constant_devices_.push_back(device);
      constant_bytes_.push_back(std::move(bytes));
      exe_.constants.push_back(constant);
    }
  }

  void read_steps() {
    for (size_t k = 0, n = r_.get_count(32); k < n; ++k) {
      Step step;
      step.name = r_.get_string();
      step.device = device_index();
      step.copy = r_.get<uint8_t>() != 0;
      const auto op = r_.get<uint32_t>();
      step.claimed = r_.get<uint8_t>() != 0;
      step.predicted_time_ns = r_.get<uint64_t>();
      const std::vector<unsigned char> params = r_.get_bytes();
      for (size_t i = 0, count = r_.get_count(5); i < count; ++i)
        step.inputs.push_back(get_slot(r_));
      for (size_t i = 0, count = r_.get_count(5); i < count; ++i)
        step.outputs.push_back(get_slot(r_));
      if (step.copy)
        check_copy(step);
      else
        check_node(step, op, params);
      exe_.steps.push_back(std::move(step));
    }
    for (size_t v = 0; v < written_.size(); ++v)
      if (!written_[v]) r_.damaged("an intermediate no step writes");
    for (size_t o = 0; o < exe_.output_dtypes.size(); ++o)
      if (!written_outputs_[o]) r_.damaged("an output no step writes");
  }

  void read_parts() {
    for (size_t i = 0, n = r_.get_count(20); i < n; ++i) {
      PartSpan span;
      span.device = device_index();
      span.first = r_.get<uint64_t>();
      span.count = r_.get<uint64_t>();
      const size_t previous_end =
          exe_.parts.empty() ? 0 : exe_.parts.back().first + exe_.parts.back().count;
      if (span.count == 0 || span.first < previous_end || span.first > exe_.steps.size() ||
          span.count > exe_.steps.size() - span.first)
        r_.damaged("a part outside the steps");
      for (size_t k = span.first; k < span.first + span.count; ++k)
        if (exe_.steps[k].copy || exe_.steps[k].device != span.device)
          r_.damaged("a part with a step of another device");
      if (!exe_.devices[span.device]->plugin->compiles_graphs())
        fail(PHX_STATUS_INCOMPATIBLE, "device " + std::to_string(exe_.devices[span.device]->index) +
                                          " no longer compiles graphs");
      exe_.parts.push_back(span);
    }
    for (size_t k = 0; k < exe_.steps.size(); ++k)
      if (exe_.steps[k].claimed && !in_a_part(k))
        r_.damaged("a claimed node outside a compiled part");
  }

  void read_ranges_and_counts() {
    for (size_t i = 0, n = r_.get_count(17); i < n; ++i) {
      const Slot slot = get_slot(r_);
      if (slot.kind == Slot::none || slot.index >= slot_count(slot.kind))
        r_.damaged("a range of no slot");
      phx_plugin_value_range range{};
      range.min = r_.get<float>();
      range.max = r_.get<float>();
      range.rms = r_.get<float>();
      exe_.ranges[{slot.kind, slot.index}] = range;
    }
    exe_.graph_node_count = r_.get<uint64_t>();
    exe_.removed_nodes = r_.get<uint64_t>();
    exe_.fused_nodes = r_.get<uint64_t>();
    exe_.folded_nodes = r_.get<uint64_t>();
    exe_.copies_per_run = static_cast<size_t>(
        std::count_if(exe_.steps.begin(), exe_.steps.end(), [](const Step& s) { return s.copy; }));
    exe_.calibration_error = r_.get<double>();
  }

  void read_saved_parts() {
    for (size_t i = 0, n = r_.get_count(16); i < n; ++i) {
      SavedPart saved;
      saved.part = r_.get<uint32_t>();
      if (saved.part >= exe_.parts.size()) r_.damaged("saved data of no part");
      for (size_t s = 0, count = r_.get_count(4); s < count; ++s) {
        const auto rank = r_.get<uint32_t>();
        if (rank > PHX_MAX_RANK) r_.damaged("a rank above PHX_MAX_RANK");
        Shape& shape = saved.input_shapes.emplace_back();
        for (uint32_t d = 0; d < rank; ++d) shape.push_back(r_.get<int64_t>());
      }
      saved.bytes = r_.get_bytes();
      exe_.saved_parts.push_back(std::move(saved));
    }
  }

  // Everything checked: the constants' tensors, written, and a stream per other device.
  void make_tensors() {
    for (size_t k = 0; k < exe_.constants.size(); ++k) {
      const Operand& operand = exe_.constants[k].operand;
      exe_.constants[k].owned = &context_.create_tensor(*exe_.devices[constant_devices_[k]],
                                                        operand.dtype, operand.rank, operand.shape);
      write_from_host(*exe_.constants[k].owned, constant_bytes_[k].data());
    }
    for (size_t d = 1; d < exe_.devices.size(); ++d) {
      exe_.streams.reserve(exe_.devices.size());
      exe_.streams.push_back(&context_.create_stream(*exe_.devices[d]));
    }
  }

 private:
  uint32_t device_index() {
    const auto d = r_.get<uint32_t>();
    if (d >= exe_.devices.size()) r_.damaged("a device index past the devices");
    return d;
  }

  size_t slot_count(Slot::Kind kind) const {
    switch (kind) {
      case Slot::input:
        return exe_.inputs.size();
      case Slot::output:
        return exe_.output_dtypes.size();
      case Slot::constant:
        return exe_.constants.size();
      case Slot::intermediate:
        return exe_.intermediate_dtypes.size();
      case Slot::none:
        break;
    }
    return 0;
  }

  // A slot a step reads: one that exists, and a value written before.
  void check_read(Slot slot, bool may_be_none) {
    if (slot.kind == Slot::none) {
      if (!may_be_none) r_.damaged("a copy of nothing");
      return;
    }
    if (slot.index >= slot_count(slot.kind)) r_.damaged("a slot past its kind's count");
    if ((slot.kind == Slot::intermediate && !written_[slot.index]) ||
        (slot.kind == Slot::output && !written_outputs_[slot.index]))
      r_.damaged("a value read before a step writes it");
  }

  // A slot a step writes: an intermediate of its device, or an output (the executable's
  // device), written once.
  void check_write(Slot slot, uint32_t device) {
    if ((slot.kind != Slot::intermediate && slot.kind != Slot::output) ||
        slot.index >= slot_count(slot.kind))
      r_.damaged("a step writing no intermediate or output");
    std::vector<bool>& written = slot.kind == Slot::output ? written_outputs_ : written_;
    const uint32_t home = slot.kind == Slot::output ? 0 : exe_.intermediate_devices[slot.index];
    if (written[slot.index] || home != device)
      r_.damaged("a value written twice, or on another device than it lives on");
    written[slot.index] = true;
  }

  void check_copy(const Step& step) {
    if (step.inputs.size() != 1 || step.outputs.size() != 1) r_.damaged("a copy of one slot");
    check_read(step.inputs[0], false);
    check_write(step.outputs[0], step.device);
    if (exe_.slot_dtype(step.inputs[0]) != exe_.slot_dtype(step.outputs[0]))
      r_.damaged("a copy between dtypes");
  }

  void check_node(Step& step, uint32_t op, const std::vector<unsigned char>& params) {
    const OpSchema* schema = find_op_schema(static_cast<int>(op));
    if (schema == nullptr) r_.damaged("an unknown op");
    step.op = static_cast<phx_op_id>(op);
    if (step.inputs.size() > kMaxOpInputs || step.outputs.size() > kMaxOpOutputs ||
        step.inputs.empty() || step.outputs.empty())
      r_.damaged("a node with too many or no operands");
    for (Slot slot : step.inputs) check_read(slot, true);
    if (step.inputs[0].kind == Slot::none) r_.damaged("a node without its first input");
    OpVariant variant;
    variant.op = step.op;
    variant.input_count = step.inputs.size();
    variant.output_count = step.outputs.size();
    for (size_t i = 0; i < step.inputs.size(); ++i)
      variant.inputs[i] = exe_.slot_dtype(step.inputs[i]);
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      check_write(step.outputs[o], step.device);
      variant.outputs[o] = exe_.slot_dtype(step.outputs[o]);
    }
    const size_t params_size = params_struct_size(schema->params);
    if (params.size() != params_size) r_.damaged("parameters of another size than the op's");
    try {
      if (params_size != 0) {
        OpParams raw{};
        std::memcpy(&raw, params.data(), params_size);
        step.has_params = normalize_params(step.op, &raw, 0, step.params) != nullptr;
      }
      variant.params = step.params_ptr();
      check_variant(variant);
    } catch (const Error& e) {
      r_.damaged(std::string("node '") + step.name + "': " + e.what());
    }
    Device& device = *exe_.devices[step.device];
    const bool claimable = step.claimed && device.plugin->api().graph_claim != nullptr;
    if (!claimable && !device_runs(device, variant))
      fail(PHX_STATUS_INCOMPATIBLE, "node '" + step.name + "': device " +
                                        std::to_string(device.index) + " does not run " +
                                        variant_text(variant));
  }

  bool in_a_part(size_t k) const {
    return std::any_of(exe_.parts.begin(), exe_.parts.end(), [&](const PartSpan& span) {
      return k >= span.first && k < span.first + span.count;
    });
  }

  Context& context_;
  ByteReader& r_;
  Executable& exe_;
  std::vector<uint32_t> constant_devices_;
  std::vector<std::vector<unsigned char>> constant_bytes_;
  std::vector<bool> written_, written_outputs_;  // per intermediate and output, so far
};

}  // namespace

std::vector<unsigned char> save_executable(Executable& exe) {
  for (Device* device : exe.devices) device->wait_for_streams();
  ByteWriter w;
  w.put<uint64_t>(kMagic);
  w.put<uint32_t>(kFormatVersion);
  w.put<uint32_t>(PHX_API_VERSION);
  w.put<uint32_t>(static_cast<uint32_t>(exe.devices.size()));
  for (const Device* device : exe.devices) {
    const Identity identity = Identity::of(*device);
    for (const std::string* text :
         {&identity.plugin, &identity.plugin_version, &identity.name, &identity.vendor})
      w.put_string(*text);
  }
  w.put<uint32_t>(exe.flags);
  w.put<uint32_t>(static_cast<uint32_t>(exe.inputs.size()));
  for (const InputSpec& spec : exe.inputs) {
    w.put_string(spec.name);
    w.put<uint32_t>(spec.operand.dtype);
    put_shape(w, spec.operand.shape, spec.operand.rank);
    for (uint32_t d = 0; d < spec.operand.rank; ++d) w.put_string(spec.dim_names[d]);
  }
  w.put<uint32_t>(static_cast<uint32_t>(exe.output_dtypes.size()));
  for (size_t o = 0; o < exe.output_dtypes.size(); ++o) {
    w.put_string(exe.output_names[o]);
    w.put<uint32_t>(exe.output_dtypes[o]);
  }
  w.put<uint32_t>(static_cast<uint32_t>(exe.intermediate_dtypes.size()));
  for (size_t v = 0; v < exe.intermediate_dtypes.size(); ++v) {
    w.put<uint32_t>(exe.intermediate_dtypes[v]);
    w.put<uint32_t>(exe.intermediate_devices[v]);
  }
  const std::vector<const Tensor*> constants = exe.constant_tensors();
  w.put<uint32_t>(static_cast<uint32_t>(constants.size()));
  for (const Tensor* tensor : constants) {
    std::vector<unsigned char> bytes(static_cast<size_t>(tensor->byte_size));
    tensor->device->wait_for_streams();
    read_to_host(*tensor, bytes.data());
    w.put<uint32_t>(device_of(exe, *tensor));
    w.put<uint32_t>(tensor->dtype);
    put_shape(w, tensor->shape, tensor->rank);
    w.put_bytes(bytes.data(), bytes.size());
  }
  write_steps(w, exe);
  w.put<uint32_t>(static_cast<uint32_t>(exe.parts.size()));
  for (const PartSpan& span : exe.parts) {
    w.put<uint32_t>(span.device);
    w.put<uint64_t>(span.first);
    w.put<uint64_t>(span.count);
  }
  w.put<uint32_t>(static_cast<uint32_t>(exe.ranges.size()));
  for (const auto& [slot, range] : exe.ranges) {
    put_slot(w, {static_cast<Slot::Kind>(slot.first), slot.second});
    w.put<float>(range.min);
    w.put<float>(range.max);
    w.put<float>(range.rms);
  }
  for (uint64_t count :
       {exe.graph_node_count, exe.removed_nodes, exe.fused_nodes, exe.folded_nodes})
    w.put<uint64_t>(count);
  w.put<double>(exe.calibration_error);
  std::vector<std::pair<uint32_t, std::vector<unsigned char>>> parts;
  for (size_t p = 0; p < exe.plan.native.size(); ++p)
    if (exe.plan.native[p] != nullptr) {
      std::vector<unsigned char> bytes = exe.plan.native[p]->serialize();
      if (!bytes.empty()) parts.emplace_back(static_cast<uint32_t>(p), std::move(bytes));
    }
  w.put<uint32_t>(static_cast<uint32_t>(parts.size()));
  for (const auto& [p, bytes] : parts) {
    w.put<uint32_t>(p);
    w.put<uint32_t>(static_cast<uint32_t>(exe.plan.input_shapes.size()));
    for (const Shape& shape : exe.plan.input_shapes) {
      w.put<uint32_t>(static_cast<uint32_t>(shape.size()));
      for (int64_t d : shape) w.put<int64_t>(d);
    }
    w.put_bytes(bytes.data(), bytes.size());
  }
  return std::move(w.data());
}

std::unique_ptr<Executable> load_executable(Context& context, const void* data, size_t size,
                                            const phx_compile_options* options) {
  const auto start = std::chrono::steady_clock::now();
  ByteReader r(data, size);
  if (size < 16 || r.get<uint64_t>() != kMagic)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the data is not a saved executable (no PHNXEXE1 header)");
  const auto format = r.get<uint32_t>();
  const auto version = r.get<uint32_t>();
  if (format != kFormatVersion || version != PHX_API_VERSION)
    fail(PHX_STATUS_INCOMPATIBLE, "saved by Phynexus " + std::to_string(version) + " (format " +
                                      std::to_string(format) + "); this is " +
                                      std::to_string(PHX_API_VERSION) + " (format " +
                                      std::to_string(kFormatVersion) + ")");
  std::vector<Identity> identities(r.get_count(32));
  if (identities.empty()) r.damaged("no devices");
  for (Identity& identity : identities)
    for (std::string* text :
         {&identity.plugin, &identity.plugin_version, &identity.name, &identity.vendor})
      *text = r.get_string();

  auto exe = std::make_unique<Executable>();
  exe->context = &context;
  exe->devices = match_devices(context, identities, options);
  exe->device = exe->devices[0];
  exe->streams = {nullptr};
  Loader loader(context, r, *exe);
  loader.read_interface();
  loader.read_constants();
  loader.read_steps();
  loader.read_parts();
  loader.read_ranges_and_counts();
  loader.read_saved_parts();
  if (!r.at_end()) r.damaged("bytes after the end");
  loader.make_tensors();
  const bool dynamic = std::any_of(exe->inputs.begin(), exe->inputs.end(), [](const InputSpec& s) {
    return std::any_of(s.operand.shape, s.operand.shape + s.operand.rank,
                       [](int64_t d) { return d == PHX_DIM_DYNAMIC; });
  });
  if (!dynamic) {
    std::vector<Shape> shapes;
    for (const InputSpec& spec : exe->inputs)
      shapes.emplace_back(spec.operand.shape, spec.operand.shape + spec.operand.rank);
    exe->plan = exe->make_plan(shapes);
  }
  exe->compile_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  return exe;
}

}  // namespace phx::graph
