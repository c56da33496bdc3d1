/*
 * tensor_parallel: one matmul Y = X W split over R ranks, two ways, each checked against
 * the same matmul on one device and against a float64 reference.
 *
 *   column split: rank r holds all of X and the r-th block of W's columns, computes its
 *                 block of Y's columns, Y_r = X W[:, cols_r]; phx_shard_gather along
 *                 axis 1 joins the blocks into Y on every rank.
 *   row split:    rank r holds the r-th block of X's columns and of W's rows, computes a
 *                 partial product, P_r = X[:, rows_r] W[rows_r, :], of Y's full shape;
 *                 phx_all_reduce(sum) adds them into Y on every rank.
 *
 * Rank 0 is the root: X and W start there, and reach the other ranks by phx_broadcast and
 * phx_shard_scatter. Ranks: one per device that runs f32 matmul, or four on the one device
 * that does when there is only one. One thread drives every rank: it queues each rank's
 * part, then waits for all. Exits 1 on a mismatch.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 8             /* M: X's and Y's rows */
#define DEPTH_PER_RANK 32  /* K = DEPTH_PER_RANK * R */
#define COLUMNS_PER_RANK 8 /* N = COLUMNS_PER_RANK * R */
#define ONE_DEVICE_RANKS 4 /* ranks on the device when only one runs f32 matmul */

typedef enum split { COLUMN_SPLIT, ROW_SPLIT, UNSPLIT } split;

/* The ranks, each one's rounding of matmul inputs (input_rounding), the sizes, the host's
 * X and W, the float64 reference and its magnitudes. */
static size_t ranks;
static double* rho;
static int64_t depth, columns;
static float *host_x, *host_w;
static double *reference, *magnitude; /* magnitude[m, n] = sum over k of |x[m, k] w[k, n]| */

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "tensor_parallel: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A fixed pseudo-random sequence in [-1, 1), the same on every run. */
static void fill(float* values, int64_t count, uint32_t* state) {
  for (int64_t i = 0; i < count; ++i) {
    *state = *state * 1664525u + 1013904223u;
    values[i] = (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
  }
}

/* An f32 [rows, cols] tensor on device, holding data unless data is null. */
static int matrix(phx_context context, size_t device, int64_t rows, int64_t cols, const float* data,
                  phx_tensor* out) {
  const int64_t shape[2] = {rows, cols};
  if (failed("phx_tensor_create", phx_tensor_create(context, device, PHX_DTYPE_F32, 2, shape, out)))
    return 1;
  return data && failed("phx_tensor_upload",
                        phx_tensor_upload(*out, 0, data, (size_t)(rows * cols) * sizeof(float)));
}

static phx_status matmul(phx_stream stream, phx_tensor a, phx_tensor b, phx_tensor out) {
  const phx_tensor inputs[2] = {a, b};
  const phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_MATMUL, NULL, inputs, 2, &out, 1};
  return phx_op_run(stream, &desc, NULL);
}

/* What a rank holds. */
typedef struct rank_state {
  phx_stream stream;
  phx_tensor x, w; /* its X (all of it, or a block of columns) and its block of W */
  phx_tensor part; /* its block of Y's columns (column split) */
  phx_tensor y;    /* Y, [ROWS, columns] (row split: its partial product, then Y) */
} rank_state;

/* Queues one rank's part of the split matmul; root_x and root_w are the full X and W,
 * on rank 0's device. */
static phx_status queue_rank(phx_comm comm, size_t r, rank_state* s, split how, phx_tensor root_x,
                             phx_tensor root_w) {
  /* Only the root reads the full tensors: the other ranks pass null. */
  const phx_tensor full_x = r == 0 ? root_x : NULL, full_w = r == 0 ? root_w : NULL;
  phx_status status;
  if (how == COLUMN_SPLIT) {
    status = phx_broadcast(comm, r, s->stream, r == 0 ? root_x : s->x, 0, NULL);
    if (status == PHX_STATUS_OK)
      status = phx_shard_scatter(comm, r, s->stream, full_w, 0, 1, s->w, NULL);
    if (status == PHX_STATUS_OK) status = matmul(s->stream, r == 0 ? root_x : s->x, s->w, s->part);
    if (status == PHX_STATUS_OK)
      status = phx_shard_gather(comm, r, s->stream, s->part, 1, s->y, NULL);
  } else {
    status = phx_shard_scatter(comm, r, s->stream, full_x, 0, 1, s->x, NULL);
    if (status == PHX_STATUS_OK)
      status = phx_shard_scatter(comm, r, s->stream, full_w, 0, 0, s->w, NULL);
    if (status == PHX_STATUS_OK) status = matmul(s->stream, s->x, s->w, s->y);
    if (status == PHX_STATUS_OK)
      status = phx_all_reduce(comm, r, s->stream, s->y, s->y, PHX_REDUCE_SUM, NULL);
  }
  return status;
}

/* Runs Y = X W split over the ranks (rank r on devices[r]) and writes rank 0's Y to y;
 * 0 when every call succeeded and every rank holds the same Y, bit for bit. */
static int run_split(phx_context context, const size_t* devices, split how, float* y) {
  const int64_t k_part = depth / (int64_t)ranks, n_part = columns / (int64_t)ranks;
  const size_t y_bytes = (size_t)(ROWS * columns) * sizeof(float);
  phx_comm comm = NULL;
  phx_tensor root_x = NULL, root_w = NULL;
  rank_state* state = calloc(ranks, sizeof *state);
  float* other = malloc(y_bytes);
  int result = 1;
  if (!state || !other) goto cleanup;
  if (failed("phx_comm_create", phx_comm_create(context, devices, ranks, NULL, &comm)) ||
      matrix(context, devices[0], ROWS, depth, host_x, &root_x) ||
      matrix(context, devices[0], depth, columns, host_w, &root_w))
    goto cleanup;
  for (size_t r = 0; r < ranks; ++r) {
    rank_state* s = &state[r];
    const size_t d = devices[r];
    if (failed("phx_stream_create", phx_stream_create(context, d, &s->stream)) ||
        matrix(context, d, ROWS, columns, NULL, &s->y))
      goto cleanup;
    if (how == COLUMN_SPLIT) {
      /* Rank 0 computes with the root's X: the broadcast reads it there. */
      if ((r > 0 && matrix(context, d, ROWS, depth, NULL, &s->x)) ||
          matrix(context, d, depth, n_part, NULL, &s->w) ||
          matrix(context, d, ROWS, n_part, NULL, &s->part))
        goto cleanup;
    } else if (matrix(context, d, ROWS, k_part, NULL, &s->x) ||
               matrix(context, d, k_part, columns, NULL, &s->w)) {
      goto cleanup;
    }
  }

  for (size_t r = 0; r < ranks; ++r)
    if (failed("queueing a rank's part", queue_rank(comm, r, &state[r], how, root_x, root_w)))
      goto cleanup;
  for (size_t r = 0; r < ranks; ++r)
    if (failed("phx_stream_synchronize", phx_stream_synchronize(state[r].stream))) goto cleanup;
  for (size_t r = 0; r < ranks; ++r) {
    if (failed("phx_tensor_download", phx_tensor_download(state[r].y, 0, r ? other : y, y_bytes)))
      goto cleanup;
    if (r > 0 && memcmp(other, y, y_bytes) != 0) {
      fprintf(stderr, "tensor_parallel: rank %zu's Y differs from rank 0's\n", r);
      goto cleanup;
    }
  }
  result = 0;

cleanup:
  /* The communicator goes first: after a failed call, a collective some ranks never
   * joined then fails at once instead of holding the streams until its timeout. */
  if (comm && failed("phx_comm_destroy", phx_comm_destroy(comm))) result = 1;
  for (size_t r = 0; state && r < ranks; ++r) {
    rank_state* s = &state[r];
    if (s->stream && failed("phx_stream_destroy", phx_stream_destroy(s->stream))) result = 1;
    const phx_tensor tensors[4] = {s->x, s->w, s->part, s->y};
    for (int i = 0; i < 4; ++i)
      if (tensors[i] && failed("phx_tensor_destroy", phx_tensor_destroy(tensors[i]))) result = 1;
  }
  if (root_x && failed("phx_tensor_destroy", phx_tensor_destroy(root_x))) result = 1;
  if (root_w && failed("phx_tensor_destroy", phx_tensor_destroy(root_w))) result = 1;
  free(other);
  free(state);
  return result;
}

/* Y = X W on one device, the same matmul unsplit. */
static int run_one(phx_context context, size_t device, float* y) {
  phx_tensor x = NULL, w = NULL, out = NULL;
  phx_stream stream = NULL;
  int result = 1;
  if (!matrix(context, device, ROWS, depth, host_x, &x) &&
      !matrix(context, device, depth, columns, host_w, &w) &&
      !matrix(context, device, ROWS, columns, NULL, &out) &&
      !failed("phx_stream_create", phx_stream_create(context, device, &stream)) &&
      !failed("matmul", matmul(stream, x, w, out)) &&
      !failed("phx_stream_synchronize", phx_stream_synchronize(stream)) &&
      !failed("phx_tensor_download",
              phx_tensor_download(out, 0, y, (size_t)(ROWS * columns) * sizeof(float))))
    result = 0;
  if (stream && failed("phx_stream_destroy", phx_stream_destroy(stream))) result = 1;
  const phx_tensor tensors[3] = {x, w, out};
  for (int i = 0; i < 3; ++i)
    if (tensors[i] && failed("phx_tensor_destroy", phx_tensor_destroy(tensors[i]))) result = 1;
  return result;
}

/* The relative error of a product the device adds by rounding f32 matmul inputs, from
 * its property "matmul_precision": bf16 rounds each input by up to 2^-9 (a product by
 * about 2^-8; the TPU simulator's default); bf16x3 leaves about 3 * 2^-16 of a product. */
static double input_rounding(phx_context context, size_t device) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  if (phx_device_get(context, device, &info) != PHX_STATUS_OK) return 0.0;
  for (size_t i = 0; i < info.property_count; ++i) {
    if (strcmp(info.properties[i].key, "matmul_precision") != 0) continue;
    if (strcmp(info.properties[i].value, "bf16") == 0) return 0x1p-8;
    if (strcmp(info.properties[i].value, "bf16x3") == 0) return 0x1p-14;
  }
  return 0.0;
}

/*
 * Tolerances, against the float64 reference, with u = 2^-24 and S = magnitude[m, n]:
 * - a sum of K products in f32, on a device whose products are off by up to rho, strays
 *   by at most (rho + 2 (K + 1) u) S (Higham's bound for K - 1 additions, with room for
 *   the products' own rounding): the one device's Y, rank 0's rho;
 * - column split: Y's column n is the sum of K products on rank n / COLUMNS_PER_RANK,
 *   and the gather copies it exactly: the same bound, with that rank's rho;
 * - row split: each rank sums K / R products, then the all-reduce adds the R partial sums
 *   in f32 and rounds once ((R + 1) u of their magnitudes, at most S): at most
 *   (rho_max + 2 (K / R + R + 1) u) S, rho_max the largest of the ranks';
 * - against the one device's Y: the split's tolerance plus the one device's.
 * The relative error bound of element (m, n):
 */
static double bound(split how, int64_t n) {
  const double u = 0x1p-24;
  if (how == UNSPLIT) return rho[0] + 2.0 * (double)(depth + 1) * u;
  if (how == COLUMN_SPLIT) return rho[n / COLUMNS_PER_RANK] + 2.0 * (double)(depth + 1) * u;
  double rho_max = 0.0;
  for (size_t r = 0; r < ranks; ++r) rho_max = rho[r] > rho_max ? rho[r] : rho_max;
  return rho_max + 2.0 * (double)(depth / (int64_t)ranks + (int64_t)ranks + 1) * u;
}

/* The largest ratio of an error of y (computed as how says) to its tolerance, against the
 * reference, or against the one device's Y when one_device is not null. At most 1 passes;
 * NaN fails. */
static double worst_ratio(const float* y, split how, const float* one_device) {
  double worst = 0.0;
  for (int64_t m = 0; m < ROWS; ++m) {
    for (int64_t n = 0; n < columns; ++n) {
      const int64_t i = m * columns + n;
      const double expected = one_device ? one_device[i] : reference[i];
      const double tolerance =
          (bound(how, n) + (one_device ? bound(UNSPLIT, n) : 0.0)) * magnitude[i];
      const double ratio = fabs((double)y[i] - expected) / (tolerance + 1e-30);
      if (isnan(ratio) || ratio > worst) worst = ratio;
    }
  }
  return worst;
}

int main(void) {
  phx_context context = NULL;
  size_t *devices = NULL, device_count = 0;
  float *y_one = NULL, *y_split = NULL;
  int exit_code = 1;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;

  if (failed("phx_device_count", phx_device_count(context, &device_count))) goto done;
  const size_t most = device_count < ONE_DEVICE_RANKS ? ONE_DEVICE_RANKS : device_count;
  devices = calloc(most, sizeof *devices);
  rho = calloc(most, sizeof *rho);
  if (!devices || !rho) goto done;
  for (size_t d = 0; d < device_count; ++d) {
    int supported = 0;
    if (failed("phx_device_supports",
               phx_device_supports(context, d, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported)))
      goto done;
    if (supported) devices[ranks++] = d;
  }
  if (ranks == 0) {
    fprintf(stderr, "tensor_parallel: no device runs f32 matmul\n");
    goto done;
  }
  if (ranks == 1) {
    while (ranks < ONE_DEVICE_RANKS) devices[ranks++] = devices[0];
  }
  for (size_t r = 0; r < ranks; ++r) rho[r] = input_rounding(context, devices[r]);

  depth = DEPTH_PER_RANK * (int64_t)ranks;
  columns = COLUMNS_PER_RANK * (int64_t)ranks;
  host_x = malloc((size_t)(ROWS * depth) * sizeof *host_x);
  host_w = malloc((size_t)(depth * columns) * sizeof *host_w);
  reference = malloc((size_t)(ROWS * columns) * sizeof *reference);
  magnitude = malloc((size_t)(ROWS * columns) * sizeof *magnitude);
  y_one = malloc((size_t)(ROWS * columns) * sizeof *y_one);
  y_split = malloc((size_t)(ROWS * columns) * sizeof *y_split);
  if (!host_x || !host_w || !reference || !magnitude || !y_one || !y_split) goto done;
  uint32_t state = 5;
  fill(host_x, ROWS * depth, &state);
  fill(host_w, depth * columns, &state);
  for (int64_t m = 0; m < ROWS; ++m) {
    for (int64_t n = 0; n < columns; ++n) {
      double sum = 0.0, size = 0.0;
      for (int64_t k = 0; k < depth; ++k) {
        const double product = (double)host_x[m * depth + k] * host_w[k * columns + n];
        sum += product;
        size += fabs(product);
      }
      reference[m * columns + n] = sum;
      magnitude[m * columns + n] = size;
    }
  }

  printf("Y = X W, X [%d x %lld], W [%lld x %lld], over %zu ranks on devices", ROWS,
         (long long)depth, (long long)depth, (long long)columns, ranks);
  for (size_t r = 0; r < ranks; ++r) printf(" %zu", devices[r]);
  printf("\n");
  if (run_one(context, devices[0], y_one)) goto done;
  const double one_vs_reference = worst_ratio(y_one, UNSPLIT, NULL);
  printf("one device (%zu) vs float64: %.3g of its tolerance\n", devices[0], one_vs_reference);
  int ok = one_vs_reference <= 1.0;

  const char* names[2] = {"column split + shard_gather", "row split + all_reduce"};
  for (int how = COLUMN_SPLIT; how <= ROW_SPLIT; ++how) {
    if (run_split(context, devices, (split)how, y_split)) goto done;
    const double vs_reference = worst_ratio(y_split, (split)how, NULL);
    const double vs_one = worst_ratio(y_split, (split)how, y_one);
    printf("%s: vs float64 %.3g, vs one device %.3g of the tolerance\n", names[how], vs_reference,
           vs_one);
    ok = ok && vs_reference <= 1.0 && vs_one <= 1.0; /* NaN fails */
  }
  if (!ok) {
    fprintf(stderr, "tensor_parallel: an error is outside its tolerance\n");
    goto done;
  }
  printf("tensor_parallel verified over %zu ranks\n", ranks);
  exit_code = 0;

done:
  free(host_x);
  free(host_w);
  free(reference);
  free(magnitude);
  free(y_one);
  free(y_split);
  free(rho);
  free(devices);
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
