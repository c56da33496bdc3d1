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
  ProfileEntry* const taken[1] = {record};
  return take_ticket("stream_submit", std::span(taken, record != nullptr ? 1 : 0),
                     [&](uint64_t* ticket) {
                       return device->plugin->api().stream_submit(device->plugin->instance(),
                                                                  plugin_stream, &call, ticket);
                     });
}

uint64_t Stream::run_executable(void* executable, const phx_plugin_tensor* values,
                                size_t value_count, size_t node_count,
                                const std::function<void(size_t, ProfileEntry&)>& describe_node) {
  std::vector<ProfileEntry*> taken;
  std::vector<phx_plugin_profile*> node_profiles;
  if (profiling) {
    for (size_t n = 0; n < node_count; ++n) {
      ProfileEntry& record = records.emplace_back();
      describe_node(n, record);
      record.plugin.struct_size = sizeof record.plugin;
      taken.push_back(&record);
      node_profiles.push_back(&record.plugin);
    }
  }
  return take_ticket("executable_run", taken, [&](uint64_t* ticket) {
    return device->plugin->api().executable_run(
        device->plugin->instance(), plugin_stream, executable, values, value_count,
        node_profiles.empty() ? nullptr : node_profiles.data(), ticket);
  });
}

template <typename Submit>
uint64_t Stream::take_ticket(const char* entry, std::span<ProfileEntry* const> taken,
                             Submit&& submit) {
  std::lock_guard lock(mutex);
  auto& plugin = *device->plugin;
  // The clock only for a record: a tiny op's whole dispatch costs under a microsecond.
  const auto start =
      taken.empty() ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
  uint64_t ticket = 0;
  try {
    plugin.call(entry, device->index, [&] { return submit(&ticket); });
  } catch (...) {
    for (size_t i = 0; i < taken.size(); ++i) records.pop_back();
    throw;
  }
  const uint64_t expected = last_ticket - ticket_offset + 1;
  if (ticket != expected)
    fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": " + entry + " returned ticket " +
                                      std::to_string(ticket) + ", expected " +
                                      std::to_string(expected));
  last_ticket = ticket + ticket_offset;
  const auto host_time_ns =
      taken.empty() ? uint64_t{0}
                    : static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  for (ProfileEntry* record : taken) {
    record->ticket = last_ticket;
    record->host_time_ns = host_time_ns / taken.size();
  }
  return last_ticket;
}

}  // namespace phx
