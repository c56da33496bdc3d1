// The C API's version, the names of its enums, and dtype sizes (one table with the plugin SDK).
#include <phx/abi_structs.h>
#include <phx/op_table.h>
#include <phynexus/phynexus.h>
#include <phynexus/plugin.h>

using phx::enum_value;

extern "C" {

PHX_API uint32_t phx_api_version(void) { return PHX_API_VERSION; }

PHX_API const char* phx_status_name(phx_status status) {
  switch (enum_value(status)) {
    case PHX_STATUS_OK:
      return "PHX_STATUS_OK";
    case PHX_STATUS_INVALID_ARGUMENT:
      return "PHX_STATUS_INVALID_ARGUMENT";
    case PHX_STATUS_NOT_FOUND:
      return "PHX_STATUS_NOT_FOUND";
    case PHX_STATUS_UNSUPPORTED:
      return "PHX_STATUS_UNSUPPORTED";
    case PHX_STATUS_OUT_OF_MEMORY:
      return "PHX_STATUS_OUT_OF_MEMORY";
    case PHX_STATUS_DEVICE_UNAVAILABLE:
      return "PHX_STATUS_DEVICE_UNAVAILABLE";
    case PHX_STATUS_PLUGIN_ERROR:
      return "PHX_STATUS_PLUGIN_ERROR";
    case PHX_STATUS_COMPILATION_ERROR:
      return "PHX_STATUS_COMPILATION_ERROR";
    case PHX_STATUS_INTERNAL:
      return "PHX_STATUS_INTERNAL";
    case PHX_STATUS_INCOMPATIBLE:
      return "PHX_STATUS_INCOMPATIBLE";
  }
  return "PHX_STATUS_<unknown>";
}

PHX_API size_t phx_dtype_size(phx_dtype dtype) {
  // Read as an int: a caller's value may be no valid phx_dtype at all.
  const int value = enum_value(dtype);
  return value > PHX_DTYPE_INVALID && value < PHX_DTYPE_COUNT
             ? phx_plugin_dtype_size(static_cast<phx_dtype>(value))
             : 0;
}

PHX_API const char* phx_dtype_name(phx_dtype dtype) {
  switch (enum_value(dtype)) {
    case PHX_DTYPE_F32:
      return "f32";
    case PHX_DTYPE_F16:
      return "f16";
    case PHX_DTYPE_BF16:
      return "bf16";
    case PHX_DTYPE_I8:
      return "i8";
    case PHX_DTYPE_I16:
      return "i16";
    case PHX_DTYPE_I32:
      return "i32";
    case PHX_DTYPE_U8:
      return "u8";
    default:
      return "unknown";
  }
}

PHX_API const char* phx_device_type_name(phx_device_type type) {
  switch (enum_value(type)) {
    case PHX_DEVICE_CPU:
      return "cpu";
    case PHX_DEVICE_GPU:
      return "gpu";
    case PHX_DEVICE_TPU:
      return "tpu";
    case PHX_DEVICE_NPU:
      return "npu";
    case PHX_DEVICE_ACCELERATOR:
      return "accelerator";
  }
  return "unknown";
}

PHX_API const char* phx_plugin_state_name(phx_plugin_state state) {
  switch (enum_value(state)) {
    case PHX_PLUGIN_LOADED:
      return "loaded";
    case PHX_PLUGIN_REJECTED:
      return "rejected";
    case PHX_PLUGIN_SHADOWED:
      return "shadowed";
  }
  return "unknown";
}

PHX_API const char* phx_plugin_stage_name(phx_plugin_stage stage) {
  switch (enum_value(stage)) {
    case PHX_PLUGIN_STAGE_FOUND:
      return "found";
    case PHX_PLUGIN_STAGE_OPENED:
      return "opened";
    case PHX_PLUGIN_STAGE_ENTRY:
      return "entry";
    case PHX_PLUGIN_STAGE_VERSION:
      return "version";
    case PHX_PLUGIN_STAGE_VALIDATED:
      return "validated";
    case PHX_PLUGIN_STAGE_INITIALIZED:
      return "initialized";
    case PHX_PLUGIN_STAGE_READY:
      return "ready";
  }
  return "unknown";
}

PHX_API const char* phx_op_name(phx_op_id op) {
  const phx::OpSchema* schema = phx::find_op_schema(enum_value(op));
  return schema != nullptr ? schema->name : "unknown";
}

}  // extern "C"
