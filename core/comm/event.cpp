#include "event.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace phx::comm {

EventTable& event_table() {
  static EventTable table;
  return table;
}

Event::~Event() { event_table().remove(handle); }

void Event::wait() const { wait_until_finished(*link, ticket); }

void wait_until_finished(StreamLink& link, uint64_t ticket) {
  // Short waits (a synchronous device's work, already done) cost a few yields; long ones
  // sleep up to a millisecond between looks, which bounds both the latency and the load.
  using std::chrono::microseconds;
  microseconds pause{0};
  while (!link.finished(ticket)) {
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = microseconds{1};
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, microseconds{1000});
    }
  }
}

}  // namespace phx::comm
