// The C API of streams and their profile records.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include "context.h"
#include "errors.h"
#include "op_rules.h"

using namespace phx;

extern "C" {

PHX_API phx_status phx_stream_create(phx_context handle, size_t device, phx_stream* out_stream) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_stream, "out_stream");
    Stream& stream = context.create_stream(context.device(device));
    *out_stream = reinterpret_cast<phx_stream>(stream.handle);
  });
}

PHX_API phx_status phx_stream_destroy(phx_stream handle) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    stream.context->destroy_stream(stream);
  });
}

PHX_API phx_status phx_stream_synchronize(phx_stream handle) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    const uint64_t start = stream.context->tracer.active() ? trace::now_ns() : 0;
    stream.wait(UINT64_MAX);
    if (start != 0) stream.context->tracer.stream_wait(stream.trace_track(), UINT64_MAX, start);
  });
}

PHX_API phx_status phx_stream_wait(phx_stream handle, uint64_t ticket) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    stream.check_issued(ticket);
    const uint64_t start = stream.context->tracer.active() ? trace::now_ns() : 0;
    stream.wait(ticket);
    if (start != 0) stream.context->tracer.stream_wait(stream.trace_track(), ticket, start);
  });
}

PHX_API phx_status phx_stream_query(phx_stream handle, uint64_t ticket, int* out_done) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    require_out(out_done, "out_done");
    stream.check_issued(ticket);
    *out_done = stream.completed() >= ticket ? 1 : 0;
  });
}

PHX_API phx_status phx_profile_count(phx_stream handle, size_t* out_count) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    require_out(out_count, "out_count");
    stream.wait(UINT64_MAX);
    *out_count = stream.records.size();
  });
}

PHX_API phx_status phx_profile_get(phx_stream handle, size_t index,
                                   phx_profile_record* out_record) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    require_out(out_record, "out_record");
    check_struct_size(out_record->struct_size, "out_record");
    stream.wait(UINT64_MAX);
    if (index >= stream.records.size())
      fail(PHX_STATUS_NOT_FOUND, "no profile record " + std::to_string(index) +
                                     " (the stream has " + std::to_string(stream.records.size()) +
                                     ")");
    ProfileEntry& entry = stream.records[index];
    {
      // The text is written on the first read and kept, as the record hands out its pointer.
      std::lock_guard lock(stream.mutex);
      if (entry.signature.empty()) {
        std::string text;
        append_signature(text, entry);
        entry.signature = std::move(text);
      }
    }
    phx_profile_record record{};
    record.struct_size = sizeof record;
    record.ticket = entry.ticket;
    record.op = entry.op;
    record.signature = entry.signature.c_str();
    record.host_time_ns = entry.host_time_ns;
    size_t count = std::min<size_t>(entry.plugin.metric_count, PHX_PLUGIN_MAX_METRICS);
    record.metrics = count ? entry.plugin.metrics : nullptr;
    record.metric_count = count;
    record.node = entry.node.c_str();
    write_struct(out_record, record, "out_record");
  });
}

PHX_API phx_status phx_profile_clear(phx_stream handle) {
  return guard(__func__, [&] {
    Stream& stream = lookup(handle);
    stream.wait(UINT64_MAX);
    stream.clear_records();
  });
}

}  // extern "C"
