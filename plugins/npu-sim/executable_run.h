// Runs one node of a compiled graph (executable.h) on the run's tensors, which hold f32
// between nodes as the host planned them:
//   - native: the eager op, as stream_submit runs it (the same bits);
//   - quantized: the f32 input quantized with its calibrated parameters, qmatmul or
//     qconv2d with the weights quantized at compile time (integer accumulation,
//     requantized to the output's calibrated int8 or int16 parameters), dequantized into
//     the f32 output: the values an integer NPU passes between layers;
//   - f16: the f32 inputs cast to f16 (rope's tables stay f32), the f16 op, each output
//     cast back to f32.
// Every kernel is the host kernels' (phx::kernels::run_op).
#pragma once

#include <phynexus/plugin.h>

#include <optional>

#include "executable.h"
#include "phx/kernels/thread_pool.h"

namespace phx::npu_sim {

// values: one tensor per value of the executable's graph. Returns OK, or the status of
// the kernel that failed (OUT_OF_MEMORY for scratch memory).
phx_status run_node(const ExecutableNode& node, const phx_plugin_tensor* values,
                    kernels::ThreadPool& pool);

// What computing a quantized or f16 node at its reduced precision cost, after run_node:
// ||y - ref||_F / ||ref||_F of its first output y against ref, the f32 op on the same f32
// inputs (its f32 weights and bias included). nullopt for a native node, when ||ref||_F
// is 0, or when the reference kernel fails (out of host memory).
std::optional<double> node_error_rel(const ExecutableNode& node, const phx_plugin_tensor* values,
                                     kernels::ThreadPool& pool);

}  // namespace phx::npu_sim
