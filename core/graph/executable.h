// What a phx_executable handle stands for: a graph lowered into steps (the ops it submits
// per run, each on its device, and the copies between devices), the constants it holds
// on the devices, and the plan of its intermediates' memory for the input shapes of the
// last run.
#pragma once

#include <phynexus/graph.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "memory_plan.h"
#include "native_part.h"
#include "op_rules.h"
#include "step.h"

namespace phx::graph {

// A constant on the device: a tensor the executable made (host bytes, a copy from another
// device, a folded node's result), or a program's tensor it reads at each run.
struct Constant {
  Tensor* owned = nullptr;
  uintptr_t referenced = 0;
  Operand operand;  // dtype and shape
};

struct InputSpec {
  std::string name;
  Operand operand;  // PHX_DIM_DYNAMIC where a run gives the size
  std::string dim_names[PHX_MAX_RANK];
};

// The intermediates' shapes and memory for one set of input shapes. It owns its blocks:
// freeing them waits for the device's queued work, the runs that used them included.
struct Plan {
  Plan() = default;
  Plan(Plan&& other) noexcept { *this = std::move(other); }
  Plan& operator=(Plan&& other) noexcept;
  ~Plan() { free_blocks(); }
  void free_blocks() noexcept;

  Context* context = nullptr;
  std::vector<Shape> input_shapes;  // what it was made for
  std::vector<Operand> intermediates, outputs;
  uint64_t planned_bytes = 0, lower_bound_bytes = 0;  // over the devices
  std::vector<Tensor*> blocks;                 // per device; null where it holds no intermediate
  std::vector<std::unique_ptr<Tensor>> views;  // a range of its device's block each
  // Per Executable::parts: its device's executable for these shapes, or null where the
  // plugin declined (its steps run one by one). Freed before the blocks.
  std::vector<std::unique_ptr<NativePart>> native;
};

// What a device kept of a part it compiled (executable_serialize), loaded with the
// executable: handed back to it when a plan has these input shapes again.
struct SavedPart {
  size_t part = 0;  // index into Executable::parts
  std::vector<Shape> input_shapes;
  std::vector<unsigned char> bytes;
};

struct Executable : ContextObject {
  ~Executable() override;

  Device* device = nullptr;      // devices[0]: the runs' stream, inputs and outputs are its
  std::vector<Device*> devices;  // every device a step runs on, the executable's first
  std::vector<Stream*> streams;  // per device past the first, the executable's own
  uint32_t flags = 0;
  std::vector<InputSpec> inputs;
  std::vector<std::string> output_names;
  std::vector<phx_dtype> intermediate_dtypes, output_dtypes;
  std::vector<uint32_t> intermediate_devices;
  std::vector<Constant> constants;
  std::vector<Step> steps;
  // The runs of consecutive steps on one device whose plugin compiles graphs: each plan
  // hands them to the plugin (Plan::native).
  std::vector<PartSpan> parts;
  Plan plan;

  size_t graph_node_count = 0, removed_nodes = 0, fused_nodes = 0, folded_nodes = 0;
  size_t copies_per_run = 0;
  uint64_t constant_bytes = 0, compile_time_ns = 0, run_count = 0;
  double calibration_error = 0;  // phx_executable_info.calibration_error
  // Per slot (kind, index), its value's range over the calibration samples, for the
  // devices that compile their part; empty without samples.
  std::map<std::pair<uint8_t, uint32_t>, phx_plugin_value_range> ranges;
  std::vector<SavedPart> saved_parts;  // from phx_executable_load; empty otherwise
  // The stream of the last run (compared, never used): a run on another stream first
  // waits for the device's queued work, so that two runs never share the block at once.
  const Stream* last_stream = nullptr;

  // A plan of the intermediates for these input shapes: their shapes (each step checked
  // with the op rules: a size that breaks one is refused, naming the node) and a block of
  // memory per device. The executable's own plan is not touched.
  Plan make_plan(const std::vector<Shape>& input_shapes) const;

  // The dtype a slot holds.
  phx_dtype slot_dtype(Slot slot) const;

  // The dtype step k (not a copy) computes in: what its device reports of it, else the
  // dtype of its first input.
  phx_dtype compute_dtype(size_t k) const;

  // The constants' tensors for a run; INVALID_ARGUMENT when a program's tensor read in
  // place was destroyed.
  std::vector<const Tensor*> constant_tensors() const;

  // Submits every step, on stream for the executable's device and its own streams for
  // the others, and makes the copies between them; returns a ticket of stream after which
  // every output is written. The tensors were checked against the specs and the plan.
  uint64_t run(Stream& stream, const Tensor* const* inputs, const Tensor* const* outputs,
               const std::vector<const Tensor*>& constant_data);

 private:
  void plan_device_memory(Plan& next, const std::vector<Lifetime>& lifetimes) const;
  // operand_at: a slot's dtype and shape in next.
  void compile_native_parts(Plan& next, const std::function<Operand(Slot)>& operand_at) const;
};

using ExecutableTable = HandleTable<Executable, 0xc6>;
ExecutableTable& executable_table();

}  // namespace phx::graph
