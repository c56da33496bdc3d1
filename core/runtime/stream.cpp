#include <algorithm>
#include <chrono>

#include "context.h"
#include "errors.h"
#include "op_rules.h"

namespace phx {

void Stream::wait(uint64_t ticket) {
  std::lock_guard lock(mutex);
  if (ticket != UINT64_MAX && ticket <= drained_through) return;
  const uint64_t plugin_ticket = ticket == UINT64_MAX ? ticket : ticket - ticket_offset;
  auto& plugin = *device->plugin;
  plugin.call("stream_wait", device->index, [&] {
    return plugin.api().stream_wait(plugin.instance(), plugin_stream, plugin_ticket);
  });
}

uint64_t Stream::completed() {
  std::lock_guard lock(mutex);
  auto& plugin = *device->plugin;
  uint64_t done = 0;
  plugin.call("stream_completed", device->index, [&] {
    return plugin.api().stream_completed(plugin.instance(), plugin_stream, &done);
  });
  return std::max(drained_through, done + ticket_offset);
}

uint64_t Stream::issue_finished_ticket() {
  std::lock_guard lock(mutex);
  ++ticket_offset;
  drained_through = ++last_ticket;
  return last_ticket;
}

uint64_t Stream::submit(phx_op_id op, const void* params, const Tensor* const* inputs,
                        size_t input_count, const Tensor* const* outputs, size_t output_count,
                        const char* node) {
  phx_plugin_tensor in_views[kMaxOpInputs], out_views[kMaxOpOutputs];
  for (size_t i = 0; i < input_count; ++i) {
    if (inputs[i] != nullptr) {
      in_views[i] = inputs[i]->plugin_view();
    } else {
      in_views[i] = {};
      in_views[i].struct_size = sizeof in_views[i];
    }
  }
  for (size_t i = 0; i < output_count; ++i) out_views[i] = outputs[i]->plugin_view();

  phx_plugin_op call{};
  call.struct_size = sizeof call;
  call.op = op;
  call.params = params;
  call.inputs = in_views;
  call.input_count = input_count;
  call.outputs = out_views;
  call.output_count = output_count;

  ProfileEntry* record = nullptr;
  if (profiling) {
    record = &records.emplace_back();
    record->op = op;
    record->signature = op_signature(inputs, input_count, outputs, output_count);
    if (node != nullptr) record->node = node;
    record->plugin.struct_size = sizeof record->plugin;
    call.profile = &record->plugin;
  }

  std::lock_guard lock(mutex);
  auto& plugin = *device->plugin;
  // The clock only for a record: a tiny op's whole dispatch costs under a microsecond.
  const auto start = record != nullptr ? std::chrono::steady_clock::now()
                                       : std::chrono::steady_clock::time_point{};
  uint64_t ticket = 0;
  try {
    plugin.call("stream_submit", device->index, [&] {
      return plugin.api().stream_submit(plugin.instance(), plugin_stream, &call, &ticket);
    });
  } catch (...) {
    if (record != nullptr) records.pop_back();
    throw;
  }
  const uint64_t expected = last_ticket - ticket_offset + 1;
  if (ticket != expected)
    fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": stream_submit returned ticket " +
                                      std::to_string(ticket) + ", expected " +
                                      std::to_string(expected));
  last_ticket = ticket + ticket_offset;
  if (record != nullptr) {
    record->ticket = last_ticket;
    record->host_time_ns =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
  }
  return last_ticket;
}

}  // namespace phx
