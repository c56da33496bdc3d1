// PHX_CONTEXT_FALLBACK_CPU: an op its device does not support runs on the CPU device.
#pragma once

#include "context.h"
#include "op_rules.h"

namespace phx {

// Whether the fallback can run variant for stream: the context has a fallback device, it
// is not the stream's own, and it runs the variant.
bool fallback_runs(const Stream& stream, const OpVariant& variant);

// Runs a checked op on the context's fallback device, in the stream's order: waits for
// the stream's work, copies the inputs to the CPU device, runs the op there, copies the
// outputs back, and returns when they are in place. Returns the op's own ticket, the
// stream's next (it has finished). Counts and logs the fallback.
uint64_t run_on_fallback_device(Stream& stream, phx_op_id op, const void* params,
                                const Tensor* const* inputs, size_t input_count,
                                const Tensor* const* outputs, size_t output_count);

}  // namespace phx
