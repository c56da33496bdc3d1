/*
 * data_parallel_mlp: training a two-layer perceptron data parallel over R ranks, checked
 * against the same steps on one device and against a float64 reference.
 *
 *   h    = relu(x W1 + b1)        16 -> 32
 *   y    = h W2 + b2              32 -> 8
 *   loss = mean((y - t)^2)        over the rows of the batch and the outputs
 *
 * Every rank holds a copy of the parameters and ROWS rows of the batch. Per step, each
 * rank runs the forward pass and the backward pass (written out by hand in step_ops) on
 * its rows; phx_all_reduce(PHX_REDUCE_MEAN) then averages the gradients over the ranks,
 * and every rank applies the same SGD update, so the copies stay identical. The ranks
 * hold equal shares of the batch, so the mean of their gradients (each of its own rows'
 * mean loss) is the gradient of the whole batch's mean loss: the steps are those of one
 * device over the whole batch.
 *
 * Ranks: one per device that runs the step's ops on f32, or four on the one device that
 * does when there is only one. A single thread drives every rank: it queues each rank's
 * part of a step, then the next step; it waits once, at the end.
 *
 * Checks (exit 1 on a mismatch): every rank ends with the same parameters, bit for bit;
 * the parameters after STEPS steps on R ranks, and on one device over the whole batch, are
 * each within a bound derived from the float64 reference (reference_train), and within the
 * sum of both bounds of each other; the loss falls.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUTS 16
#define HIDDEN 32
#define OUTPUTS 8
#define ROWS 8 /* of the batch, per rank */
#define STEPS 8
#define LEARNING_RATE 0.25f /* 2^-2: lr * gradient is exact in f32 */
#define ONE_DEVICE_RANKS 4  /* ranks on the device when only one runs the step */

/* The parameters, flat: W1 [INPUTS, HIDDEN], b1 [HIDDEN], W2 [HIDDEN, OUTPUTS], b2 [OUTPUTS]. */
enum { P_W1, P_B1, P_W2, P_B2, PARAM_COUNT };
#define W1_SIZE (INPUTS * HIDDEN)
#define W2_SIZE (HIDDEN * OUTPUTS)
#define PARAMS (W1_SIZE + HIDDEN + W2_SIZE + OUTPUTS)
static const size_t param_offset[PARAM_COUNT] = {0, W1_SIZE, W1_SIZE + HIDDEN,
                                                 W1_SIZE + HIDDEN + W2_SIZE};
static const size_t param_size[PARAM_COUNT] = {W1_SIZE, HIDDEN, W2_SIZE, OUTPUTS};

/* A rank's tensors: the activations and their gradients, and constants of shape [1]; */
enum { X, T, H, Y, D, SQ, SSE, DY, DH, MASK, DZ, ZERO, SCALE, LR };
/* then per parameter: this step's value and the next step's (the ops' rules do not say
 * that an output may be an input), the gradient (then its mean over the ranks), lr times
 * that mean. */
enum {
  W1 = LR + 1,
  B1,
  W2,
  B2,
  W1_NEXT,
  B1_NEXT,
  W2_NEXT,
  B2_NEXT,
  G_W1,
  G_B1,
  G_W2,
  G_B2,
  S_W1,
  S_B1,
  S_W2,
  S_B2,
  TENSOR_COUNT
};

/* A dimension of -1 stands for the rank's rows. */
typedef struct tensor_spec {
  phx_dtype dtype;
  size_t rank;
  int64_t dims[2];
} tensor_spec;

static const tensor_spec specs[TENSOR_COUNT] = {
    [X] = {PHX_DTYPE_F32, 2, {-1, INPUTS}},
    [T] = {PHX_DTYPE_F32, 2, {-1, OUTPUTS}},
    [H] = {PHX_DTYPE_F32, 2, {-1, HIDDEN}},
    [Y] = {PHX_DTYPE_F32, 2, {-1, OUTPUTS}},
    [D] = {PHX_DTYPE_F32, 2, {-1, OUTPUTS}},
    [SQ] = {PHX_DTYPE_F32, 2, {-1, OUTPUTS}},
    [SSE] = {PHX_DTYPE_F32, 0, {0, 0}},
    [DY] = {PHX_DTYPE_F32, 2, {-1, OUTPUTS}},
    [DH] = {PHX_DTYPE_F32, 2, {-1, HIDDEN}},
    [MASK] = {PHX_DTYPE_U8, 2, {-1, HIDDEN}},
    [DZ] = {PHX_DTYPE_F32, 2, {-1, HIDDEN}},
    [ZERO] = {PHX_DTYPE_F32, 1, {1, 0}},
    [SCALE] = {PHX_DTYPE_F32, 1, {1, 0}},
    [LR] = {PHX_DTYPE_F32, 1, {1, 0}},
#define PARAM_SPECS(w1, b1, w2, b2)                                                    \
  [w1] = {PHX_DTYPE_F32, 2, {INPUTS, HIDDEN}}, [b1] = {PHX_DTYPE_F32, 1, {HIDDEN, 0}}, \
  [w2] = {PHX_DTYPE_F32, 2, {HIDDEN, OUTPUTS}}, [b2] = {PHX_DTYPE_F32, 1, {OUTPUTS, 0}}
    PARAM_SPECS(W1, B1, W2, B2),
    PARAM_SPECS(W1_NEXT, B1_NEXT, W2_NEXT, B2_NEXT),
    PARAM_SPECS(G_W1, G_B1, G_W2, G_B2),
    PARAM_SPECS(S_W1, S_B1, S_W2, S_B2),
};

/* One op of a step: tensor indices of a rank; NONE marks an absent input. */
enum { NONE = -1 };
typedef struct step_op {
  phx_op_id op;
  const void* params;
  int inputs[3];
  int output;
} step_op;

static const phx_matmul_params relu_params = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};
static const phx_matmul_params a_transposed = {sizeof(phx_matmul_params), 1, 0,
                                               PHX_ACTIVATION_NONE};
static const phx_matmul_params b_transposed = {sizeof(phx_matmul_params), 0, 1,
                                               PHX_ACTIVATION_NONE};
static const phx_reduce_params all_axes = {sizeof(phx_reduce_params), 0, 0};
static const phx_reduce_params over_rows = {sizeof(phx_reduce_params), 1, 0};

/* The forward and backward pass of one rank, on its rows. The transposes are matmul's
 * flags (transpose_a, transpose_b), which read the operand as it is stored: no transposed
 * copy (PHX_OP_TRANSPOSE) is made. */
static const step_op step_ops[] = {
    /* h = relu(x W1 + b1) */
    {PHX_OP_MATMUL, &relu_params, {X, W1, B1}, H},
    /* y = h W2 + b2 */
    {PHX_OP_MATMUL, NULL, {H, W2, B2}, Y},
    /* d = y - t; the loss's sum of d^2 over these rows (the host divides) */
    {PHX_OP_SUB, NULL, {Y, T, NONE}, D},
    {PHX_OP_MUL, NULL, {D, D, NONE}, SQ},
    {PHX_OP_REDUCE_SUM, &all_axes, {SQ, NONE, NONE}, SSE},
    /* dL/dy = 2 d / (rows * OUTPUTS): the derivative of these rows' mean */
    {PHX_OP_MUL, NULL, {D, SCALE, NONE}, DY},
    /* dL/dW2 = h^T dy, dL/db2 = dy summed over the rows */
    {PHX_OP_MATMUL, &a_transposed, {H, DY, NONE}, G_W2},
    {PHX_OP_REDUCE_SUM, &over_rows, {DY, NONE, NONE}, G_B2},
    /* dL/dh = dy W2^T */
    {PHX_OP_MATMUL, &b_transposed, {DY, W2, NONE}, DH},
    /* dL/dz = dL/dh where h > 0 (relu's derivative), else 0 */
    {PHX_OP_GREATER, NULL, {H, ZERO, NONE}, MASK},
    {PHX_OP_WHERE, NULL, {MASK, DH, ZERO}, DZ},
    /* dL/dW1 = x^T dz, dL/db1 = dz summed over the rows */
    {PHX_OP_MATMUL, &a_transposed, {X, DZ, NONE}, G_W1},
    {PHX_OP_REDUCE_SUM, &over_rows, {DZ, NONE, NONE}, G_B1},
};

/* SGD, after the gradients' all-reduce: W_next = W - lr * mean gradient. */
static const step_op update_ops[] = {
    {PHX_OP_MUL, NULL, {G_W1, LR, NONE}, S_W1}, {PHX_OP_SUB, NULL, {W1, S_W1, NONE}, W1_NEXT},
    {PHX_OP_MUL, NULL, {G_B1, LR, NONE}, S_B1}, {PHX_OP_SUB, NULL, {B1, S_B1, NONE}, B1_NEXT},
    {PHX_OP_MUL, NULL, {G_W2, LR, NONE}, S_W2}, {PHX_OP_SUB, NULL, {W2, S_W2, NONE}, W2_NEXT},
    {PHX_OP_MUL, NULL, {G_B2, LR, NONE}, S_B2}, {PHX_OP_SUB, NULL, {B2, S_B2, NONE}, B2_NEXT},
};

/* What a device must run, for the first input's dtype, to be a rank. */
static const struct {
  phx_op_id op;
  phx_dtype dtype;
} needed[] = {{PHX_OP_MATMUL, PHX_DTYPE_F32},  {PHX_OP_SUB, PHX_DTYPE_F32},
              {PHX_OP_MUL, PHX_DTYPE_F32},     {PHX_OP_REDUCE_SUM, PHX_DTYPE_F32},
              {PHX_OP_GREATER, PHX_DTYPE_F32}, {PHX_OP_WHERE, PHX_DTYPE_U8}};

/* The whole batch (up to the largest rank count) and the initial parameters. */
static float *batch_x, *batch_t;
static float initial[PARAMS];

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "data_parallel_mlp: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A fixed pseudo-random sequence in [-scale, scale), the same on every run. */
static void fill(float* values, size_t count, float scale, uint32_t* state) {
  for (size_t i = 0; i < count; ++i) {
    *state = *state * 1664525u + 1013904223u;
    values[i] = scale * ((float)(*state >> 8) / (float)(1u << 23) - 1.0f);
  }
}

/* The tensor an index names at step s: the two parameter sets swap roles every step. */
static int at_step(int index, int s) {
  if (s % 2 == 0 || index < W1 || index > B2_NEXT) return index;
  return index < W1_NEXT ? index + PARAM_COUNT : index - PARAM_COUNT;
}

static phx_status run_op(phx_stream stream, phx_tensor* t, const step_op* op, int s) {
  phx_tensor inputs[3] = {NULL, NULL, NULL};
  size_t count = 0;
  for (; count < 3 && op->inputs[count] != NONE; ++count)
    inputs[count] = t[at_step(op->inputs[count], s)];
  const phx_tensor output = t[at_step(op->output, s)];
  const phx_op_desc desc = {sizeof(phx_op_desc), op->op, op->params, inputs, count, &output, 1};
  return phx_op_run(stream, &desc, NULL);
}

/* A rank's tensors on device, with its rows of the batch (from row first) and the
 * initial parameters uploaded. */
static int make_rank(phx_context context, size_t device, size_t first, size_t rows,
                     phx_tensor t[TENSOR_COUNT]) {
  for (int i = 0; i < TENSOR_COUNT; ++i) {
    int64_t dims[2];
    for (int k = 0; k < 2; ++k) dims[k] = specs[i].dims[k] < 0 ? (int64_t)rows : specs[i].dims[k];
    if (failed("phx_tensor_create",
               phx_tensor_create(context, device, specs[i].dtype, specs[i].rank, dims, &t[i])))
      return 1;
  }
  const float zero = 0.0f, lr = LEARNING_RATE;
  const float scale = 2.0f / (float)(rows * OUTPUTS); /* d(mean of d^2)/dd over these rows */
  phx_status s = phx_tensor_upload(t[X], 0, batch_x + first * INPUTS, rows * INPUTS * 4);
  if (s == PHX_STATUS_OK)
    s = phx_tensor_upload(t[T], 0, batch_t + first * OUTPUTS, rows * OUTPUTS * 4);
  if (s == PHX_STATUS_OK) s = phx_tensor_upload(t[ZERO], 0, &zero, 4);
  if (s == PHX_STATUS_OK) s = phx_tensor_upload(t[SCALE], 0, &scale, 4);
  if (s == PHX_STATUS_OK) s = phx_tensor_upload(t[LR], 0, &lr, 4);
  for (int p = 0; p < PARAM_COUNT && s == PHX_STATUS_OK; ++p)
    s = phx_tensor_upload(t[W1 + p], 0, initial + param_offset[p], param_size[p] * 4);
  return failed("phx_tensor_upload", s);
}

/* Trains STEPS steps on ranks ranks, rank r on devices[r] with the batch's rows
 * r * rows .. r * rows + rows - 1, one thread driving them all. Writes the loss before each step to
 * losses and rank 0's final parameters to out; 0 when every call succeeded and the ranks agree bit
 * for bit. */
static int train(phx_context context, const size_t* devices, size_t ranks, size_t rows,
                 double losses[STEPS], float out[PARAMS]) {
  phx_comm comm = NULL;
  phx_tensor(*t)[TENSOR_COUNT] = calloc(ranks, sizeof *t);
  phx_stream* streams = calloc(ranks, sizeof *streams);
  float* sse = calloc(ranks * STEPS, sizeof *sse); /* each rank's sum of d^2, per step */
  int result = 1;
  if (!t || !streams || !sse) {
    fprintf(stderr, "data_parallel_mlp: out of host memory\n");
    goto cleanup;
  }
  if (failed("phx_comm_create", phx_comm_create(context, devices, ranks, NULL, &comm)))
    goto cleanup;
  for (size_t r = 0; r < ranks; ++r) {
    if (failed("phx_stream_create", phx_stream_create(context, devices[r], &streams[r])) ||
        make_rank(context, devices[r], r * rows, rows, t[r]))
      goto cleanup;
  }

  for (int s = 0; s < STEPS; ++s) {
    for (size_t r = 0; r < ranks; ++r) {
      for (size_t i = 0; i < sizeof step_ops / sizeof step_ops[0]; ++i)
        if (failed("phx_op_run", run_op(streams[r], t[r], &step_ops[i], s))) goto cleanup;
      if (failed("phx_tensor_download_async",
                 phx_tensor_download_async(streams[r], t[r][SSE], 0, &sse[s * ranks + r], 4, NULL)))
        goto cleanup;
    }
    /* Each call queues one rank's part: the ranks' gradients meet once all are queued. */
    for (int g = G_W1; g <= G_B2; ++g) {
      for (size_t r = 0; r < ranks; ++r) {
        if (failed("phx_all_reduce",
                   phx_all_reduce(comm, r, streams[r], t[r][g], t[r][g], PHX_REDUCE_MEAN, NULL)))
          goto cleanup;
      }
    }
    for (size_t r = 0; r < ranks; ++r) {
      for (size_t i = 0; i < sizeof update_ops / sizeof update_ops[0]; ++i)
        if (failed("phx_op_run", run_op(streams[r], t[r], &update_ops[i], s))) goto cleanup;
    }
  }
  for (size_t r = 0; r < ranks; ++r)
    if (failed("phx_stream_synchronize", phx_stream_synchronize(streams[r]))) goto cleanup;

  for (int s = 0; s < STEPS; ++s) {
    double sum = 0.0;
    for (size_t r = 0; r < ranks; ++r) sum += sse[s * ranks + r];
    losses[s] = sum / (double)(ranks * rows * OUTPUTS);
  }
  for (size_t r = 0; r < ranks; ++r) {
    float copy[PARAMS];
    float* into = r == 0 ? out : copy;
    for (int p = 0; p < PARAM_COUNT; ++p) {
      if (failed("phx_tensor_download",
                 phx_tensor_download(t[r][at_step(W1 + p, STEPS)], 0, into + param_offset[p],
                                     param_size[p] * 4)))
        goto cleanup;
    }
    if (r > 0 && memcmp(copy, out, sizeof copy) != 0) {
      fprintf(stderr, "data_parallel_mlp: rank %zu's parameters differ from rank 0's\n", r);
      goto cleanup;
    }
  }
  result = 0;

cleanup:
  /* Handles that were never created stay NULL and are not destroyed. The communicator
   * goes first: after a failed call, a collective some ranks never joined then fails at
   * once, instead of holding the streams until its timeout. */
  if (comm && failed("phx_comm_destroy", phx_comm_destroy(comm))) result = 1;
  for (size_t r = 0; streams && r < ranks; ++r)
    if (streams[r] && failed("phx_stream_destroy", phx_stream_destroy(streams[r]))) result = 1;
  for (size_t r = 0; t && r < ranks; ++r)
    for (int i = 0; i < TENSOR_COUNT; ++i)
      if (t[r][i] && failed("phx_tensor_destroy", phx_tensor_destroy(t[r][i]))) result = 1;
  free(sse);
  free(streams);
  free(t);
  return result;
}

/* The relative error of a product the device adds by rounding f32 matmul inputs, from
 * its property "matmul_precision": bf16 rounds each input by up to 2^-9 (a product by
 * about 2^-8); bf16x3 leaves about 3 * 2^-16 of a product. */
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
 * The same steps in float64 over the whole batch (rows rows), and a bound on how far a
 * run in f32 over ranks ranks, on devices whose products are off by up to rho, can be
 * from them. A first-order forward error analysis, with u = 2^-24:
 * - a sum of n products (and a bias) whose magnitudes add up to S strays by
 *   (rho + 2 (n + 1) u) S, plus what the errors e of its operands carry: sum |a| e_b +
 *   e_a |b|. The batch sums of the gradients add n = rows + ranks terms: each rank's
 *   rows, then the all-reduce's f32 sum over the ranks and its division, rounded once.
 * - relu passes its input's error on; its derivative (h > 0) may differ from the
 *   reference's where |z| is within z's error: the whole |dL/dh| then counts as error.
 * - the elementwise ops round once each (u of their result).
 * - the parameters' errors accumulate over the steps: bound[i] after the last step.
 */
static void reference_train(double rho, size_t ranks, size_t rows, double params[PARAMS],
                            double bound[PARAMS]) {
  const double u = 0x1p-24, lr = LEARNING_RATE, scale = 2.0 / (double)(rows * OUTPUTS);
  const double sum_rows = 2.0 * (double)(rows + ranks + 1) * u;
  for (size_t i = 0; i < PARAMS; ++i) params[i] = initial[i], bound[i] = 0.0;
  double *w1 = params, *b1 = params + param_offset[P_B1];
  double *w2 = params + param_offset[P_W2], *b2 = params + param_offset[P_B2];
  double *ew1 = bound, *eb1 = bound + param_offset[P_B1];
  double *ew2 = bound + param_offset[P_W2], *eb2 = bound + param_offset[P_B2];

  for (int s = 0; s < STEPS; ++s) {
    /* Per gradient: the exact value, the magnitude of its terms, what errors carry. */
    double grad[PARAMS] = {0}, size[PARAMS] = {0}, carried[PARAMS] = {0};
    for (size_t n = 0; n < rows; ++n) {
      const float* x = batch_x + n * INPUTS;
      double z[HIDDEN], ez[HIDDEN], y[OUTPUTS], ey[OUTPUTS], dy[OUTPUTS], edy[OUTPUTS];
      for (int j = 0; j < HIDDEN; ++j) {
        double sum = b1[j], mag = fabs(b1[j]), e = eb1[j];
        for (int i = 0; i < INPUTS; ++i) {
          sum += x[i] * w1[i * HIDDEN + j];
          mag += fabs(x[i] * w1[i * HIDDEN + j]);
          e += fabs(x[i]) * ew1[i * HIDDEN + j];
        }
        z[j] = sum;
        ez[j] = (rho + 2.0 * (INPUTS + 1) * u) * mag + e;
      }
      for (int k = 0; k < OUTPUTS; ++k) {
        double sum = b2[k], mag = fabs(b2[k]), e = eb2[k];
        for (int j = 0; j < HIDDEN; ++j) {
          const double h = z[j] > 0.0 ? z[j] : 0.0;
          sum += h * w2[j * OUTPUTS + k];
          mag += fabs(h * w2[j * OUTPUTS + k]);
          e += ez[j] * fabs(w2[j * OUTPUTS + k]) + h * ew2[j * OUTPUTS + k];
        }
        y[k] = sum;
        ey[k] = (rho + 2.0 * (HIDDEN + 1) * u) * mag + e;
        const double d = y[k] - batch_t[n * OUTPUTS + k];
        /* d = y - t, then scale * d: two roundings, and scale's own. */
        dy[k] = scale * d;
        edy[k] = scale * (ey[k] + 3.0 * u * fabs(d));
      }
      for (int j = 0; j < HIDDEN; ++j) {
        const double h = z[j] > 0.0 ? z[j] : 0.0;
        double dh = 0.0, mag = 0.0, e = 0.0;
        for (int k = 0; k < OUTPUTS; ++k) {
          const size_t i2 = param_offset[P_W2] + (size_t)j * OUTPUTS + k;
          grad[i2] += h * dy[k];
          size[i2] += fabs(h * dy[k]);
          carried[i2] += ez[j] * fabs(dy[k]) + h * edy[k];
          dh += dy[k] * w2[j * OUTPUTS + k];
          mag += fabs(dy[k] * w2[j * OUTPUTS + k]);
          e += edy[k] * fabs(w2[j * OUTPUTS + k]) + fabs(dy[k]) * ew2[j * OUTPUTS + k];
        }
        const double edh = (rho + 2.0 * (OUTPUTS + 1) * u) * mag + e;
        const int unsure = fabs(z[j]) <= ez[j];
        const double dz = z[j] > 0.0 ? dh : 0.0;
        const double mag_dz = unsure || z[j] > 0.0 ? fabs(dh) : 0.0;
        const double edz = unsure ? fabs(dh) + edh : z[j] > 0.0 ? edh : 0.0;
        for (int i = 0; i < INPUTS; ++i) {
          const size_t i1 = (size_t)i * HIDDEN + j;
          grad[i1] += x[i] * dz;
          size[i1] += fabs(x[i]) * mag_dz;
          carried[i1] += fabs(x[i]) * edz;
        }
        grad[param_offset[P_B1] + j] += dz;
        size[param_offset[P_B1] + j] += mag_dz;
        carried[param_offset[P_B1] + j] += edz;
      }
      for (int k = 0; k < OUTPUTS; ++k) {
        grad[param_offset[P_B2] + k] += dy[k];
        size[param_offset[P_B2] + k] += fabs(dy[k]);
        carried[param_offset[P_B2] + k] += edy[k];
      }
    }
    for (size_t i = 0; i < PARAMS; ++i) {
      /* The weight gradients are matmuls (rho); the bias gradients are f32 sums. */
      const int weight =
          i < param_offset[P_B1] || (i >= param_offset[P_W2] && i < param_offset[P_B2]);
      const double grad_error = ((weight ? rho : 0.0) + sum_rows) * size[i] + carried[i];
      params[i] -= lr * grad[i];
      /* lr is a power of two: lr * g is exact; the subtraction rounds once. */
      bound[i] += lr * grad_error + u * fabs(params[i]);
    }
  }
}

/* The largest ratio of |a - b| to its tolerance (at most 1 passes; NaN fails). */
static double worst_ratio(const float* a, const double* b, const double* tolerance) {
  double worst = 0.0;
  for (size_t i = 0; i < PARAMS; ++i) {
    const double ratio = fabs((double)a[i] - b[i]) / (tolerance[i] + 1e-30);
    if (isnan(ratio) || ratio > worst) worst = ratio;
  }
  return worst;
}

int main(void) {
  phx_context context = NULL;
  size_t* devices = NULL;
  int exit_code = 1;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;

  size_t device_count = 0, ranks = 0;
  if (failed("phx_device_count", phx_device_count(context, &device_count))) goto done;
  devices =
      calloc(device_count < ONE_DEVICE_RANKS ? ONE_DEVICE_RANKS : device_count, sizeof *devices);
  if (!devices) goto done;
  for (size_t d = 0; d < device_count; ++d) {
    int runs_all = 1;
    for (size_t i = 0; i < sizeof needed / sizeof needed[0] && runs_all; ++i) {
      if (failed("phx_device_supports",
                 phx_device_supports(context, d, needed[i].op, needed[i].dtype, &runs_all)))
        goto done;
    }
    if (runs_all) devices[ranks++] = d;
  }
  if (ranks == 0) {
    fprintf(stderr, "data_parallel_mlp: no device runs the step's ops on f32\n");
    goto done;
  }
  if (ranks == 1) {
    while (ranks < ONE_DEVICE_RANKS) devices[ranks++] = devices[0];
  }

  const size_t batch = ranks * ROWS;
  batch_x = malloc(batch * INPUTS * sizeof *batch_x);
  batch_t = malloc(batch * OUTPUTS * sizeof *batch_t);
  if (!batch_x || !batch_t) goto done;
  uint32_t state = 11;
  fill(batch_x, batch * INPUTS, 1.0f, &state);
  fill(batch_t, batch * OUTPUTS, 1.0f, &state);
  /* Scaled by about 1 / sqrt(fan-in), so that h and y stay near the targets' size. */
  fill(initial + param_offset[P_W1], param_size[P_W1], 0.25f, &state);
  fill(initial + param_offset[P_B1], param_size[P_B1], 0.1f, &state);
  fill(initial + param_offset[P_W2], param_size[P_W2], 0.18f, &state);
  fill(initial + param_offset[P_B2], param_size[P_B2], 0.1f, &state);

  printf("data parallel: %zu ranks of %d rows (batch %zu) on devices", ranks, ROWS, batch);
  double rho_ranks = 0.0;
  for (size_t r = 0; r < ranks; ++r) {
    const double rho = input_rounding(context, devices[r]);
    if (rho > rho_ranks) rho_ranks = rho;
    printf(" %zu", devices[r]);
  }
  printf("; one device: %zu\n", devices[0]);

  double losses[STEPS], one_losses[STEPS];
  float parallel[PARAMS], one[PARAMS];
  if (train(context, devices, ranks, ROWS, losses, parallel) ||
      train(context, devices, 1, batch, one_losses, one))
    goto done;
  for (int s = 0; s < STEPS; ++s)
    printf("step %d: loss %.6f (one device %.6f)\n", s, losses[s], one_losses[s]);

  static double reference[PARAMS], bound_parallel[PARAMS], bound_one[PARAMS], both[PARAMS];
  reference_train(rho_ranks, ranks, batch, reference, bound_parallel);
  reference_train(input_rounding(context, devices[0]), 1, batch, reference, bound_one);
  double one_as_double[PARAMS];
  for (size_t i = 0; i < PARAMS; ++i) {
    both[i] = bound_parallel[i] + bound_one[i];
    one_as_double[i] = one[i];
  }
  const double vs_reference = worst_ratio(parallel, reference, bound_parallel);
  const double one_vs_reference = worst_ratio(one, reference, bound_one);
  const double vs_one = worst_ratio(parallel, one_as_double, both);
  printf("parameters after %d steps, largest error as a fraction of its bound:\n", STEPS);
  printf(
      "  %zu ranks vs float64: %.3g; one device vs float64: %.3g; %zu ranks vs one device: "
      "%.3g\n",
      ranks, vs_reference, one_vs_reference, ranks, vs_one);
  if (!(vs_reference <= 1.0 && one_vs_reference <= 1.0 && vs_one <= 1.0)) {
    fprintf(stderr, "data_parallel_mlp: parameters outside their bound\n");
    goto done;
  }
  if (!(losses[STEPS - 1] < losses[0])) {
    fprintf(stderr, "data_parallel_mlp: the loss did not fall\n");
    goto done;
  }
  printf(
      "data_parallel_mlp verified: %zu ranks match one device; the loss fell from %.4f to "
      "%.4f\n",
      ranks, losses[0], losses[STEPS - 1]);
  exit_code = 0;

done:
  free(batch_x);
  free(batch_t);
  free(devices);
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
