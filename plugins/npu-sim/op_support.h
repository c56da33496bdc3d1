// Which ops a device of a profile runs, by op and first-input dtype: what op_supported
// answers, stream_submit accepts and a compiled graph runs natively (docs/npu-sim.md,
// "Profiles").
#pragma once

#include <phynexus/phynexus.h>

#include "config.h"

namespace phx::npu_sim {

// Whether a device of figures runs op with a first input of dtype: the profile lists it,
// the host kernels compute it, and the device has the MAC array its rate needs.
bool device_runs(const DeviceFigures& figures, phx_op_id op, phx_dtype dtype);

}  // namespace phx::npu_sim
