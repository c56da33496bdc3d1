// The C API of traces: phx_trace_begin and phx_trace_end over the context's writer.
#include <phynexus/phynexus.h>

#include "context.h"
#include "errors.h"

using namespace phx;

extern "C" {

PHX_API phx_status phx_trace_begin(phx_context handle, const char* path) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require(path != nullptr, "path is null");
    require(path[0] != '\0', "path is empty");
    context.begin_trace(path);
  });
}

PHX_API phx_status phx_trace_end(phx_context handle) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    // The work already queued is part of the trace: its events are written as it finishes.
    for (auto& device : context.devices) device->wait_for_streams();
    context.tracer.end();
  });
}

}  // extern "C"
