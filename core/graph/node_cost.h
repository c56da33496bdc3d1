// What PHX_PLACEMENT_COST weighs: a node's time on a device whose plugin has no timing
// model of its own (graph_estimate), and the time of copying a value between two devices.
#pragma once

#include <cstdint>
#include <vector>

#include "context.h"
#include "graph.h"

namespace phx::graph {

// The host's roofline of a node with these value operands: its FLOPs at a nominal
// 50 GFLOP/s plus the bytes of its operands at a nominal 10 GB/s plus 1 us of launch,
// the figures of a modest device (docs/graphs.md, "Placement").
uint64_t roofline_ns(const Node& node, const std::vector<Operand>& operands);

// A node's FLOPs with these value operands (phx/op_counts.h).
double node_flops(const Node& node, const std::vector<Operand>& operands);

// A copy's time: latency plus bytes times the inverse bandwidth.
struct CopyCost {
  double latency_ns = 0;
  double ns_per_byte = 0;

  double time_ns(uint64_t bytes) const { return latency_ns + ns_per_byte * double(bytes); }
};

// The cost of a copy from one device to another (free on one device): timed now, the
// best of three copies of 4 KiB and of 1 MiB, or, when deterministic, the fixed model of a
// copy through host memory (20 us + 1 ns per 4 bytes: 4 GB/s).
CopyCost copy_cost(Context& context, Device& from, Device& to, bool deterministic);

}  // namespace phx::graph
