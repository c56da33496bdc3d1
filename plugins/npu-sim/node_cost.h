// What a node of a compiled graph costs on the timing model (op_cost.h), at the dtypes it
// computes in: a quantized matmul or conv2d as qmatmul or qconv2d with its activations at
// 8 or 16 bits, its weights at 8 and its int32 bias and scales; an f16 node as the same op
// on f16 tensors (rope's f32 tables stay f32); a native node as it is. The quantization
// and the f32 <-> f16 casts around a node are the simulation's way of keeping the host's
// f32 values between nodes and are not charged: on the chip the integer or f16
// activations flow from one layer to the next.
#pragma once

#include <phynexus/plugin.h>

#include "graph_quantizer.h"
#include "timing_model.h"

namespace phx::npu_sim {

// The estimate of node n of graph computed as compute says, on machine.
Estimate estimate_node(const phx_plugin_graph& graph, size_t n, NodeCompute compute,
                       const Machine& machine);

}  // namespace phx::npu_sim
