// The C API of contexts, plugins and devices.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include "context.h"
#include "errors.h"
#include "logging.h"

using namespace phx;

namespace {
bool valid_dtype(const phx_dtype& dtype) {
  return enum_value(dtype) > 0 && enum_value(dtype) < PHX_DTYPE_COUNT;
}
bool valid_op(const phx_op_id& op) { return enum_value(op) > 0 && enum_value(op) < PHX_OP_COUNT; }
}  // namespace

extern "C" {

PHX_API phx_status phx_context_create(const phx_context_options* options,
                                      phx_context* out_context) {
  return guard(__func__, [&] {
    require_out(out_context, "out_context");
    auto opts = read_struct(options, phx_context_options PHX_CONTEXT_OPTIONS_INIT, "options");
    require(opts.plugin_paths != nullptr || opts.plugin_path_count == 0,
            "options.plugin_paths is null but plugin_path_count is not 0");
    for (size_t i = 0; i < opts.plugin_path_count; ++i)
      require(opts.plugin_paths[i] != nullptr, "options.plugin_paths holds a null path");
    if (enum_value(opts.log_level) < PHX_LOG_TRACE || enum_value(opts.log_level) > PHX_LOG_OFF)
      fail(PHX_STATUS_INVALID_ARGUMENT, "options.log_level is not a phx_log_level");
    auto context = std::make_unique<Context>(opts);
    context->handle = context_table().add(context.get());
    if (context->handle == 0) fail(PHX_STATUS_OUT_OF_MEMORY, "too many live contexts");
    *out_context = reinterpret_cast<phx_context>(context.release()->handle);
  });
}

PHX_API phx_status phx_context_destroy(phx_context handle) {
  return guard(__func__, [&] { destroy_context(lookup(handle)); });
}

PHX_API phx_status phx_log_message(phx_context handle, phx_log_level level, const char* message) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    if (enum_value(level) < PHX_LOG_TRACE || enum_value(level) > PHX_LOG_ERROR)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "level " + std::to_string(enum_value(level)) + " is not a phx_log_level to log at");
    require(message != nullptr, "message is null");
    context.logger->log(to_spdlog(level), "{}", message);
  });
}

PHX_API phx_status phx_plugin_count(phx_context handle, size_t* out_count) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_count, "out_count");
    *out_count = context.plugins.size();
  });
}

PHX_API phx_status phx_plugin_get(phx_context handle, size_t index, phx_plugin_info* out_info) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_info, "out_info");
    if (index >= context.plugins.size())
      fail(PHX_STATUS_NOT_FOUND, "no plugin " + std::to_string(index) + " (the context has " +
                                     std::to_string(context.plugins.size()) + ")");
    const Plugin& p = *context.plugins[index];
    phx_plugin_info info{};
    info.struct_size = sizeof info;
    info.name = p.name.c_str();
    info.version = p.version.c_str();
    info.path = p.path.c_str();
    info.abi_major = p.abi_major;
    info.abi_minor = p.abi_minor;
    info.state = p.state;
    info.stage = p.stage;
    info.reason = p.reason.c_str();
    info.device_count = p.loaded() ? p.device_count : 0;
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_device_count(phx_context handle, size_t* out_count) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_count, "out_count");
    *out_count = context.devices.size();
  });
}

PHX_API phx_status phx_device_get(phx_context handle, size_t index, phx_device_info* out_info) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_info, "out_info");
    const Device& d = context.device(index);
    phx_device_info info{};
    info.struct_size = sizeof info;
    info.index = d.index;
    info.plugin = d.plugin->name.c_str();
    info.type = d.type;
    info.name = d.name.c_str();
    info.vendor = d.vendor.c_str();
    info.memory_total_bytes = d.memory_total_bytes;
    info.memory_available_bytes = d.memory_available_bytes;
    info.compute_units = d.compute_units;
    info.dtype_mask = d.dtype_mask;
    info.properties = d.properties.empty() ? nullptr : d.properties.data();
    info.property_count = d.properties.size();
    info.compiles_graphs = d.plugin->compiles_graphs() ? 1 : 0;
    write_struct(out_info, info, "out_info");
  });
}

PHX_API phx_status phx_device_supports(phx_context handle, size_t device, phx_op_id op,
                                       phx_dtype dtype, int* out_supported) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_supported, "out_supported");
    require(valid_op(op), "unknown op id");
    require(valid_dtype(dtype), "unknown dtype");
    *out_supported = context.device(device).supported[op][dtype] ? 1 : 0;
  });
}

}  // extern "C"
