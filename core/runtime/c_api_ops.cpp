// The C API of ops: check the descriptor and its tensors, then submit.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include "context.h"
#include "errors.h"
#include "fallback.h"
#include "op_rules.h"
#include "op_support.h"

using namespace phx;

namespace {

// The tensor behind handle, checked to live on the stream's device in its context.
const Tensor* resolve(phx_tensor handle, const Stream& stream, const char* role, size_t index) {
  if (handle == nullptr) return nullptr;
  const Tensor& tensor = lookup(handle);
  std::string which = std::string(role) + " " + std::to_string(index);
  if (tensor.context != stream.context)
    fail(PHX_STATUS_INVALID_ARGUMENT, which + " belongs to another context");
  if (tensor.device != stream.device)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         which + " lives on device " + std::to_string(tensor.device->index) +
             ", the stream on device " + std::to_string(stream.device->index));
  return &tensor;
}

// The variant a phx_op_variant describes, checked against the op's rules; params holds
// its normalized parameters. Throws INVALID_ARGUMENT for a malformed description; a
// well-formed variant that the rules refuse is returned with rules_refuse set.
OpVariant read_variant(const phx_op_variant* user, OpParams& params, bool& rules_refuse) {
  require(user != nullptr, "variant is null");
  check_struct_size(user->struct_size, "variant");
  if (user->struct_size < offsetof(phx_op_variant, output_count) + sizeof(size_t))
    fail(PHX_STATUS_INVALID_ARGUMENT, "variant.struct_size is too small for an op variant");
  if (enum_value(user->op) <= PHX_OP_INVALID || enum_value(user->op) >= PHX_OP_COUNT)
    fail(PHX_STATUS_INVALID_ARGUMENT, "unknown op id " + std::to_string(enum_value(user->op)));
  if (user->input_count < 1 || user->input_count > kMaxOpInputs || user->output_count < 1 ||
      user->output_count > kMaxOpOutputs)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         std::string(phx_op_name(user->op)) + ": " + std::to_string(user->input_count) +
             " inputs and " + std::to_string(user->output_count) + " outputs is not a valid count");
  require(user->input_dtypes != nullptr, "variant.input_dtypes is null");
  require(user->output_dtypes != nullptr, "variant.output_dtypes is null");
  OpVariant variant;
  variant.op = user->op;
  variant.input_count = user->input_count;
  variant.output_count = user->output_count;
  // By reference: the caller's value is read as an int until it is known to be a dtype.
  auto read = [](const phx_dtype& dtype, bool may_be_absent, const std::string& what) {
    const int value = enum_value(dtype);
    if ((value == PHX_DTYPE_INVALID && !may_be_absent) || value < PHX_DTYPE_INVALID ||
        value >= PHX_DTYPE_COUNT)
      fail(PHX_STATUS_INVALID_ARGUMENT, what + " has an unknown dtype " + std::to_string(value));
    return static_cast<phx_dtype>(value);
  };
  for (size_t i = 0; i < variant.input_count; ++i)
    variant.inputs[i] = read(user->input_dtypes[i], i > 0, "input " + std::to_string(i));
  for (size_t i = 0; i < variant.output_count; ++i)
    variant.outputs[i] = read(user->output_dtypes[i], false, "output " + std::to_string(i));
  // The parameters' validity is the caller's to know: a malformed struct is an error.
  // The default transpose depends on the input's rank, which a variant lacks; the
  // permutation decides no device's support.
  variant.params = normalize_params(variant.op, user->params, 0, params);
  try {
    check_variant(variant);
    rules_refuse = false;
  } catch (const Error&) {
    rules_refuse = true;
  }
  return variant;
}

}  // namespace

extern "C" {

PHX_API phx_status phx_op_run(phx_stream handle, const phx_op_desc* desc, uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    require(desc != nullptr, "desc is null");
    check_struct_size(desc->struct_size, "desc");
    if (desc->struct_size < offsetof(phx_op_desc, output_count) + sizeof(size_t))
      fail(PHX_STATUS_INVALID_ARGUMENT, "desc.struct_size is too small for an op descriptor");
    if (enum_value(desc->op) <= PHX_OP_INVALID || enum_value(desc->op) >= PHX_OP_COUNT)
      fail(PHX_STATUS_INVALID_ARGUMENT, "unknown op id " + std::to_string(enum_value(desc->op)));
    const phx_op_id op = desc->op;
    if (desc->input_count > kMaxOpInputs || desc->output_count < 1 ||
        desc->output_count > kMaxOpOutputs)
      fail(PHX_STATUS_INVALID_ARGUMENT, std::string(phx_op_name(op)) + ": " +
                                            std::to_string(desc->input_count) + " inputs and " +
                                            std::to_string(desc->output_count) +
                                            " outputs is not a valid count");
    require(desc->inputs != nullptr || desc->input_count == 0, "desc.inputs is null");
    require(desc->outputs != nullptr, "desc.outputs is null");

    const Tensor* inputs[kMaxOpInputs] = {};
    for (size_t i = 0; i < desc->input_count; ++i)
      inputs[i] = resolve(desc->inputs[i], stream, "input", i);
    const Tensor* outputs[kMaxOpOutputs] = {};
    for (size_t i = 0; i < desc->output_count; ++i)
      outputs[i] = resolve(desc->outputs[i], stream, "output", i);

    OpParams storage;
    const void* params =
        normalize_params(op, desc->params, inputs[0] != nullptr ? inputs[0]->rank : 0, storage);
    check_op(op, params, inputs, desc->input_count, outputs, desc->output_count);

    const OpVariant variant =
        variant_of(op, params, inputs, desc->input_count, outputs, desc->output_count);
    Device& device = *stream.device;
    const bool runs = device_runs(device, variant);
    if (!runs && fallback_runs(stream, variant)) {
      uint64_t ticket = run_on_fallback_device(stream, op, params, inputs, desc->input_count,
                                               outputs, desc->output_count);
      if (out_ticket != nullptr) *out_ticket = ticket;
      return;
    }
    if (!runs)
      fail(PHX_STATUS_UNSUPPORTED, "device " + std::to_string(device.index) + " (" + device.name +
                                       ") does not implement " + variant_text(variant));
    uint64_t ticket =
        stream.submit(op, params, inputs, desc->input_count, outputs, desc->output_count);
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

PHX_API phx_status phx_device_supports_op(phx_context handle, size_t device_index,
                                          const phx_op_variant* user_variant, int* out_supported) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_supported, "out_supported");
    Device& device = context.device(device_index);
    OpParams params;
    bool rules_refuse = false;
    const OpVariant variant = read_variant(user_variant, params, rules_refuse);
    *out_supported = !rules_refuse && device_runs(device, variant) ? 1 : 0;
  });
}

}  // extern "C"
