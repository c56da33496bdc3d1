// An object of a layer above the runtime that its context owns (context.h).
#pragma once

#include <cstdint>

namespace phx {

class Context;

// An object of a layer above the runtime (a graph, an executable) that a context owns,
// so that the context's destruction frees those the program forgot, before its streams
// and tensors, which such an object may use. Its destructor removes its handle from its
// layer's table.
struct ContextObject {
  virtual ~ContextObject() = default;
  Context* context = nullptr;
  uintptr_t handle = 0;
};

}  // namespace phx
