/* A minimal streaming JSON writer: indented output, strings escaped per RFC 8259. */
#ifndef PHX_DEVICES_JSON_WRITER_H
#define PHX_DEVICES_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

typedef struct json_writer {
  FILE* out;
  int depth;
  /* Non-zero until the innermost open container has received its first element; it
   * decides whether the next element needs a separating comma. */
  int container_empty;
  /* Non-zero inside an array opened with json_begin_array_inline: its elements share
   * one line, which keeps the dtype lists short. */
  int inline_array;
} json_writer;

void json_writer_init(json_writer* writer, FILE* out);

/* key is the member name inside an object; pass NULL inside an array or at the top. */
void json_begin_object(json_writer* writer, const char* key);
void json_end_object(json_writer* writer);
void json_begin_array(json_writer* writer, const char* key);
void json_end_array(json_writer* writer);
/* An array written on one line, e.g. ["f32", "f16"]; for scalar elements only. Close it
 * with json_end_array. */
void json_begin_array_inline(json_writer* writer, const char* key);
/* A NULL value is written as "" (an empty string), not as null. */
void json_string(json_writer* writer, const char* key, const char* value);
void json_uint(json_writer* writer, const char* key, uint64_t value);
/* true for a non-zero value, false for 0. */
void json_bool(json_writer* writer, const char* key, int value);

/* Ends the document with a newline. */
void json_writer_finish(json_writer* writer);

#endif /* PHX_DEVICES_JSON_WRITER_H */
