#include "transport_collectives.h"

#include <cstring>
#include <string>
#include <vector>

#include "reduction.h"
#include "transfer.h"

namespace phx::comm {

namespace {

// What each rank's call said, exchanged before a collective so that ranks that disagree
// fail together instead of exchanging mismatched bytes. Fixed width: it crosses
// processes that may be built apart.
struct TermsRecord {
  uint32_t kind, dtype;
  uint64_t bytes;
  int32_t op;
  uint32_t pad;
  uint64_t root, blocks;

  explicit TermsRecord(const Terms& terms)
      : kind(static_cast<uint32_t>(terms.kind)),
        dtype(static_cast<uint32_t>(terms.dtype)),
        bytes(terms.bytes),
        op(terms.op),
        pad(0),
        root(terms.root),
        blocks(terms.blocks) {}
  TermsRecord() = default;
  bool operator==(const TermsRecord&) const = default;

  std::string text() const {
    Terms terms;
    terms.kind = static_cast<Kind>(kind);
    terms.dtype = static_cast<phx_dtype>(dtype);
    terms.bytes = bytes;
    terms.op = op;
    terms.root = static_cast<size_t>(root);
    terms.blocks = blocks;
    return terms.text();
  }
};

}  // namespace

TransportLink::~TransportLink() {
  if (owned_ && transport_.destroy != nullptr) transport_.destroy(transport_.user_data);
}

template <typename Call>
void TransportLink::call(const char* what, Call&& entry) {
  const phx_status status = entry();
  if (status != PHX_STATUS_OK)
    fail(status, std::string("the transport's ") + what + " failed: " + phx_last_error());
}

void TransportLink::run_in_turn(uint64_t number, const Terms& terms, const Part& part) {
  std::unique_lock lock(mutex_);
  turn_changed_.wait(lock, [&] { return next_ == number; });
  lock.unlock();
  // The next collective runs whatever this one does: the processes stay in step.
  struct NextTurn {
    TransportLink& link;
    ~NextTurn() {
      std::lock_guard lock(link.mutex_);
      ++link.next_;
      link.turn_changed_.notify_all();
    }
  } next_turn{*this};
  run(terms, part);
}

void TransportLink::run(const Terms& terms, const Part& part) {
  const size_t ranks = transport_.ranks, rank = transport_.rank;
  void* const user = transport_.user_data;
  if (terms.kind == Kind::kMessage) {
    std::vector<char> bytes(terms.bytes);
    if (part.send != nullptr) {
      read_to_host(*part.send, bytes.data());
      call("send", [&] { return transport_.send(user, bytes.data(), bytes.size(), terms.to); });
    } else {
      call("recv", [&] { return transport_.recv(user, bytes.data(), bytes.size(), terms.root); });
      write_from_host(*part.recv, bytes.data());
    }
    return;
  }
  const TermsRecord mine(terms);
  std::vector<TermsRecord> all(ranks);
  call("all_gather", [&] { return transport_.all_gather(user, &mine, all.data(), sizeof mine); });
  for (size_t r = 0; r < ranks; ++r)
    if (!(all[r] == mine))
      fail(PHX_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(r) + " called " + all[r].text() +
                                            ", rank " + std::to_string(rank) + " " + mine.text());

  const size_t element = phx_dtype_size(terms.dtype);
  // Each rank reduces one part of every rank's buffer, in rank order, with the
  // in-process communicator's arithmetic: all_to_all brings it the parts.
  auto reduce_parts = [&](const std::vector<char>& pieces, size_t count, void* out) {
    const Reduction reduction(terms.dtype, static_cast<phx_reduce_op>(terms.op), ranks);
    std::vector<char> accumulator(reduction.accumulator_bytes(count));
    const size_t part_bytes = count * element;
    reduction.start(accumulator.data(), pieces.data(), count);
    for (size_t r = 1; r < ranks; ++r)
      reduction.add(accumulator.data(), pieces.data() + r * part_bytes, count);
    reduction.finish(accumulator.data(), out, count);
  };
  switch (terms.kind) {
    case Kind::kAllReduce: {
      const size_t count = terms.bytes / element;
      const size_t part_count = (count + ranks - 1) / ranks, part_bytes = part_count * element;
      std::vector<char> padded(ranks * part_bytes, 0), pieces(ranks * part_bytes);
      read_to_host(*part.send, padded.data());
      call("all_to_all",
           [&] { return transport_.all_to_all(user, padded.data(), pieces.data(), part_bytes); });
      std::vector<char> reduced(part_bytes);
      reduce_parts(pieces, part_count, reduced.data());
      call("all_gather",
           [&] { return transport_.all_gather(user, reduced.data(), padded.data(), part_bytes); });
      write_from_host(*part.recv, padded.data());  // the first terms.bytes: the padding stays
      break;
    }
    case Kind::kReduceScatter: {
      const size_t part_bytes = part.recv->byte_size;
      std::vector<char> whole(terms.bytes), pieces(terms.bytes), reduced(part_bytes);
      read_to_host(*part.send, whole.data());
      call("all_to_all",
           [&] { return transport_.all_to_all(user, whole.data(), pieces.data(), part_bytes); });
      reduce_parts(pieces, part_bytes / element, reduced.data());
      write_from_host(*part.recv, reduced.data());
      break;
    }
    case Kind::kAllGather: {
      const size_t part_bytes = part.send->byte_size;
      std::vector<char> mine_bytes(part_bytes), gathered(terms.bytes), whole(terms.bytes);
      read_to_host(*part.send, mine_bytes.data());
      call("all_gather", [&] {
        return transport_.all_gather(user, mine_bytes.data(), gathered.data(), part_bytes);
      });
      // Rank-major from the transport; block-interleaved when gathered along an axis.
      for (size_t r = 0; r < ranks; ++r)
        for_each_block_piece(
            terms, ranks, r, 0, part_bytes, [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
              std::memcpy(whole.data() + whole_at, gathered.data() + r * part_bytes + at, piece);
            });
      write_from_host(*part.recv, whole.data());
      break;
    }
    case Kind::kScatter: {
      const size_t part_bytes = part.recv->byte_size;
      std::vector<char> bytes(part_bytes);
      if (rank != terms.root) {
        call("recv", [&] { return transport_.recv(user, bytes.data(), part_bytes, terms.root); });
        write_from_host(*part.recv, bytes.data());
        break;
      }
      std::vector<char> whole(terms.bytes);
      read_to_host(*part.send, whole.data());
      for (size_t r = 0; r < ranks; ++r) {
        for_each_block_piece(terms, ranks, r, 0, part_bytes,
                             [&](uint64_t at, uint64_t whole_at, uint64_t piece) {
                               std::memcpy(bytes.data() + at, whole.data() + whole_at, piece);
                             });
        if (r == rank)
          write_from_host(*part.recv, bytes.data());
        else
          call("send", [&] { return transport_.send(user, bytes.data(), part_bytes, r); });
      }
      break;
    }
    case Kind::kBroadcast: {
      std::vector<char> bytes(terms.bytes);
      if (rank == terms.root) read_to_host(*part.send, bytes.data());
      call("broadcast",
           [&] { return transport_.broadcast(user, bytes.data(), bytes.size(), terms.root); });
      if (rank != terms.root) write_from_host(*part.recv, bytes.data());
      break;
    }
    case Kind::kMessage:  // above
      break;
  }
}

}  // namespace phx::comm
