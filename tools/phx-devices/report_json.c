/* The report for programs: one JSON document (schema: docs/phx-devices.md). */
#include <stdio.h>

#include "json_writer.h"
#include "report.h"

/* Bump only for a change that breaks readers (a field removed, renamed or retyped);
 * adding a field keeps the version. */
#define SCHEMA_VERSION 1

static void write_dtype_array(json_writer* writer, const char* key, uint32_t mask) {
  json_begin_array_inline(writer, key);
  for (int dtype = PHX_DTYPE_INVALID + 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
    if (mask & PHX_DTYPE_BIT(dtype)) json_string(writer, NULL, phx_dtype_name((phx_dtype)dtype));
  }
  json_end_array(writer);
}

static void write_plugin(json_writer* writer, const phx_plugin_info* info) {
  json_begin_object(writer, NULL);
  json_string(writer, "name", info->name);
  json_string(writer, "version", info->version);
  json_string(writer, "path", info->path);
  json_uint(writer, "abi_major", info->abi_major);
  json_uint(writer, "abi_minor", info->abi_minor);
  json_string(writer, "state", phx_plugin_state_name(info->state));
  json_string(writer, "stage", phx_plugin_stage_name(info->stage));
  json_string(writer, "reason", info->reason);
  json_uint(writer, "device_count", info->device_count);
  json_end_object(writer);
}

static int write_memory_stats(json_writer* writer, phx_context context, size_t device) {
  phx_memory_stats stats = {0};
  stats.struct_size = sizeof stats;
  if (check_status(phx_memory_stats_get(context, device, &stats), "phx_memory_stats_get") != 0) {
    return -1;
  }
  json_begin_object(writer, "memory_stats");
  json_uint(writer, "bytes_in_use", stats.bytes_in_use);
  json_uint(writer, "peak_bytes_in_use", stats.peak_bytes_in_use);
  json_uint(writer, "bytes_cached", stats.bytes_cached);
  json_uint(writer, "limit_bytes", stats.limit_bytes);
  json_uint(writer, "allocation_count", stats.allocation_count);
  json_end_object(writer);
  return 0;
}

static int write_device(json_writer* writer, phx_context context, size_t device) {
  phx_device_info info;
  if (get_device_info(context, device, &info) != 0) return -1;
  json_begin_object(writer, NULL);
  json_uint(writer, "index", info.index);
  json_string(writer, "plugin", info.plugin);
  json_string(writer, "type", phx_device_type_name(info.type));
  json_string(writer, "name", info.name);
  json_string(writer, "vendor", info.vendor);
  json_uint(writer, "memory_total_bytes", info.memory_total_bytes);
  json_uint(writer, "memory_available_bytes", info.memory_available_bytes);
  json_uint(writer, "compute_units", info.compute_units);
  json_bool(writer, "compiles_graphs", (int)info.compiles_graphs);
  write_dtype_array(writer, "dtypes", info.dtype_mask);

  json_begin_object(writer, "ops");
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    uint32_t mask = 0;
    if (get_op_dtype_mask(context, device, (phx_op_id)op, &mask) != 0) return -1;
    write_dtype_array(writer, phx_op_name((phx_op_id)op), mask);
  }
  json_end_object(writer);

  json_begin_object(writer, "properties");
  for (size_t i = 0; i < info.property_count; ++i) {
    json_string(writer, text_or_empty(info.properties[i].key), info.properties[i].value);
  }
  json_end_object(writer);

  if (write_memory_stats(writer, context, device) != 0) return -1;
  json_end_object(writer);
  return 0;
}

/* Both reports write while they query: if a call fails part way (which a valid context
 * does not do), stdout holds an incomplete document and the exit status says so. */

int report_device_json(phx_context context, size_t device) {
  json_writer writer;
  json_writer_init(&writer, stdout);
  if (write_device(&writer, context, device) != 0) return -1;
  json_writer_finish(&writer);
  return 0;
}

int report_all_json(phx_context context) {
  size_t plugin_count = 0, device_count = 0;
  char version[32];
  json_writer writer;
  if (check_status(phx_plugin_count(context, &plugin_count), "phx_plugin_count") != 0) return -1;
  if (check_status(phx_device_count(context, &device_count), "phx_device_count") != 0) return -1;
  format_api_version(version, sizeof version);

  json_writer_init(&writer, stdout);
  json_begin_object(&writer, NULL);
  json_uint(&writer, "schema_version", SCHEMA_VERSION);
  json_string(&writer, "api_version", version);

  json_begin_array(&writer, "plugins");
  for (size_t i = 0; i < plugin_count; ++i) {
    phx_plugin_info info;
    if (get_plugin_info(context, i, &info) != 0) return -1;
    write_plugin(&writer, &info);
  }
  json_end_array(&writer);

  json_begin_array(&writer, "devices");
  for (size_t d = 0; d < device_count; ++d) {
    if (write_device(&writer, context, d) != 0) return -1;
  }
  json_end_array(&writer);

  json_end_object(&writer);
  json_writer_finish(&writer);
  return 0;
}
