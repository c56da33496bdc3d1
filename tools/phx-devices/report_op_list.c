/* The op table as the library gives it (phx_op_info_get): a row per op with its inputs
 * (an optional one marked "?"), its outputs, its parameter struct, the dtypes of its
 * first input it is defined for, and what it computes. docs/ops.md holds the Markdown
 * form (tools/phx-devices/docs_ops_table.sh). */
#include <stdio.h>
#include <string.h>

#include "report.h"

enum { COLUMNS = 6, CELL_BYTES = 256 };

typedef struct op_row {
  char cells[COLUMNS][CELL_BYTES];
} op_row;

static void join_names(const char* const* names, size_t count, uint32_t optional, char* out,
                       size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < count && used < size; ++i) {
    int written = snprintf(out + used, size - used, "%s%s%s", i ? ", " : "", names[i],
                           (optional >> i & 1u) ? "?" : "");
    if (written < 0) return;
    used += (size_t)written;
  }
}

static int fill_row(phx_op_id op, op_row* row) {
  phx_op_info info = PHX_OP_INFO_INIT;
  if (check_status(phx_op_info_get(op, &info), "phx_op_info_get") != 0) return -1;
  snprintf(row->cells[0], CELL_BYTES, "%s", info.name);
  join_names(info.input_names, info.input_count, info.optional_inputs, row->cells[1], CELL_BYTES);
  join_names(info.output_names, info.output_count, 0, row->cells[2], CELL_BYTES);
  snprintf(row->cells[3], CELL_BYTES, "%s", info.params_struct[0] ? info.params_struct : "-");
  format_dtype_list(info.dtype_mask, row->cells[4], CELL_BYTES);
  snprintf(row->cells[5], CELL_BYTES, "%s", info.summary);
  return 0;
}

int report_op_list(int markdown) {
  static const char* const header[COLUMNS] = {"op",     "inputs", "outputs",
                                              "params", "dtypes", "computes"};
  static op_row rows[PHX_OP_COUNT];
  int widths[COLUMNS];
  for (int c = 0; c < COLUMNS; ++c) widths[c] = (int)strlen(header[c]);
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    if (fill_row((phx_op_id)op, &rows[op]) != 0) return -1;
    /* The summary, last, is left as long as it is: Markdown pads it to its header. */
    for (int c = 0; c + 1 < COLUMNS; ++c) {
      int width = (int)strlen(rows[op].cells[c]);
      if (width > widths[c]) widths[c] = width;
    }
  }
  if (!markdown) {
    printf(
        "Ops (? marks an optional input; dtypes: of the first input, as the op's rules allow;\n"
        "phx-devices --ops for what each plugin runs):\n\n");
  }
  print_table_row(markdown, header, widths, COLUMNS);
  if (markdown) print_table_separator(widths, COLUMNS);
  for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
    const char* cells[COLUMNS];
    for (int c = 0; c < COLUMNS; ++c) cells[c] = rows[op].cells[c];
    print_table_row(markdown, cells, widths, COLUMNS);
  }
  return 0;
}
