/*
 * device_available: is there a device to compute on?
 *
 * Creates a context (which finds and loads the device plugins), lists its devices and
 * exits 0 if there is at least one, 1 if there is none or a call failed.
 */
#include <phynexus/phynexus.h>
#include <stdio.h>

/* Prints the failed call with the library's message, which names the cause. */
static int report_failure(const char* call, phx_status status) {
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "device_available: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

int main(void) {
  phx_context context = NULL;
  /* NULL options: the default plugin search path, warnings on stderr. */
  phx_status status = phx_context_create(NULL, &context);
  if (status != PHX_STATUS_OK) return report_failure("phx_context_create", status);

  int exit_code = 1;
  size_t device_count = 0;
  status = phx_device_count(context, &device_count);
  if (status != PHX_STATUS_OK) {
    report_failure("phx_device_count", status);
    goto done;
  }

  for (size_t d = 0; d < device_count; ++d) {
    phx_device_info info = {0};
    info.struct_size = sizeof info; /* tells the library which version of the struct we have */
    status = phx_device_get(context, d, &info);
    if (status != PHX_STATUS_OK) {
      report_failure("phx_device_get", status);
      goto done;
    }
    printf("device %zu: %s \"%s\" from plugin %s\n", d, phx_device_type_name(info.type), info.name,
           info.plugin);
  }

  if (device_count > 0) {
    printf("%zu device%s available\n", device_count, device_count == 1 ? "" : "s");
    exit_code = 0;
  } else {
    /* A context without devices is valid: every plugin was rejected, or none was found. */
    printf("no device available (phx-devices --plugins shows why)\n");
  }

done:
  status = phx_context_destroy(context);
  if (status != PHX_STATUS_OK) exit_code = report_failure("phx_context_destroy", status);
  return exit_code;
}
