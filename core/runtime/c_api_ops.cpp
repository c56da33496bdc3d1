// The C API of ops: check the descriptor and its tensors, then submit.
#include <phynexus/phynexus.h>

#include "abi_structs.h"
#include "context.h"
#include "errors.h"
#include "fallback.h"
#include "op_rules.h"

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

    const Device& device = *stream.device;
    if (needs_fallback(stream, op, inputs[0]->dtype)) {
      uint64_t ticket = run_on_fallback_device(stream, op, params, inputs, desc->input_count,
                                               outputs, desc->output_count);
      if (out_ticket != nullptr) *out_ticket = ticket;
      return;
    }
    if (!device.supported[op][inputs[0]->dtype])
      fail(PHX_STATUS_UNSUPPORTED, "device " + std::to_string(device.index) + " (" + device.name +
                                       ") does not implement " + phx_op_name(op) + " for " +
                                       phx_dtype_name(inputs[0]->dtype));
    uint64_t ticket =
        stream.submit(op, params, inputs, desc->input_count, outputs, desc->output_count);
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

}  // extern "C"
