// The record of one op: what a trace draws of it, and what phx_profile_get reports (the
// runtime's ProfileEntry is this record). Plain data that the runtime fills and hands to
// the trace writer, so that the writer needs nothing of the runtime's objects.
#pragma once

#include <phynexus/plugin.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace phx::trace {

// The dtypes and shapes of an op's operands, as its submission found them. A record keeps
// these rather than its signature's text, which is written only when it is read (the
// profile API, the trace's writer thread): a traced op pays for a copy, not for the text.
struct OperandShapes {
  static constexpr size_t kMaxOperands = PHX_MAX_OP_INPUTS + PHX_MAX_OP_OUTPUTS;
  static constexpr size_t kMaxDims = 24;  // in all; an op with more keeps its text instead
  uint8_t input_count = 0;
  uint8_t output_count = 0;
  uint8_t dtypes[kMaxOperands] = {};  // PHX_DTYPE_INVALID: an absent optional input
  uint8_t ranks[kMaxOperands] = {};
  int64_t dims[kMaxDims] = {};
};

struct OpRecord {
  uint64_t ticket = 0;
  phx_op_id op = PHX_OP_INVALID;
  // "f32[64x32], f32[32x16] -> f32[64x16]": given as text (a collective's, an op with
  // more than OperandShapes::kMaxDims dimensions), or empty and written from shapes (by
  // the writer's AppendSignature, trace_writer.h).
  std::string signature;
  OperandShapes shapes;
  std::string node;                  // the graph node an executable ran it for; "" for phx_op_run
  const char* collective = nullptr;  // a collective's name (comm.h), whose op is INVALID
  uint64_t start_ns = 0;             // now_ns() at submission
  uint64_t host_time_ns = 0;
  double flops = 0;
  uint64_t bytes = 0;           // of its inputs and outputs
  phx_plugin_profile plugin{};  // filled by the plugin until the op completes
};

}  // namespace phx::trace
