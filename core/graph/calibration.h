// Calibration (phx_compile_options.calibration_inputs): the graph run in float on the
// consumer's samples, so that a quantizing device knows each value's range, and the
// compiled executable run on them afterwards, to say how far it is from float.
#pragma once

#include "executable.h"
#include "passes.h"

namespace phx::graph {

// The options' samples, each tensor checked against its graph input: of this context,
// alive, of the input's dtype, of its rank and static sizes, one size per dynamic
// dimension name. INVALID_ARGUMENT naming the sample and input otherwise.
Samples read_samples(Context& context, const Graph& graph, const phx_compile_options& options);

// A pass: with samples, runs the live nodes on each on the context's first CPU device,
// one by one (UNSUPPORTED when there is none, or it lacks a node), and records each f32
// value's range (Program::ranges) and the graph's f32 outputs (Program::float_outputs).
void calibrate(Program& program);

// Runs exe on each sample (copied onto its device) and returns the largest difference
// of an output element from the float graph's, relative to the largest magnitude of that
// output (phx_executable_info.calibration_error). Leaves exe's plan as the last sample's.
double measure_calibration_error(Executable& exe, const Program& program);

}  // namespace phx::graph
