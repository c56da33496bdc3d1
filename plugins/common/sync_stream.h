// The streams of a plugin that runs every op to the end inside stream_submit: nothing is
// ever pending, so a stream is its device and the count of tickets it has given out,
// stream_wait has nothing to wait for, and the last ticket given out has finished.
#pragma once

#include <phynexus/plugin.h>

#include <new>

namespace phx::plugin_common {

struct SyncStream {
  uint32_t device;
  uint64_t submitted = 0;
};

inline SyncStream& stream_of(void* stream) { return *static_cast<SyncStream*>(stream); }

// The ticket of the op stream_submit has just run: one more than the last.
inline uint64_t next_ticket(void* stream) { return ++stream_of(stream).submitted; }

inline phx_status sync_stream_create(void*, uint32_t device, void** out_stream) {
  *out_stream = new (std::nothrow) SyncStream{device};
  return *out_stream != nullptr ? PHX_STATUS_OK : PHX_STATUS_OUT_OF_MEMORY;
}

inline void sync_stream_destroy(void*, void* stream) { delete &stream_of(stream); }

inline phx_status sync_stream_wait(void*, void*, uint64_t) { return PHX_STATUS_OK; }

inline phx_status sync_stream_completed(void*, void* stream, uint64_t* out_ticket) {
  *out_ticket = stream_of(stream).submitted;
  return PHX_STATUS_OK;
}

}  // namespace phx::plugin_common
