#include "json_writer.h"

#include <inttypes.h>
#include <stddef.h>

void json_writer_init(json_writer* writer, FILE* out) {
  writer->out = out;
  writer->depth = 0;
  writer->container_empty = 1;
  writer->inline_array = 0;
}

/* The length of the well-formed UTF-8 sequence that starts at p (2 to 4 bytes), or 0
 * when it is not one (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF). Stops at the first byte that does not fit, so it never reads past a NUL. */
static size_t utf8_sequence_length(const unsigned char* p) {
  size_t length;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) {
    length = 2;
  } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
    length = 3;
    if (p[0] == 0xE0) low = 0xA0;  /* overlong */
    if (p[0] == 0xED) high = 0x9F; /* surrogates */
  } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
    length = 4;
    if (p[0] == 0xF0) low = 0x90;  /* overlong */
    if (p[0] == 0xF4) high = 0x8F; /* past U+10FFFF */
  } else {
    return 0;
  }
  if (p[1] < low || p[1] > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
  }
  return length;
}

/* Writes s as a JSON string. Plugin paths are arbitrary bytes, so a byte that is not
 * part of well-formed UTF-8 becomes U+FFFD rather than making the document invalid. */
static void write_escaped(FILE* out, const char* s) {
  const unsigned char* p = (const unsigned char*)(s ? s : "");
  fputc('"', out);
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', out);
      fputc(c, out);
      ++p;
    } else if (c < 0x20) {
      switch (c) {
        case '\b':
          fputs("\\b", out);
          break;
        case '\f':
          fputs("\\f", out);
          break;
        case '\n':
          fputs("\\n", out);
          break;
        case '\r':
          fputs("\\r", out);
          break;
        case '\t':
          fputs("\\t", out);
          break;
        default:
          fprintf(out, "\\u%04x", (unsigned)c);
          break;
      }
      ++p;
    } else if (c < 0x80) {
      fputc(c, out);
      ++p;
    } else {
      size_t length = utf8_sequence_length(p);
      if (length == 0) {
        fputs("\\ufffd", out);
        ++p;
      } else {
        fwrite(p, 1, length, out);
        p += length;
      }
    }
  }
  fputc('"', out);
}

static void write_indent(json_writer* writer) {
  fputc('\n', writer->out);
  for (int i = 0; i < writer->depth; ++i) fputs("  ", writer->out);
}

/* Everything an element needs before its value: the comma, the line, the key. */
static void begin_element(json_writer* writer, const char* key) {
  if (writer->inline_array) {
    if (!writer->container_empty) fputs(", ", writer->out);
  } else if (writer->depth > 0) {
    if (!writer->container_empty) fputc(',', writer->out);
    write_indent(writer);
  }
  if (key) {
    write_escaped(writer->out, key);
    fputs(": ", writer->out);
  }
  writer->container_empty = 0;
}

static void open_container(json_writer* writer, const char* key, char bracket) {
  begin_element(writer, key);
  fputc(bracket, writer->out);
  ++writer->depth;
  writer->container_empty = 1;
}

static void close_container(json_writer* writer, char bracket) {
  --writer->depth;
  if (!writer->container_empty && !writer->inline_array) write_indent(writer);
  writer->inline_array = 0;
  fputc(bracket, writer->out);
  /* The parent now holds this container, so it is no longer empty. */
  writer->container_empty = 0;
}

void json_begin_object(json_writer* writer, const char* key) { open_container(writer, key, '{'); }
void json_end_object(json_writer* writer) { close_container(writer, '}'); }
void json_begin_array(json_writer* writer, const char* key) { open_container(writer, key, '['); }
void json_end_array(json_writer* writer) { close_container(writer, ']'); }

void json_begin_array_inline(json_writer* writer, const char* key) {
  open_container(writer, key, '[');
  writer->inline_array = 1;
}

void json_string(json_writer* writer, const char* key, const char* value) {
  begin_element(writer, key);
  write_escaped(writer->out, value);
}

void json_uint(json_writer* writer, const char* key, uint64_t value) {
  begin_element(writer, key);
  fprintf(writer->out, "%" PRIu64, value);
}

void json_bool(json_writer* writer, const char* key, int value) {
  begin_element(writer, key);
  fputs(value ? "true" : "false", writer->out);
}

void json_writer_finish(json_writer* writer) { fputc('\n', writer->out); }
