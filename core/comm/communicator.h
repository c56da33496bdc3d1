// Communicators within one process (comm.h): ranks on devices of a context, and the
// meeting points where the workers of the ranks' streams run each collective together.
#pragma once

#include <phynexus/phynexus.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "context.h"
#include "handles.h"

namespace phx::comm {

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kMessage };
const char* kind_name(Kind kind);  // "all_reduce"

// What every rank of a collective must agree on, as each rank's call describes it.
struct Terms {
  Kind kind = Kind::kAllReduce;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  // The whole buffer the collective is about, as phx_plugin_api.collective_estimate
  // counts it: all-reduce's and broadcast's tensor, all-gather's result, reduce-scatter's
  // input, the message.
  uint64_t bytes = 0;
  int op = PHX_REDUCE_SUM;  // reductions only
  size_t root = 0;          // broadcast's root, a message's sender
  size_t to = 0;            // a message's receiver

  bool operator==(const Terms&) const = default;
  std::string text() const;  // "all_reduce sum of f32, 4096 bytes"
};

// One rank's part: its stream, and the tensors it gives and receives (null where its
// role has none; broadcast's tensor is both).
struct Part {
  Stream* stream = nullptr;
  const Tensor* send = nullptr;
  const Tensor* recv = nullptr;
};

class Rendezvous;

struct Communicator : ContextObject {
  ~Communicator() override;  // fails the collectives still missing ranks

  std::vector<Device*> devices;  // by rank
  std::chrono::milliseconds timeout{60000};

  // Queues rank's part of its next collective on the part's stream and returns the
  // stream's ticket: for a message (terms.kind kMessage), of the next message from
  // terms.root to terms.to. Throws INVALID_ARGUMENT, changing nothing,
  // when another rank of that collective uses the same stream.
  uint64_t queue(size_t rank, const Terms& terms, const Part& part);

 private:
  std::mutex mutex_;
  // Collectives and messages that still miss a rank's part; a rendezvous leaves once
  // every part is queued, and lives on in the held work of the streams.
  std::vector<uint64_t> collectives_called_;  // per rank
  std::map<uint64_t, std::shared_ptr<Rendezvous>> collectives_;
  // By (sender, receiver): messages sent and received so far, and the open ones by number.
  std::map<std::pair<size_t, size_t>, std::pair<uint64_t, uint64_t>> messages_called_;
  std::map<std::tuple<size_t, size_t, uint64_t>, std::shared_ptr<Rendezvous>> messages_;
};

using CommTable = HandleTable<Communicator, 0xc8>;
CommTable& comm_table();

}  // namespace phx::comm
