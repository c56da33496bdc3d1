#include <algorithm>
#include <cstring>
#include <memory>

#include "context.h"
#include "errors.h"
#include "op_figures.h"
#include "op_rules.h"

namespace phx {

namespace {
// Records a stream may hold unwritten while a trace is being written, before a submission
// waits for the oldest: the bound on a trace's memory when a program never waits.
constexpr size_t kMaxUnwrittenRecords = 1024;

// An op held behind held work, with copies of what its caller may free meanwhile.
struct HeldOp {
  phx_plugin_op call{};
  phx_plugin_tensor inputs[kMaxOpInputs]{};
  phx_plugin_tensor outputs[kMaxOpOutputs]{};
  OpParams params{};
  ProfileEntry entry;
};
}  // namespace

bool StreamLink::finished(uint64_t ticket) {
  std::lock_guard lock(mutex);
  if (stream == nullptr) return true;
  try {
    return stream->completed() >= ticket;
  } catch (const Error&) {
    return true;  // the device failed: the error is its stream's to report, not the waiter's
  }
}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex);
    stopping_ = true;
  }
  held_changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::check_issued(uint64_t ticket) const {
  if (ticket == 0 || ticket > last_ticket)
    fail(PHX_STATUS_INVALID_ARGUMENT, "ticket " + std::to_string(ticket) +
                                          " was not issued (the last is " +
                                          std::to_string(last_ticket) + ")");
}

void Stream::wait(uint64_t ticket) {
  std::unique_lock lock(mutex);
  wait_locked(lock, ticket);
}

void Stream::wait_locked(std::unique_lock<std::mutex>& lock, uint64_t ticket) {
  held_changed_.wait(lock,
                     [&] { return ticket == UINT64_MAX ? held_.empty() : submitted >= ticket; });
  wait_plugin_locked(ticket);
  if (held_error_) {
    auto [status, message] = std::move(*held_error_);
    held_error_.reset();
    fail(status, std::move(message));
  }
}

void Stream::wait_plugin_locked(uint64_t ticket) {
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
  std::unique_lock lock(mutex);
  held_changed_.wait(lock, [&] { return held_.empty(); });
  finish_on_host(++last_ticket);
  return last_ticket;
}

void Stream::finish_on_host(uint64_t ticket) {
  ++ticket_offset;
  drained_through = submitted = ticket;
}

uint64_t Stream::hold_host_work(std::function<void(uint64_t ticket)> run) {
  std::lock_guard lock(mutex);
  hold_locked({HeldWork::Kind::kHostWork, ++last_ticket, std::move(run)});
  return last_ticket;
}

void Stream::hold_until(std::function<void()> wait) {
  std::lock_guard lock(mutex);
  hold_locked({HeldWork::Kind::kWait, 0, [wait = std::move(wait)](uint64_t) { wait(); }});
}

void Stream::release_held() {
  std::unique_lock lock(mutex);
  held_changed_.wait(lock, [&] { return held_.empty(); });
}

void Stream::hold_locked(HeldWork work) {
  held_.push_back(std::move(work));
  if (!worker_.joinable()) worker_ = std::thread([this] { run_held(); });
  held_changed_.notify_all();
}

void Stream::run_held() {
  std::unique_lock lock(mutex);
  for (;;) {
    held_changed_.wait(lock, [&] { return stopping_ || !held_.empty(); });
    if (held_.empty()) return;  // stopping, with nothing left
    HeldWork& work = held_.front();
    // An error belongs to the work's ticket: the stream's next wait returns it, and the
    // ticket still finishes, so that later work and waits go on.
    auto keep_error = [&](phx_status status, std::string message) {
      if (!held_error_) held_error_.emplace(status, std::move(message));
    };
    try {
      if (work.kind == HeldWork::Kind::kSubmission) {
        work.run(work.ticket);
      } else {
        if (work.kind == HeldWork::Kind::kHostWork) {
          auto& plugin = *device->plugin;
          plugin.call("stream_wait", device->index, [&] {
            return plugin.api().stream_wait(plugin.instance(), plugin_stream, UINT64_MAX);
          });
        }
        lock.unlock();
        try {
          work.run(work.ticket);
        } catch (...) {
          lock.lock();
          throw;
        }
        lock.lock();
      }
    } catch (const Error& e) {
      keep_error(e.status(), e.what());
    } catch (const std::bad_alloc&) {
      keep_error(PHX_STATUS_OUT_OF_MEMORY, "out of host memory");
    } catch (const std::exception& e) {
      keep_error(PHX_STATUS_INTERNAL, std::string("internal error: ") + e.what());
    }
    if (work.ticket != 0 && submitted < work.ticket) {
      // Host work, or a submission the plugin refused: drain what the plugin holds, so
      // that every ticket up to this one has finished.
      try {
        auto& plugin = *device->plugin;
        plugin.call("stream_wait", device->index, [&] {
          return plugin.api().stream_wait(plugin.instance(), plugin_stream, UINT64_MAX);
        });
      } catch (const Error& e) {
        keep_error(e.status(), e.what());
      }
      finish_on_host(work.ticket);
    }
    held_.pop_front();
    held_changed_.notify_all();
  }
}

trace::StreamTrack Stream::trace_track() const { return {device->index, trace_id}; }

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
  if (!tracer.active()) flows_.clear();  // arrows of a trace that has ended
  // A run's span follows the records of its nodes, whose ticket it shares or precedes.
  auto write_runs_before = [&](uint64_t ticket) {
    while (!run_spans.empty() && run_spans.front().ticket < ticket) {
      if (tracer.active() && !internal) tracer.executable_run(trace_track(), run_spans.front());
      run_spans.pop_front();
    }
  };
  while (traced < records.size() && records[traced].ticket <= done) {
    write_runs_before(records[traced].ticket);
    ProfileEntry& record = records[traced];
    if (tracer.active() && !internal) {
      written_through_ = record.ticket;
      if (!flows_.empty()) write_flows(record);
      // A record the profile API still reads is copied; any other is handed over.
      tracer.op(trace_track(), profiling ? ProfileEntry(record) : std::move(record),
                simulated_end_ns);
    }
    if (profiling) {
      ++traced;
    } else {
      records.pop_front();
    }
  }
  write_runs_before(done == UINT64_MAX ? done : done + 1);
}

bool Stream::add_flow(trace::FlowEnd end) {
  std::lock_guard lock(mutex);
  if (end.after) end.ticket = last_ticket;
  if (!end.after && end.ticket <= written_through_) return false;
  flows_.push_back(end);
  return true;
}

void Stream::write_flows(const ProfileEntry& record) {
  std::erase_if(flows_, [&](const trace::FlowEnd& end) {
    if (end.after ? record.ticket > end.ticket : record.ticket == end.ticket) {
      context->tracer.flow(trace_track(), record, end);
      return true;
    }
    // Its ticket's record was never kept (the op ran before the trace began): no arrow.
    return !end.after && end.ticket < record.ticket;
  });
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
    describe_operands(entry, inputs, input_count, outputs, output_count);
    if (node != nullptr) entry.node = node;
    const OpCounts figures = op_figures(op, params, inputs, input_count, outputs, output_count);
    entry.flops = figures.flops;
    entry.bytes = figures.bytes;
  }
  std::lock_guard lock(mutex);
  if (held_.empty()) return submit_locked(call, keep ? &entry : nullptr);
  // Behind held work: the op waits in the queue with copies of what the caller may free
  // once this returns (its parameters and tensor views; the tensors outlive the stream's
  // work, as their destruction waits for it).
  auto copy = std::make_shared<HeldOp>();
  std::copy_n(in_views, input_count, copy->inputs);
  std::copy_n(out_views, output_count, copy->outputs);
  if (params != nullptr)
    std::memcpy(&copy->params, params, params_struct_size(find_op_schema(op)->params));
  copy->call = call;
  copy->call.params = params != nullptr ? &copy->params : nullptr;
  copy->call.inputs = copy->inputs;
  copy->call.outputs = copy->outputs;
  copy->entry = std::move(entry);
  hold_locked({HeldWork::Kind::kSubmission, ++last_ticket, [this, copy, keep](uint64_t) {
                 submit_locked(copy->call, keep ? &copy->entry : nullptr);
               }});
  return last_ticket;
}

uint64_t Stream::submit_locked(phx_plugin_op& call, ProfileEntry* entry) {
  ProfileEntry* const prepared[1] = {entry};
  return take_ticket_locked("stream_submit", std::span(prepared, entry != nullptr ? 1 : 0),
                            [&](uint64_t* ticket, ProfileEntry* const* kept) {
                              if (entry != nullptr) call.profile = &kept[0]->plugin;
                              return device->plugin->api().stream_submit(
                                  device->plugin->instance(), plugin_stream, &call, ticket);
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
  std::unique_lock lock(mutex);
  // An executable's run is not held: it waits for the held work instead.
  held_changed_.wait(lock, [&] { return held_.empty(); });
  return take_ticket_locked(entry, prepared, std::forward<Submit>(submit));
}

template <typename Submit>
uint64_t Stream::take_ticket_locked(const char* entry, std::span<ProfileEntry* const> prepared,
                                    Submit&& submit) {
  // The prepared records join the stream's under its lock, where the plugin fills them and
  // another thread's wait may write them to the trace.
  const size_t first = records.size();
  for (ProfileEntry* record : prepared) {
    records.push_back(std::move(*record));
    records.back().plugin.struct_size = sizeof records.back().plugin;
  }
  // A pointer per record for the plugin: an op's one needs no allocation.
  const size_t kept_count = records.size() - first;
  ProfileEntry* one[1] = {};
  std::vector<ProfileEntry*> many(kept_count > 1 ? kept_count : 0);
  ProfileEntry** const kept = kept_count > 1 ? many.data() : one;
  for (size_t i = 0; i < kept_count; ++i) kept[i] = &records[first + i];
  auto& plugin = *device->plugin;
  // The clock only for a record: a tiny op's whole dispatch costs under a microsecond.
  const uint64_t start = kept_count == 0 ? 0 : trace::now_ns();
  uint64_t ticket = 0;
  try {
    plugin.call(entry, device->index, [&] { return submit(&ticket, kept); });
  } catch (...) {
    records.resize(first);
    throw;
  }
  const uint64_t expected = submitted - ticket_offset + 1;
  if (ticket != expected)
    fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": " + entry + " returned ticket " +
                                      std::to_string(ticket) + ", expected " +
                                      std::to_string(expected));
  submitted = ticket + ticket_offset;
  // A held op's ticket was given out already; the caller's thread reads last_ticket.
  if (submitted > last_ticket) last_ticket = submitted;
  if (kept_count == 0) return submitted;
  const uint64_t host_time_ns = trace::now_ns() - start;
  // The nodes of one submission share its time, in equal consecutive parts.
  const uint64_t share = host_time_ns / kept_count;
  for (size_t i = 0; i < kept_count; ++i) {
    kept[i]->ticket = submitted;
    kept[i]->start_ns = start + i * share;
    kept[i]->host_time_ns = share;
  }
  if (records.size() - traced > kMaxUnwrittenRecords && context->tracer.active())
    wait_plugin_locked(records[traced].ticket);
  return submitted;
}

}  // namespace phx
