#include "fallback.h"

#include <vector>

#include "errors.h"
#include "op_figures.h"
#include "op_rules.h"
#include "op_support.h"
#include "transfer.h"

namespace phx {
namespace {

// The temporary tensors and stream of one fallback, freed however the op ends.
class Scratch {
 public:
  explicit Scratch(Context& context) : context_(context) {}
  ~Scratch() {
    if (stream_ != nullptr) context_.destroy_stream(*stream_);
    for (Tensor* tensor : tensors_) context_.destroy_tensor(*tensor);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  Tensor& tensor_like(Device& device, const Tensor& like) {
    Tensor& t = context_.create_tensor(device, like.dtype, like.rank, like.shape);
    tensors_.push_back(&t);
    return t;
  }
  Stream& stream(Device& device) {
    stream_ = &context_.create_stream(device);
    stream_->internal = true;  // the trace shows the op once, on the stream it was run on
    return *stream_;
  }

 private:
  Context& context_;
  std::vector<Tensor*> tensors_;
  Stream* stream_ = nullptr;
};

void log_once(Device& device, Device& cpu, phx_op_id op, phx_dtype dtype, spdlog::logger& logger) {
  std::lock_guard lock(device.fallback_log_mutex);
  bool& logged = device.fallback_logged[op][dtype];
  if (logged) return;
  logged = true;
  logger.info("device {} ({}) does not implement {} for {}: it runs on device {} ({})",
              device.index, device.name, phx_op_name(op), phx_dtype_name(dtype), cpu.index,
              cpu.name);
}

}  // namespace

bool fallback_runs(const Stream& stream, const OpVariant& variant) {
  Device* cpu = stream.context->fallback_device;
  return cpu != nullptr && cpu != stream.device && device_runs(*cpu, variant);
}

uint64_t run_on_fallback_device(Stream& stream, phx_op_id op, const void* params,
                                const Tensor* const* inputs, size_t input_count,
                                const Tensor* const* outputs, size_t output_count) {
  Context& context = *stream.context;
  Device& cpu = *context.fallback_device;
  Device& device = *stream.device;
  log_once(device, cpu, op, inputs[0]->dtype, *context.logger);

  const uint64_t start = trace::now_ns();
  device.wait_for_streams();
  Scratch scratch(context);
  const Tensor* cpu_inputs[kMaxOpInputs] = {};
  for (size_t i = 0; i < input_count; ++i) {
    if (inputs[i] == nullptr) continue;
    Tensor& copy = scratch.tensor_like(cpu, *inputs[i]);
    copy_through_host(copy, *inputs[i]);
    cpu_inputs[i] = &copy;
  }
  const Tensor* cpu_outputs[kMaxOpOutputs] = {};
  for (size_t i = 0; i < output_count; ++i) cpu_outputs[i] = &scratch.tensor_like(cpu, *outputs[i]);
  Stream& cpu_stream = scratch.stream(cpu);
  cpu_stream.submit(op, params, cpu_inputs, input_count, cpu_outputs, output_count);
  cpu_stream.wait(UINT64_MAX);
  for (size_t i = 0; i < output_count; ++i) copy_through_host(*outputs[i], *cpu_outputs[i]);
  device.fallback_ops.fetch_add(1, std::memory_order_relaxed);
  const uint64_t ticket = stream.issue_finished_ticket();

  if (stream.keeps_records()) {
    ProfileEntry record;
    record.ticket = ticket;
    record.op = op;
    describe_operands(record, inputs, input_count, outputs, output_count);
    const OpCounts figures = op_figures(op, params, inputs, input_count, outputs, output_count);
    record.flops = figures.flops;
    record.bytes = figures.bytes;
    record.start_ns = start;
    record.host_time_ns = trace::now_ns() - start;
    record.plugin.struct_size = sizeof record.plugin;
    record.plugin.metrics[0] = {"fallback_to_cpu", 1.0};
    record.plugin.metric_count = 1;
    stream.add_finished_record(std::move(record));
  }
  return ticket;
}

}  // namespace phx
