#include <algorithm>

#include "context.h"
#include "errors.h"
#include "op_figures.h"
#include "op_rules.h"

namespace phx {

namespace {
// Records a stream may hold unwritten while a trace is being written, before a submission
// waits for the oldest: the bound on a trace's memory when a program never waits.
constexpr size_t kMaxUnwrittenRecords = 1024;
}  // namespace

void Stream::wait(uint64_t ticket) {
  std::lock_guard lock(mutex);
  wait_locked(ticket);
}

void Stream::wait_locked(uint64_t ticket) {
  if (ticket == UINT64_MAX || ticket > drained_through) {
    const uint64_t plugin_ticket = ticket == UINT64_MAX ? ticket : ticket - ticket_offset;
    auto& plugin = *device->plugin;
    plugin.call("stream_wait", device->index, [&] {
      return plugin.api().stream_wait(plugin.instance(), plugin_stream, plugin_ticket);
    });
  }
  if (traced < records.size() || !run_spans.empty()) write_finished(ticket);
}

uint64_t Stream::completed() {
  std::lock_guard lock(mutex);
  auto& plugin = *device->plugin;
  uint64_t done = 0;
  plugin.call("stream_completed", device->index, [&] {
    return plugin.api().stream_completed(plugin.instance(), plugin_stream, &done);
  });
  done = std::max(drained_through, done + ticket_offset);
  if (traced < records.size() || !run_spans.empty()) write_finished(done);
  return done;
}

uint64_t Stream::issue_finished_ticket() {
  std::lock_guard lock(mutex);
  ++ticket_offset;
  drained_through = ++last_ticket;
  return last_ticket;
}

bool Stream::keeps_records() const { return profiling || (!internal && context->tracer.active()); }

void Stream::add_finished_record(ProfileEntry&& record) {
  std::lock_guard lock(mutex);
  records.push_back(std::move(record));
  write_finished(records.back().ticket);
}

void Stream::add_run_span(const trace::RunSpan& run) {
  std::lock_guard lock(mutex);
  run_spans.push_back(run);
}

void Stream::clear_records() {
  std::lock_guard lock(mutex);
  records.clear();
  traced = 0;
}

void Stream::write_finished(uint64_t done) {
  trace::Writer& tracer = context->tracer;
  // A run's span follows the records of its nodes, whose ticket it shares or precedes.
  auto write_runs_before = [&](uint64_t ticket) {
    while (!run_spans.empty() && run_spans.front().ticket < ticket) {
      if (tracer.active() && !internal) tracer.executable_run(*this, run_spans.front());
      run_spans.pop_front();
    }
  };
  while (traced < records.size() && records[traced].ticket <= done) {
    write_runs_before(records[traced].ticket);
    if (tracer.active() && !internal) tracer.op(*this, records[traced], simulated_end_ns);
    if (profiling) {
      ++traced;
    } else {
      records.pop_front();
    }
  }
  write_runs_before(done == UINT64_MAX ? done : done + 1);
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

  ProfileEntry entry;
  const bool keep = keeps_records();
  if (keep) {
    entry.op = op;
    entry.signature = op_signature(inputs, input_count, outputs, output_count);
    if (node != nullptr) entry.node = node;
    const OpFigures figures = op_figures(op, params, inputs, input_count, outputs, output_count);
    entry.flops = figures.flops;
    entry.bytes = figures.bytes;
  }
  ProfileEntry* const prepared[1] = {&entry};
  return take_ticket("stream_submit", std::span(prepared, keep ? 1 : 0),
                     [&](uint64_t* ticket, ProfileEntry* const* kept) {
                       if (keep) call.profile = &kept[0]->plugin;
                       return device->plugin->api().stream_submit(device->plugin->instance(),
                                                                  plugin_stream, &call, ticket);
                     });
}

uint64_t Stream::run_executable(void* executable, const phx_plugin_tensor* values,
                                size_t value_count, size_t node_count,
                                const std::function<void(size_t, ProfileEntry&)>& describe_node) {
  std::vector<ProfileEntry> entries;
  std::vector<ProfileEntry*> prepared;
  if (keeps_records()) {
    entries.resize(node_count);
    for (size_t n = 0; n < node_count; ++n) {
      describe_node(n, entries[n]);
      prepared.push_back(&entries[n]);
    }
  }
  std::vector<phx_plugin_profile*> node_profiles;
  return take_ticket("executable_run", prepared, [&](uint64_t* ticket, ProfileEntry* const* kept) {
    for (size_t n = 0; n < prepared.size(); ++n) node_profiles.push_back(&kept[n]->plugin);
    return device->plugin->api().executable_run(
        device->plugin->instance(), plugin_stream, executable, values, value_count,
        node_profiles.empty() ? nullptr : node_profiles.data(), ticket);
  });
}

template <typename Submit>
uint64_t Stream::take_ticket(const char* entry, std::span<ProfileEntry* const> prepared,
                             Submit&& submit) {
  std::lock_guard lock(mutex);
  // The prepared records join the stream's under its lock, where the plugin fills them and
  // another thread's wait may write them to the trace.
  const size_t first = records.size();
  for (ProfileEntry* record : prepared) {
    records.push_back(std::move(*record));
    records.back().plugin.struct_size = sizeof records.back().plugin;
  }
  std::vector<ProfileEntry*> kept;
  for (size_t i = first; i < records.size(); ++i) kept.push_back(&records[i]);
  auto& plugin = *device->plugin;
  // The clock only for a record: a tiny op's whole dispatch costs under a microsecond.
  const uint64_t start = kept.empty() ? 0 : trace::now_ns();
  uint64_t ticket = 0;
  try {
    plugin.call(entry, device->index, [&] { return submit(&ticket, kept.data()); });
  } catch (...) {
    records.resize(first);
    throw;
  }
  const uint64_t expected = last_ticket - ticket_offset + 1;
  if (ticket != expected)
    fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": " + entry + " returned ticket " +
                                      std::to_string(ticket) + ", expected " +
                                      std::to_string(expected));
  last_ticket = ticket + ticket_offset;
  if (kept.empty()) return last_ticket;
  const uint64_t host_time_ns = trace::now_ns() - start;
  // The nodes of one submission share its time, in equal consecutive parts.
  const uint64_t share = host_time_ns / kept.size();
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i]->ticket = last_ticket;
    kept[i]->start_ns = start + i * share;
    kept[i]->host_time_ns = share;
  }
  if (records.size() - traced > kMaxUnwrittenRecords && context->tracer.active())
    wait_locked(records[traced].ticket);
  return last_ticket;
}

}  // namespace phx
