// The steps an executable submits per run, and where their operands live.
#pragma once

#include <phynexus/graph.h>

#include <string>
#include <vector>

#include "op_rules.h"

namespace phx::graph {

// Where a step's operand lives.
struct Slot {
  enum Kind : uint8_t { none, input, output, constant, intermediate };
  Kind kind = none;
  uint32_t index = 0;  // into the run's inputs or outputs, constants, or intermediates
};

struct Step {
  std::string name;     // the graph node's, or what a copy moves
  uint32_t device = 0;  // index into Executable::devices; a copy's destination
  bool copy = false;    // a copy of inputs[0] into outputs[0], made by the host
  phx_op_id op = PHX_OP_INVALID;
  OpParams params{};
  bool has_params = false;
  std::vector<Slot> inputs, outputs;
  uint64_t predicted_time_ns = 0;  // the cost placement's prediction; 0 for other policies
  bool claimed = false;            // its device runs it only in a compiled part (graph_claim)

  const void* params_ptr() const { return has_params ? &params : nullptr; }
};

}  // namespace phx::graph
