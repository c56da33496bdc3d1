// Linked into the phx_op_suite_*_graph_test executables: every op the suite runs goes
// through a one-node graph compiled for the device, which must answer as phx_op_run does.
#include "op_suite.h"

namespace {

// ops_as_graphs is constant-initialized to false; this dynamic initializer runs before
// main, so before any test reads it.
[[maybe_unused]] const bool as_graphs = (phx_test::ops_as_graphs = true);

}  // namespace
