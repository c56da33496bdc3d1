// A part of an executable that its device compiles as a whole (plugin ABI 1.3,
// plugin.h "Executables"): consecutive steps on one device whose plugin has
// graph_compile, handed over once per memory plan, with the plan's shapes, and run as
// one ticket of a stream.
#pragma once

#include <phynexus/plugin.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "op_rules.h"
#include "step.h"

namespace phx::graph {

// Steps [first, first + count) of an executable, all on its device `device`.
struct PartSpan {
  uint32_t device = 0;
  size_t first = 0, count = 0;
};

// How the part's steps read and write the executable's slots, and what each slot holds
// for the plan: what the plugin's graph is made from.
struct PartContext {
  const std::vector<Step>* steps = nullptr;
  uint32_t flags = 0;                           // PHX_PLUGIN_GRAPH_*
  std::function<Operand(Slot)> operand;         // the slot's dtype and shape in the plan
  std::function<std::string(Slot)> name;        // for the plugin's messages
  std::function<bool(Slot)> fixed_constant;     // a constant the executable owns
  std::function<const Tensor*(Slot)> constant;  // a constant slot's tensor
  // The slot's range over the calibration samples; null (the function) without samples.
  std::function<phx_plugin_value_range(Slot)> range;
  const void* serialized = nullptr;  // what the plugin saved of this part (load), or null
  size_t serialized_size = 0;
};

class NativePart {
 public:
  // The plugin's executable of span, or null when the plugin answers UNSUPPORTED (its
  // steps then run one by one). Throws the plugin's other failures.
  static std::unique_ptr<NativePart> compile(Context& context, Device& device, const PartSpan& span,
                                             const PartContext& part);
  // Waits for the device's queued work (its runs), then frees the plugin's executable.
  ~NativePart();
  NativePart(const NativePart&) = delete;
  NativePart& operator=(const NativePart&) = delete;

  const PartSpan& span() const { return span_; }

  // Queues a run on stream (of the part's device) with the tensors tensor_at gives the
  // slots; returns its ticket.
  uint64_t run(Stream& stream, const std::vector<Step>& steps,
               const std::function<const Tensor*(Slot)>& tensor_at) const;

  // The plugin's figures of it (executable_stats); none when the plugin has no such entry.
  std::vector<phx_metric> stats() const;

  // What the plugin writes of it to make it again without compiling
  // (executable_serialize); nothing when the plugin has no such entry.
  std::vector<unsigned char> serialize() const;

  // The dtype the plugin computes node n of the part in (executable_node_report), or
  // PHX_DTYPE_INVALID when the plugin has no such entry.
  phx_dtype compute_dtype(size_t n) const;

 private:
  NativePart(Context& context, Device& device, const PartSpan& span)
      : context_(context), device_(device), span_(span) {}

  Context& context_;
  Device& device_;
  PartSpan span_;
  void* executable_ = nullptr;
  std::vector<Slot> values_;  // the slot of each value of the plugin's graph
};

}  // namespace phx::graph
