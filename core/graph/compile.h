// phx_graph_compile: the passes (passes.h), then the lowering of what they decided into
// an executable: constants on the device, folded nodes computed, steps with their slots,
// and the memory plan when no input has a dynamic dimension.
#pragma once

#include <memory>

#include "executable.h"
#include "graph.h"

namespace phx::graph {

// Refuses unknown flags and policies, and counts without their arrays (INVALID_ARGUMENT).
void check_compile_options(const phx_compile_options& options);

// Throws with nothing left behind (no tensor, no stream) when it fails.
std::unique_ptr<Executable> compile(Context& context, const Graph& graph,
                                    const phx_compile_options& options);

}  // namespace phx::graph
