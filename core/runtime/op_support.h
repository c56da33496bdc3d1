// Whether a device runs an op variant: the one answer that phx_device_supports_op gives
// and that phx_op_run and the CPU fallback act on, so that the two cannot disagree.
#pragma once

#include "context.h"
#include "op_rules.h"

namespace phx {

// Whether device runs variant, which check_variant accepted: the plugin's op_supported
// answer for the first input's dtype (asked when the context was created), narrowed to
// the dtypes the device holds and by its op_variant_supported where the plugin has that
// entry (plugin ABI 1.2).
bool device_runs(Device& device, const OpVariant& variant);

}  // namespace phx
