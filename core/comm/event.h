// Events (comm.h): a point in a stream's work that other streams and threads wait for.
#pragma once

#include <cstdint>
#include <memory>

#include "context.h"
#include "handles.h"

namespace phx::comm {

struct Event : ContextObject {
  ~Event() override;

  std::shared_ptr<StreamLink> link;
  uint64_t ticket = 0;
  // The trace's arrow from the op of ticket to the ops that waited for it; 0 for none (no
  // trace was being written, or that op's span had been written already).
  uint64_t flow_id = 0;

  bool finished() const { return link->finished(ticket); }
  // Blocks until finished, polling: the stream's worker or another thread may be what
  // finishes it, and a plugin's wait may not be called beside its stream's owner.
  void wait() const;
};

// Blocks until link's stream has finished ticket (as Event::wait).
void wait_until_finished(StreamLink& link, uint64_t ticket);

using EventTable = HandleTable<Event, 0xc7>;
EventTable& event_table();

}  // namespace phx::comm
