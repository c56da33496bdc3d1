#include <inttypes.h>
#include <stdio.h>

#include "report.h"

int check_status(phx_status status, const char* what) {
  if (status == PHX_STATUS_OK) return 0;
  /* The last error stays valid only until the next phx_ call, so take it last. */
  const char* name = phx_status_name(status);
  const char* message = phx_last_error();
  fprintf(stderr, "phx-devices: %s: %s: %s\n", what, name, message);
  return -1;
}

int get_plugin_info(phx_context context, size_t index, phx_plugin_info* out_info) {
  phx_plugin_info info = {0};
  info.struct_size = sizeof info;
  if (check_status(phx_plugin_get(context, index, &info), "phx_plugin_get") != 0) return -1;
  *out_info = info;
  return 0;
}

int get_device_info(phx_context context, size_t device, phx_device_info* out_info) {
  phx_device_info info = {0};
  info.struct_size = sizeof info;
  if (check_status(phx_device_get(context, device, &info), "phx_device_get") != 0) return -1;
  *out_info = info;
  return 0;
}

int get_op_dtype_mask(phx_context context, size_t device, phx_op_id op, uint32_t* out_mask) {
  uint32_t mask = 0;
  for (int dtype = PHX_DTYPE_INVALID + 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
    int supported = 0;
    phx_status status = phx_device_supports(context, device, op, (phx_dtype)dtype, &supported);
    if (check_status(status, "phx_device_supports") != 0) return -1;
    if (supported) mask |= PHX_DTYPE_BIT(dtype);
  }
  *out_mask = mask;
  return 0;
}

void format_api_version(char* buffer, size_t size) {
  uint32_t version = phx_api_version();
  snprintf(buffer, size, "%" PRIu32 ".%" PRIu32 ".%" PRIu32, version / 10000, version / 100 % 100,
           version % 100);
}

void format_bytes(uint64_t bytes, char* buffer, size_t size) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) {
    snprintf(buffer, size, "%" PRIu64 " B", bytes);
    return;
  }
  double value = (double)bytes / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(buffer, size, "%.1f %s", value, units[unit]);
}

void format_dtype_list(uint32_t mask, char* buffer, size_t size) {
  size_t used = 0;
  buffer[0] = '\0';
  for (int dtype = PHX_DTYPE_INVALID + 1; dtype < PHX_DTYPE_COUNT; ++dtype) {
    if (!(mask & PHX_DTYPE_BIT(dtype))) continue;
    int written = snprintf(buffer + used, size - used, "%s%s", used ? " " : "",
                           phx_dtype_name((phx_dtype)dtype));
    if (written < 0 || (size_t)written >= size - used) break; /* truncated; keep what fits */
    used += (size_t)written;
  }
  if (used == 0) snprintf(buffer, size, "-");
}

const char* text_or_empty(const char* text) { return text ? text : ""; }

/* A row: Markdown "| a | b |" or text "  a  b", cells padded to their column's width
 * either way, so that the Markdown reads as a table in the source file too. The last
 * cell of a text row is not padded, leaving no trailing blanks. */
void print_table_row(int markdown, const char* const* cells, const int* widths, size_t count) {
  for (size_t c = 0; c < count; ++c) {
    if (markdown) {
      printf("%s %-*s |", c == 0 ? "|" : "", widths[c], cells[c]);
    } else {
      printf("  %-*s", c + 1 == count ? 0 : widths[c], cells[c]);
    }
  }
  printf("\n");
}

void print_table_separator(const int* widths, size_t count) {
  printf("|");
  for (size_t c = 0; c < count; ++c) {
    printf("-");
    for (int i = 0; i < widths[c]; ++i) printf("-");
    printf("-|");
  }
  printf("\n");
}
