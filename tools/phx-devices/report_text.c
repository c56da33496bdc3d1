/* The reports for people: the summary tables, the plugin candidates, one device. */
#include <inttypes.h>
#include <stdio.h>

#include "report.h"

static int max_int(int a, int b) { return a > b ? a : b; }

/* Columns a string takes: its code points, so that a UTF-8 device name ("Sim™") does
 * not break the alignment the way printf's byte-counting widths would. */
static int text_width(const char* text) {
  int width = 0;
  for (const unsigned char* p = (const unsigned char*)text_or_empty(text); *p; ++p) {
    if ((*p & 0xC0) != 0x80) ++width; /* not a continuation byte */
  }
  return width;
}

/* Prints text left-aligned in a column of width, followed by the two-space gap. */
static void print_cell(const char* text, int width) {
  printf("%s%*s  ", text_or_empty(text), width - text_width(text), "");
}

/* ---- Summary ---- */

/* The loaded plugins as a table; *out_rejected and *out_shadowed count the others. */
static int print_plugin_table(phx_context context, size_t plugin_count, size_t* out_rejected,
                              size_t* out_shadowed) {
  int name_width = text_width("NAME");
  int version_width = text_width("VERSION");
  size_t loaded = 0, rejected = 0, shadowed = 0;
  for (size_t i = 0; i < plugin_count; ++i) {
    phx_plugin_info info;
    if (get_plugin_info(context, i, &info) != 0) return -1;
    if (info.state == PHX_PLUGIN_REJECTED) ++rejected;
    if (info.state == PHX_PLUGIN_SHADOWED) ++shadowed;
    if (info.state != PHX_PLUGIN_LOADED) continue;
    ++loaded;
    name_width = max_int(name_width, text_width(info.name));
    version_width = max_int(version_width, text_width(info.version));
  }

  printf("Plugins loaded: %zu\n", loaded);
  if (loaded > 0) {
    printf("  %-*s  %-*s  %-5s  %-7s  %s\n", name_width, "NAME", version_width, "VERSION", "ABI",
           "DEVICES", "PATH");
  }
  for (size_t i = 0; i < plugin_count; ++i) {
    phx_plugin_info info;
    if (get_plugin_info(context, i, &info) != 0) return -1;
    if (info.state != PHX_PLUGIN_LOADED) continue;
    char abi[24];
    snprintf(abi, sizeof abi, "%" PRIu32 ".%" PRIu32, info.abi_major, info.abi_minor);
    printf("  ");
    print_cell(info.name, name_width);
    print_cell(info.version, version_width);
    printf("%-5s  %-7" PRIu32 "  %s\n", abi, info.device_count, text_or_empty(info.path));
  }
  *out_rejected = rejected;
  *out_shadowed = shadowed;
  return 0;
}

/* The memory column: "available / total". */
static void format_memory(const phx_device_info* info, char* buffer, size_t size) {
  char available[32], total[32];
  format_bytes(info->memory_available_bytes, available, sizeof available);
  format_bytes(info->memory_total_bytes, total, sizeof total);
  snprintf(buffer, size, "%s / %s", available, total);
}

static int print_device_table(phx_context context, size_t device_count) {
  const char* memory_heading = "MEMORY (AVAIL / TOTAL)";
  int type_width = text_width("TYPE");
  int name_width = text_width("NAME");
  int plugin_width = text_width("PLUGIN");
  int memory_width = text_width(memory_heading);
  /* First pass: the column widths, so that long CPU names keep the table aligned. */
  for (size_t d = 0; d < device_count; ++d) {
    phx_device_info info;
    char memory[80];
    if (get_device_info(context, d, &info) != 0) return -1;
    format_memory(&info, memory, sizeof memory);
    type_width = max_int(type_width, text_width(phx_device_type_name(info.type)));
    name_width = max_int(name_width, text_width(info.name));
    plugin_width = max_int(plugin_width, text_width(info.plugin));
    memory_width = max_int(memory_width, text_width(memory));
  }

  printf("Devices: %zu\n", device_count);
  if (device_count == 0) {
    printf("  (none: phx-devices --plugins says why each plugin was not used)\n");
    return 0;
  }
  printf("  %-3s  %-*s  %-*s  %-*s  %-*s  %-5s  %-6s  %s\n", "#", type_width, "TYPE", name_width,
         "NAME", plugin_width, "PLUGIN", memory_width, memory_heading, "UNITS", "GRAPHS", "DTYPES");
  for (size_t d = 0; d < device_count; ++d) {
    phx_device_info info;
    char memory[80], dtypes[96];
    if (get_device_info(context, d, &info) != 0) return -1;
    format_memory(&info, memory, sizeof memory);
    format_dtype_list(info.dtype_mask, dtypes, sizeof dtypes);
    printf("  %-3" PRIu32 "  ", info.index);
    print_cell(phx_device_type_name(info.type), type_width);
    print_cell(info.name, name_width);
    print_cell(info.plugin, plugin_width);
    print_cell(memory, memory_width);
    printf("%-5" PRIu32 "  %-6s  %s\n", info.compute_units,
           info.compiles_graphs ? "native" : "nodes", dtypes);
  }
  return 0;
}

int report_summary_text(phx_context context) {
  size_t plugin_count = 0, device_count = 0, rejected = 0, shadowed = 0;
  char version[32];
  if (check_status(phx_plugin_count(context, &plugin_count), "phx_plugin_count") != 0) return -1;
  if (check_status(phx_device_count(context, &device_count), "phx_device_count") != 0) return -1;
  format_api_version(version, sizeof version);

  printf("Phynexus %s\n\n", version);
  if (print_plugin_table(context, plugin_count, &rejected, &shadowed) != 0) return -1;
  printf("\n");
  if (print_device_table(context, device_count) != 0) return -1;
  printf("\nPlugins rejected: %zu, shadowed: %zu (details: phx-devices --plugins)\n", rejected,
         shadowed);
  return 0;
}

/* ---- Plugin candidates ---- */

int report_plugins_text(phx_context context) {
  size_t plugin_count = 0;
  if (check_status(phx_plugin_count(context, &plugin_count), "phx_plugin_count") != 0) return -1;

  printf("Plugin candidates, in search order: %zu\n", plugin_count);
  if (plugin_count == 0) {
    printf("  (none; PHX_LOADER_DEBUG=1 shows the folders searched)\n");
  }
  for (size_t i = 0; i < plugin_count; ++i) {
    phx_plugin_info info;
    if (get_plugin_info(context, i, &info) != 0) return -1;
    const char* name = text_or_empty(info.name);
    printf("\n[%zu] %s: %s\n", i, name[0] ? name : "(unnamed)", phx_plugin_state_name(info.state));
    printf("  path:    %s\n", text_or_empty(info.path));
    printf("  version: %s\n", text_or_empty(info.version)[0] ? info.version : "(unknown)");
    printf("  abi:     %" PRIu32 ".%" PRIu32 "\n", info.abi_major, info.abi_minor);
    printf("  stage:   %s\n", phx_plugin_stage_name(info.stage));
    printf("  devices: %" PRIu32 "\n", info.device_count);
    if (text_or_empty(info.reason)[0]) printf("  reason:  %s\n", info.reason);
  }
  return 0;
}

/* ---- One device ---- */

static void print_device_info(const phx_device_info* info) {
  char total[32], available[32], dtypes[96];
  format_bytes(info->memory_total_bytes, total, sizeof total);
  format_bytes(info->memory_available_bytes, available, sizeof available);
  format_dtype_list(info->dtype_mask, dtypes, sizeof dtypes);

  printf("Device %" PRIu32 ": %s\n", info->index, text_or_empty(info->name));
  printf("  type:             %s\n", phx_device_type_name(info->type));
  printf("  vendor:           %s\n", text_or_empty(info->vendor));
  printf("  plugin:           %s\n", text_or_empty(info->plugin));
  printf("  memory total:     %s (%" PRIu64 " bytes)\n", total, info->memory_total_bytes);
  printf("  memory available: %s (%" PRIu64 " bytes)\n", available, info->memory_available_bytes);
  printf("  compute units:    %" PRIu32 "\n", info->compute_units);
  printf("  dtypes:           %s\n", dtypes);
  printf("  graphs:           %s\n", info->compiles_graphs
                                         ? "compiled natively (a part runs as one submission)"
                                         : "run node by node");

  printf("\nProperties: %zu\n", info->property_count);
  for (size_t i = 0; i < info->property_count; ++i) {
    printf("  %s: %s\n", text_or_empty(info->properties[i].key),
           text_or_empty(info->properties[i].value));
  }
}

/* A row per op, a column per dtype: 'x' where phx_device_supports says yes. */
static int print_support_matrix(phx_context context, size_t device) {
  int op_width = 0;
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    op_width = max_int(op_width, text_width(phx_op_name((phx_op_id)op)));
  }

  printf("\nOp support (x: supported, .: not):\n  %-*s", op_width, "");
  for (int dtype = PHX_DTYPE_INVALID + 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
    printf("  %s", phx_dtype_name((phx_dtype)dtype));
  }
  printf("\n");
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    uint32_t mask = 0;
    if (get_op_dtype_mask(context, device, (phx_op_id)op, &mask) != 0) return -1;
    printf("  %-*s", op_width, phx_op_name((phx_op_id)op));
    for (int dtype = PHX_DTYPE_INVALID + 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
      /* Right-aligned under the dtype's name. */
      printf("  %*s", text_width(phx_dtype_name((phx_dtype)dtype)),
             (mask & PHX_DTYPE_BIT(dtype)) ? "x" : ".");
    }
    printf("\n");
  }
  return 0;
}

static int print_memory_stats(phx_context context, size_t device) {
  phx_memory_stats stats = {0};
  char in_use[32], peak[32], cached[32], limit[32];
  stats.struct_size = sizeof stats;
  if (check_status(phx_memory_stats_get(context, device, &stats), "phx_memory_stats_get") != 0) {
    return -1;
  }
  format_bytes(stats.bytes_in_use, in_use, sizeof in_use);
  format_bytes(stats.peak_bytes_in_use, peak, sizeof peak);
  format_bytes(stats.bytes_cached, cached, sizeof cached);
  format_bytes(stats.limit_bytes, limit, sizeof limit);
  printf("\nMemory:\n");
  printf("  in use:      %s\n", in_use);
  printf("  peak:        %s\n", peak);
  printf("  cached:      %s\n", cached);
  printf("  limit:       %s\n", limit);
  printf("  allocations: %" PRIu64 "\n", stats.allocation_count);
  return 0;
}

int report_device_text(phx_context context, size_t device) {
  phx_device_info info;
  if (get_device_info(context, device, &info) != 0) return -1;
  print_device_info(&info);
  if (print_support_matrix(context, device) != 0) return -1;
  return print_memory_stats(context, device);
}
