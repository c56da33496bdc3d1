/* The op support of every plugin as one table: a row per op, a column per plugin, each
 * cell the dtypes that a device of the plugin runs the op with (phx_device_supports).
 * Columns are keyed by plugin, not device, and sorted by name, so that the table does
 * not depend on how many devices a machine has or in which folder order they were
 * found; docs/ops.md holds the Markdown form (tools/phx-devices/docs_ops_table.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Wide enough for every dtype's name, space-separated: "f32 f16 bf16 i8 i16 i32 u8". */
enum { CELL_BYTES = 96 };

typedef struct plugin_column {
  const char* name; /* the plugin's name, owned by the context */
  uint32_t dtype_masks[PHX_OP_COUNT];
  int width; /* the widest of the name and the cells */
} plugin_column;

static int max_int(int a, int b) { return a > b ? a : b; }

static int compare_columns(const void* a, const void* b) {
  return strcmp(((const plugin_column*)a)->name, ((const plugin_column*)b)->name);
}

/* The column of the device's plugin, added at the end when it is not there yet. */
static plugin_column* column_of(plugin_column* columns, size_t* column_count, const char* plugin) {
  for (size_t c = 0; c < *column_count; ++c) {
    if (strcmp(columns[c].name, plugin) == 0) return &columns[c];
  }
  plugin_column* added = &columns[(*column_count)++];
  added->name = plugin;
  return added;
}

/* One column per plugin with a device, each op's dtypes the union over its devices (a
 * plugin's devices may differ: a Vulkan GPU without 16-bit storage next to lavapipe). */
static int collect_columns(phx_context context, size_t device_count, plugin_column* columns,
                           size_t* out_column_count) {
  size_t column_count = 0;
  for (size_t d = 0; d < device_count; ++d) {
    phx_device_info info;
    if (get_device_info(context, d, &info) != 0) return -1;
    plugin_column* column = column_of(columns, &column_count, text_or_empty(info.plugin));
    for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
      uint32_t mask = 0;
      if (get_op_dtype_mask(context, d, (phx_op_id)op, &mask) != 0) return -1;
      column->dtype_masks[op] |= mask;
    }
  }
  qsort(columns, column_count, sizeof columns[0], compare_columns);
  *out_column_count = column_count;
  return 0;
}

static int op_column_width(void) {
  int width = (int)strlen("op");
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    width = max_int(width, (int)strlen(phx_op_name((phx_op_id)op)));
  }
  return width;
}

static void set_column_widths(plugin_column* columns, size_t column_count) {
  for (size_t c = 0; c < column_count; ++c) {
    columns[c].width = (int)strlen(columns[c].name);
    for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
      char cell[CELL_BYTES];
      format_dtype_list(columns[c].dtype_masks[op], cell, sizeof cell);
      columns[c].width = max_int(columns[c].width, (int)strlen(cell));
    }
  }
}

static int print_table(int markdown, const plugin_column* columns, size_t column_count) {
  /* Column 0 is the op's name; column c + 1 is plugin c. */
  const char** cells = calloc(column_count + 1, sizeof *cells);
  int* widths = calloc(column_count + 1, sizeof *widths);
  char(*dtype_text)[CELL_BYTES] = calloc(column_count + 1, sizeof *dtype_text);
  if (cells == NULL || widths == NULL || dtype_text == NULL) {
    fprintf(stderr, "phx-devices: out of memory\n");
    free(cells);
    free(widths);
    free(dtype_text);
    return -1;
  }
  widths[0] = op_column_width();
  cells[0] = "op";
  for (size_t c = 0; c < column_count; ++c) {
    widths[c + 1] = columns[c].width;
    cells[c + 1] = columns[c].name;
  }
  print_table_row(markdown, cells, widths, column_count + 1);
  if (markdown) print_table_separator(widths, column_count + 1);
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    cells[0] = phx_op_name((phx_op_id)op);
    for (size_t c = 0; c < column_count; ++c) {
      format_dtype_list(columns[c].dtype_masks[op], dtype_text[c + 1], CELL_BYTES);
      cells[c + 1] = dtype_text[c + 1];
    }
    print_table_row(markdown, cells, widths, column_count + 1);
  }
  free(cells);
  free(widths);
  free(dtype_text);
  return 0;
}

int report_ops(phx_context context, int markdown) {
  size_t device_count = 0;
  if (check_status(phx_device_count(context, &device_count), "phx_device_count") != 0) return -1;
  /* At most one column per device; calloc(0) may return null, hence the + 1. */
  plugin_column* columns = calloc(device_count + 1, sizeof *columns);
  if (columns == NULL) {
    fprintf(stderr, "phx-devices: out of memory\n");
    return -1;
  }
  size_t column_count = 0;
  if (collect_columns(context, device_count, columns, &column_count) != 0) {
    free(columns);
    return -1;
  }
  set_column_widths(columns, column_count);
  if (!markdown) {
    printf(
        "Op support by plugin: the dtypes of the first input that a device of the plugin\n"
        "runs the op with (-: none; phx-devices --device N for one device):\n\n");
  }
  const int status = print_table(markdown, columns, column_count);
  free(columns);
  return status;
}
