/* The reports phx-devices prints, and the queries they share. Every function that
 * returns int returns 0 on success and -1 after printing why on standard error. */
#ifndef PHX_DEVICES_REPORT_H
#define PHX_DEVICES_REPORT_H

#include <phynexus/phynexus.h>
#include <stddef.h>
#include <stdint.h>

/* Text reports. */
int report_summary_text(phx_context context);
int report_plugins_text(phx_context context);
int report_device_text(phx_context context, size_t device);

/* The op x dtype support of every plugin, as a table with a column per plugin; markdown
 * non-zero prints it as docs/ops.md holds it (report_ops.c). */
int report_ops(phx_context context, int markdown);

/* The op table (phx_op_info_get): a row per op with its operands, parameter struct,
 * dtypes and what it computes; markdown non-zero prints it as docs/ops.md holds it
 * (report_op_list.c). Needs no context: it is the library's, not a device's. */
int report_op_list(int markdown);

/* JSON reports (schema: docs/phx-devices.md). */
int report_all_json(phx_context context);
int report_device_json(phx_context context, size_t device);

/* ---- Shared queries and formatting (report_common.c) ---- */

/* 0 when status is OK; otherwise prints "phx-devices: <what>: <status>: <last error>"
 * and returns -1. */
int check_status(phx_status status, const char* what);

int get_plugin_info(phx_context context, size_t index, phx_plugin_info* out_info);
int get_device_info(phx_context context, size_t device, phx_device_info* out_info);

/* Sets *out_mask to the PHX_DTYPE_BIT of every dtype the device runs op with. */
int get_op_dtype_mask(phx_context context, size_t device, phx_op_id op, uint32_t* out_mask);

/* The loaded library's API version as "major.minor.patch". */
void format_api_version(char* buffer, size_t size);
/* A byte count for people: "512 B", "1.5 KiB", "15.6 GiB". */
void format_bytes(uint64_t bytes, char* buffer, size_t size);
/* The names of the dtypes in mask separated by spaces, e.g. "f32 f16 bf16"; "-" if none. */
void format_dtype_list(uint32_t mask, char* buffer, size_t size);

/* A table row: Markdown "| a | b |" or text "  a  b", each cell padded to its width
 * (a text row's last cell is not padded). */
void print_table_row(int markdown, const char* const* cells, const int* widths, size_t count);
/* The Markdown separator row "|---|---|" under a header row of these widths. */
void print_table_separator(const int* widths, size_t count);

/* Strings from plugins should never be null, but an inspector must not crash on a
 * plugin that breaks the rule. */
const char* text_or_empty(const char* text);

#endif /* PHX_DEVICES_REPORT_H */
