/*
 * phx-devices: shows what Phynexus finds on this machine, like vulkaninfo --summary.
 *
 *   phx-devices               the loaded plugins and the devices, as tables
 *   phx-devices --plugins     every plugin candidate, with why it was rejected or shadowed
 *   phx-devices --device N    device N in detail: properties, op support, memory
 *   phx-devices --ops         op x dtype support per plugin; --markdown: docs/ops.md's table
 *   phx-devices --op-list     the ops, their operands and dtypes; --markdown: docs/ops.md's
 *   phx-devices --json [...]  the same as one JSON document (docs/phx-devices.md)
 *
 * Exit status: 0 with at least one device, 1 with none (or when Phynexus fails),
 * 2 on a usage error.
 */
#include <errno.h>
#include <phynexus/phynexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

enum { EXIT_HAS_DEVICE = 0, EXIT_NO_DEVICE = 1, EXIT_USAGE = 2 };

typedef enum report_kind {
  REPORT_SUMMARY,
  REPORT_PLUGINS,
  REPORT_DEVICE,
  REPORT_OPS,
  REPORT_OP_LIST
} report_kind;

typedef struct options {
  report_kind kind;
  size_t device; /* for REPORT_DEVICE */
  int json;
  int markdown; /* for REPORT_OPS and REPORT_OP_LIST */
  int help;
} options;

static void print_usage(FILE* out) {
  fputs(
      "Usage: phx-devices [--plugins | --device N] [--json] [--help]\n"
      "       phx-devices --ops [--markdown] | --op-list [--markdown]\n"
      "\n"
      "Lists the Phynexus plugins and devices found on this machine.\n"
      "\n"
      "  (no option)   the loaded plugins and every device, as tables\n"
      "  --plugins     every plugin candidate, loaded, rejected or shadowed, with the\n"
      "                stage the loader reached and the reason\n"
      "  --device N    device N in detail: info, properties, op x dtype support, memory\n"
      "  --ops         op x dtype support by plugin: a row per op, a column per plugin,\n"
      "                the dtypes a device of the plugin runs the op with\n"
      "  --op-list     every op: its inputs (? marks an optional one), outputs,\n"
      "                parameter struct, the dtypes its rules allow, what it computes\n"
      "  --markdown    with --ops or --op-list: as a Markdown table, as in docs/ops.md\n"
      "  --json        print JSON instead of text (schema: docs/phx-devices.md); with\n"
      "                --device N just that device's object, otherwise everything\n"
      "  --help        this text\n"
      "\n"
      "Exit status: 0 with at least one device, 1 with none or when Phynexus fails,\n"
      "2 on a usage error.\n"
      "Environment: PHX_LOADER_DEBUG=1 logs every plugin the loader considers;\n"
      "PHX_PLUGIN_PATH, PHX_ADD_PLUGIN_PATH change where it looks (docs/loader.md).\n",
      out);
}

/* A device index: decimal digits only (strtoul alone would take "-1" and " 7"). */
static int parse_index(const char* text, size_t* out_index) {
  if (text[0] < '0' || text[0] > '9') return -1;
  char* end = NULL;
  errno = 0;
  unsigned long value = strtoul(text, &end, 10);
  /* On Linux, unsigned long and size_t have the same width: no further range check. */
  if (errno != 0 || *end != '\0') return -1;
  *out_index = (size_t)value;
  return 0;
}

static int usage_error(const char* message, const char* argument) {
  fprintf(stderr, "phx-devices: %s: '%s'\nTry 'phx-devices --help'.\n", message, argument);
  return -1;
}

/* Sets the report; the reports exclude each other. */
static int set_kind(options* parsed, report_kind kind, const char* arg) {
  if (parsed->kind != REPORT_SUMMARY && parsed->kind != kind) {
    return usage_error("--plugins, --device, --ops and --op-list exclude each other", arg);
  }
  parsed->kind = kind;
  return 0;
}

static int parse_options(int argc, char** argv, options* out_options) {
  options parsed = {REPORT_SUMMARY, 0, 0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      parsed.help = 1;
    } else if (strcmp(arg, "--json") == 0) {
      parsed.json = 1;
    } else if (strcmp(arg, "--markdown") == 0) {
      parsed.markdown = 1;
    } else if (strcmp(arg, "--plugins") == 0) {
      if (set_kind(&parsed, REPORT_PLUGINS, arg) != 0) return -1;
    } else if (strcmp(arg, "--ops") == 0) {
      if (set_kind(&parsed, REPORT_OPS, arg) != 0) return -1;
    } else if (strcmp(arg, "--op-list") == 0) {
      if (set_kind(&parsed, REPORT_OP_LIST, arg) != 0) return -1;
    } else if (strcmp(arg, "--device") == 0) {
      if (set_kind(&parsed, REPORT_DEVICE, arg) != 0) return -1;
      if (i + 1 == argc) return usage_error("missing the device index after", arg);
      if (parse_index(argv[++i], &parsed.device) != 0) {
        return usage_error("not a device index", argv[i]);
      }
    } else {
      return usage_error("unknown option", arg);
    }
  }
  if (parsed.markdown && parsed.kind != REPORT_OPS && parsed.kind != REPORT_OP_LIST) {
    return usage_error("only --ops and --op-list have a Markdown form", "--markdown");
  }
  if (parsed.json && parsed.kind == REPORT_OP_LIST) {
    return usage_error("--op-list has no JSON form", "--json");
  }
  /* --json --device N holds the same support as data, per device. */
  if (parsed.json && parsed.kind == REPORT_OPS) {
    return usage_error("--ops has no JSON form (--json lists every device's ops)", "--json");
  }
  *out_options = parsed;
  return 0;
}

static int run_report(phx_context context, const options* opts) {
  switch (opts->kind) {
    case REPORT_SUMMARY:
      return opts->json ? report_all_json(context) : report_summary_text(context);
    case REPORT_PLUGINS:
      /* The JSON document always lists every candidate, so --plugins adds nothing. */
      return opts->json ? report_all_json(context) : report_plugins_text(context);
    case REPORT_DEVICE:
      return opts->json ? report_device_json(context, opts->device)
                        : report_device_text(context, opts->device);
    case REPORT_OPS:
      return report_ops(context, opts->markdown);
    case REPORT_OP_LIST:
      return report_op_list(opts->markdown);
  }
  return -1;
}

int main(int argc, char** argv) {
  options opts;
  if (parse_options(argc, argv, &opts) != 0) return EXIT_USAGE;
  if (opts.help) {
    print_usage(stdout);
    return EXIT_SUCCESS;
  }

  /* The op list is the library's, whatever devices there are. */
  if (opts.kind == REPORT_OP_LIST) {
    return report_op_list(opts.markdown) == 0 ? EXIT_SUCCESS : EXIT_NO_DEVICE;
  }

  phx_context context = NULL;
  if (check_status(phx_context_create(NULL, &context), "phx_context_create") != 0) {
    return EXIT_NO_DEVICE;
  }

  int exit_status;
  size_t device_count = 0;
  if (check_status(phx_device_count(context, &device_count), "phx_device_count") != 0) {
    exit_status = EXIT_NO_DEVICE;
  } else if (opts.kind == REPORT_DEVICE && opts.device >= device_count) {
    fprintf(stderr, "phx-devices: no device %zu: there %s %zu device%s (phx-devices lists them)\n",
            opts.device, device_count == 1 ? "is" : "are", device_count,
            device_count == 1 ? "" : "s");
    exit_status = EXIT_USAGE;
  } else if (run_report(context, &opts) != 0) {
    exit_status = EXIT_NO_DEVICE;
  } else {
    exit_status = device_count > 0 ? EXIT_HAS_DEVICE : EXIT_NO_DEVICE;
  }

  if (check_status(phx_context_destroy(context), "phx_context_destroy") != 0) {
    exit_status = EXIT_NO_DEVICE;
  }
  return exit_status;
}
