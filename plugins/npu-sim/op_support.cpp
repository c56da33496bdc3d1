#include "op_support.h"

#include "phx/kernels/ops.h"

namespace phx::npu_sim {

bool device_runs(const DeviceFigures& f, phx_op_id op, phx_dtype dtype) {
  // Compared as an int: phx_dtype's range ends at 7, so clang finds ">= 8" always false.
  const int value = dtype;
  if (value <= PHX_DTYPE_INVALID || value >= PHX_DTYPE_COUNT) return false;
  if ((supported_dtypes(*f.profile, op) & PHX_DTYPE_BIT(dtype)) == 0) return false;
  if (!kernels::op_supported(op, dtype)) return false;
  const bool mac_op = op == PHX_OP_MATMUL || op == PHX_OP_QMATMUL || op == PHX_OP_QCONV2D ||
                      op == PHX_OP_CONV2D || op == PHX_OP_CONV_TRANSPOSE2D ||
                      op == PHX_OP_ATTENTION;
  if (mac_op && dtype == PHX_DTYPE_I16) return f.int16_macs_per_cycle > 0;
  if (mac_op && dtype == PHX_DTYPE_F16) return f.fp16_macs_per_cycle > 0;
  return true;
}

}  // namespace phx::npu_sim
