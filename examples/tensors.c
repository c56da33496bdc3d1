/*
 * tensors: create tensors on every device, upload, copy between devices, download,
 * verify.
 *
 * For every ordered pair of devices (a device paired with itself included), the
 * example uploads known values into a tensor on the first, copies it with
 * phx_tensor_copy into a tensor on the second, downloads that one and checks that every
 * value arrived. Exits 0 when every copy is exact.
 */
#include <phynexus/phynexus.h>
#include <stdio.h>

#define ROWS 16
#define COLS 64
#define COUNT (ROWS * COLS)

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "tensors: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* Copies COUNT f32 values from device `from` to device `to` and checks them; 0 on
 * success. The two tensors differ in shape ([16, 64] and [1024]): a copy needs only
 * the same dtype and byte size. */
static int copy_between(phx_context context, size_t from, size_t to) {
  static float sent[COUNT], received[COUNT];
  const int64_t matrix_shape[2] = {ROWS, COLS};
  const int64_t vector_shape[1] = {COUNT};
  phx_tensor source = NULL, destination = NULL;
  int result = 1;

  for (int i = 0; i < COUNT; ++i) {
    sent[i] = (float)i * 0.25f - 100.0f; /* exact in f32, different in every element */
    received[i] = 0.0f;
  }

  if (failed("phx_tensor_create (source)",
             phx_tensor_create(context, from, PHX_DTYPE_F32, 2, matrix_shape, &source)) ||
      failed("phx_tensor_create (destination)",
             phx_tensor_create(context, to, PHX_DTYPE_F32, 1, vector_shape, &destination)) ||
      failed("phx_tensor_upload", phx_tensor_upload(source, 0, sent, sizeof sent)) ||
      failed("phx_tensor_copy", phx_tensor_copy(destination, source)) ||
      failed("phx_tensor_download",
             phx_tensor_download(destination, 0, received, sizeof received))) {
    goto cleanup;
  }

  for (int i = 0; i < COUNT; ++i) {
    if (received[i] != sent[i]) {
      fprintf(stderr, "tensors: device %zu -> %zu: element %d is %g, expected %g\n", from, to, i,
              (double)received[i], (double)sent[i]);
      goto cleanup;
    }
  }
  printf("device %zu -> device %zu: %d f32 values copied and verified\n", from, to, COUNT);
  result = 0;

cleanup:
  /* A handle that was never created stays NULL and is not destroyed. */
  if (destination && failed("phx_tensor_destroy", phx_tensor_destroy(destination))) result = 1;
  if (source && failed("phx_tensor_destroy", phx_tensor_destroy(source))) result = 1;
  return result;
}

/* Sets *out_holds to 1 if the device can hold f32 tensors; returns 1 if the query
 * failed. */
static int holds_f32(phx_context context, size_t device, int* out_holds) {
  phx_device_info info = {0};
  info.struct_size = sizeof info; /* tells the library which version of the struct we have */
  if (failed("phx_device_get", phx_device_get(context, device, &info))) return 1;
  *out_holds = (info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_F32)) != 0;
  return 0;
}

int main(void) {
  phx_context context = NULL;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;

  int exit_code = 1;
  size_t device_count = 0;
  size_t copies = 0;
  if (failed("phx_device_count", phx_device_count(context, &device_count))) goto done;

  for (size_t from = 0; from < device_count; ++from) {
    int from_ok = 0;
    if (holds_f32(context, from, &from_ok)) goto done;
    if (!from_ok) printf("device %zu holds no f32 tensors: skipped\n", from);
    for (size_t to = 0; from_ok && to < device_count; ++to) {
      int to_ok = 0;
      if (holds_f32(context, to, &to_ok)) goto done;
      if (!to_ok) continue;
      if (copy_between(context, from, to)) goto done;
      ++copies;
    }
  }

  if (copies == 0) {
    fprintf(stderr, "tensors: no device to copy between\n");
  } else {
    printf("%zu cop%s verified\n", copies, copies == 1 ? "y" : "ies");
    exit_code = 0;
  }

done:
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
