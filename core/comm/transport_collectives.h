// Collectives of a communicator whose ranks live in several processes (comm.h,
// "Communicators over a transport"): this process's rank, on one device, and a
// transport that moves host bytes between the processes. The host runs them one at a
// time in the order this process called them, and reduces in rank order itself, so
// that results are the in-process communicator's to the bit.
#pragma once

#include <phynexus/phynexus.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "communicator.h"

namespace phx::comm {

// What outlives the communicator while its queued collectives run: the transport, and
// whose turn it is.
class TransportLink {
 public:
  explicit TransportLink(const phx_comm_transport& transport) : transport_(transport) {}
  ~TransportLink();  // the transport's destroy, once owned: after the last queued collective
  TransportLink(const TransportLink&) = delete;
  TransportLink& operator=(const TransportLink&) = delete;

  // From now on the link calls the transport's destroy when it goes.
  void take_ownership() { owned_ = true; }
  size_t rank() const { return transport_.rank; }
  size_t ranks() const { return transport_.ranks; }

  // Runs collective number (this process's count of its calls, from 0) once every
  // earlier one has run, on part's tensors. Throws the collective's error.
  void run_in_turn(uint64_t number, const Terms& terms, const Part& part);

 private:
  void run(const Terms& terms, const Part& part);
  // At least bytes of host memory, kept from one collective to the next: a buffer the size
  // of a tensor, new at each call, would cost its page faults (the kernel's zeroing) every
  // time, as much as the reduction itself. Only run() uses it, one collective at a time.
  char* scratch(size_t bytes);
  // Calls a transport entry; a failure throws with the transport's last error.
  template <typename Call>
  void call(const char* what, Call&& entry);

  const phx_comm_transport transport_;
  std::mutex mutex_;
  std::condition_variable turn_changed_;
  uint64_t next_ = 0;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_bytes_ = 0;
  bool owned_ = false;
};

}  // namespace phx::comm
