// Where the ranks of one collective meet: each rank's part arrives when its call queues
// it, and the worker of each rank's stream joins once the stream reaches it. When every
// worker has joined, they share the collective's chunks among themselves and leave
// together once every result is written.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "communicator.h"

namespace phx::comm {

class Rendezvous {
 public:
  // slots: the parts it waits for (the communicator's ranks; two for a message), whose
  // ranks are rank_of_slot. name says which collective it is in messages.
  Rendezvous(std::vector<size_t> rank_of_slot, std::chrono::milliseconds timeout, std::string name);

  // Adds the part of slot. A part whose terms differ from the first one's fails the
  // collective (at its run, on every rank). False, adding nothing, when another slot
  // uses the same stream.
  bool add(size_t slot, const Terms& terms, const Part& part);
  bool complete() const;  // every part added
  bool empty() const;     // no part added

  // Fails the collective if parts are missing (its communicator is gone).
  void abandon();

  // Run by the worker of slot's stream once the stream's earlier work has finished, as
  // the part's host work of ticket: waits for the other slots (at most the timeout),
  // does a share of the work, waits until every result is written, and keeps a profile
  // record on the stream. Throws the collective's error.
  void join(size_t slot, uint64_t ticket);

 private:
  enum class State { kGathering, kRunning, kFailed };
  void fail_locked(phx_status status, std::string message);
  // A message's two halves (slot 0 sends, slot 1 receives), in place of the shared work.
  void send(size_t slot, uint64_t ticket, uint64_t start_ns);
  void receive(size_t slot, uint64_t ticket, uint64_t start_ns);
  void prepare_locked();  // the host addresses of the tensors, the chunks of work
  void work();            // takes chunks until none is left
  void run_chunk(size_t chunk, std::vector<char>& scratch_in, std::vector<char>& scratch_acc,
                 std::vector<char>& scratch_out);
  // The bytes [offset, offset + size) of a slot's tensor in host memory: in place when its
  // device's memory is the host's, else read into scratch.
  const void* view(const Tensor& tensor, uint64_t offset, uint64_t size,
                   std::vector<char>& scratch) const;
  void write(const Tensor& tensor, uint64_t offset, uint64_t size, const void* src) const;
  uint64_t estimated_time_ns() const;  // the devices' model of the collective; 0 without one
  // Marks the collective's release (the last rank's arrival, a message's send) for the
  // trace's arrows: from the releasing slot's span to every other's. Under mutex_.
  void release_locked(size_t releasing_slot);
  // Hands slot's ends of those arrows to its stream, whose record of ticket they bind to.
  void add_flows(size_t slot, const Part& part, uint64_t ticket) const;

  const std::vector<size_t> rank_of_slot_;
  const std::chrono::milliseconds timeout_;
  const std::string name_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::kGathering;
  phx_status error_status_ = PHX_STATUS_OK;
  std::string error_;
  std::optional<Terms> terms_;
  std::vector<std::optional<Part>> parts_;
  std::vector<bool> joined_slots_;
  size_t added_ = 0, joined_ = 0, done_ = 0;

  // Set by prepare_locked, read by every worker while running.
  std::vector<std::pair<const Tensor*, char*>> host_addresses_;
  uint64_t chunk_bytes_ = 0;
  size_t chunks_per_span_ = 0;  // of the whole buffer, or of one rank's part
  size_t chunk_count_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::vector<char> staged_;  // a message's bytes, from its sender's join on
  // Set by release_locked, before any slot reads them.
  size_t releasing_slot_ = 0;
  uint64_t released_ns_ = 0;
  uint64_t flow_ids_ = 0;  // one per slot; 0 when no trace was being written
};

}  // namespace phx::comm
