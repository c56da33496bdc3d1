#include "op_support.h"

namespace phx {

bool device_runs(Device& device, const OpVariant& variant) {
  if (!device.supported[variant.op][variant.inputs[0]]) return false;
  // No tensor of a dtype the device cannot hold exists there, whatever its plugin says.
  for (size_t i = 0; i < variant.input_count; ++i)
    if (variant.inputs[i] != PHX_DTYPE_INVALID &&
        !(device.dtype_mask & PHX_DTYPE_BIT(variant.inputs[i])))
      return false;
  for (size_t i = 0; i < variant.output_count; ++i)
    if (!(device.dtype_mask & PHX_DTYPE_BIT(variant.outputs[i]))) return false;
  Plugin& plugin = *device.plugin;
  if (plugin.api().op_variant_supported == nullptr) return true;
  phx_plugin_op_variant asked{};
  asked.struct_size = sizeof asked;
  asked.op = variant.op;
  asked.params = variant.params;
  asked.input_dtypes = variant.inputs;
  asked.input_count = variant.input_count;
  asked.output_dtypes = variant.outputs;
  asked.output_count = variant.output_count;
  int yes = 0;
  plugin.call("op_variant_supported", device.index, [&] {
    return plugin.api().op_variant_supported(plugin.instance(), device.local_index, &asked, &yes);
  });
  return yes != 0;
}

}  // namespace phx
