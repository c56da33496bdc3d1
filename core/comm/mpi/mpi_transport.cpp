#include "mpi_transport.h"

#include <phx/abi_guard.h>

#include <cstring>
#include <thread>

namespace phx::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// The one tag of every message: the duplicated communicator carries nothing else, and
// MPI keeps the messages of one sender and tag in order, as comm.h pairs them.
constexpr int kTag = 0;

// Between two polls: yielding only at first, so that a transfer in progress is driven
// at full speed even when ranks outnumber cores; after a while short sleeps, so that a
// rank waiting long for a late one leaves the CPU to the others.
void pause_since(Clock::time_point start) {
  if (Clock::now() - start < std::chrono::milliseconds(200)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string milliseconds(std::chrono::milliseconds timeout) {
  return std::to_string(timeout.count()) + " ms";
}

// The datatype and count that carry bytes bytes, a derived type when the count would not
// fit an int (freed with this object: MPI keeps a type alive for the operations already
// posted with it).
class Bytes {
 public:
  Bytes(size_t bytes, const ByteLimits& limits) {
    if (bytes <= limits.max_count) {
      count = static_cast<int>(bytes);
      return;
    }
    const size_t pieces = bytes / limits.piece_bytes;
    const size_t rest = bytes % limits.piece_bytes;
    if (pieces > INT_MAX)
      throw Error(PHX_STATUS_INVALID_ARGUMENT,
                  std::to_string(bytes) + " bytes are more than MPI can carry in one message");
    std::lock_guard lock(mpi_lock());
    MPI_Datatype piece = MPI_DATATYPE_NULL;
    check(MPI_Type_contiguous(static_cast<int>(limits.piece_bytes), MPI_BYTE, &piece),
          "MPI_Type_contiguous");
    int lengths[2] = {static_cast<int>(pieces), static_cast<int>(rest)};
    MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(pieces * limits.piece_bytes)};
    MPI_Datatype types[2] = {piece, MPI_BYTE};
    MPI_Datatype joined = MPI_DATATYPE_NULL;
    const int joined_code =
        MPI_Type_create_struct(rest == 0 ? 1 : 2, lengths, displacements, types, &joined);
    MPI_Type_free(&piece);
    check(joined_code, "MPI_Type_create_struct");
    // The extent is set to bytes exactly, so that the parts of the ranks in a gathered
    // buffer lie back to back whatever alignment MPI would give a struct.
    const int resized_code =
        MPI_Type_create_resized(joined, 0, static_cast<MPI_Aint>(bytes), &type);
    MPI_Type_free(&joined);
    check(resized_code, "MPI_Type_create_resized");
    check(MPI_Type_commit(&type), "MPI_Type_commit");
    count = 1;
  }
  ~Bytes() {
    if (type == MPI_BYTE) return;
    std::lock_guard lock(mpi_lock());
    MPI_Type_free(&type);
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;

  MPI_Datatype type = MPI_BYTE;
  int count = 0;
};

// Entry<&Transport::f>::call is f as a phx_comm_transport entry: an exception becomes
// the returned status and the thread's last error (abi_guard).
template <auto Method>
struct Entry;
template <typename... Args, void (Transport::*Method)(Args...)>
struct Entry<Method> {
  static phx_status call(void* user_data, Args... args) noexcept {
    return abi_guard(
        [&] { (static_cast<Transport*>(user_data)->*Method)(args...); },
        [](phx_status status, const char* message) { return phx_set_last_error(status, message); });
  }
};

void destroy_transport(void* user_data) { delete static_cast<Transport*>(user_data); }

}  // namespace

std::mutex& mpi_lock() {
  static std::mutex lock;
  return lock;
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::strcpy(text, "unknown error");
  int error_class = MPI_ERR_OTHER;
  MPI_Error_class(code, &error_class);
  throw Error(
      error_class == MPI_ERR_NO_MEM ? PHX_STATUS_OUT_OF_MEMORY : PHX_STATUS_DEVICE_UNAVAILABLE,
      "MPI transport: " + std::string(what) + " failed: " + text);
}

bool wait_until(MPI_Request& request, Clock::time_point deadline, const char* what) {
  const Clock::time_point start = Clock::now();
  for (;;) {
    int done = 0;
    {
      std::lock_guard lock(mpi_lock());
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    }
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    pause_since(start);
  }
}

Transport::Transport(MPI_Comm comm, MPI_Comm control, std::chrono::milliseconds timeout,
                     ByteLimits limits)
    : comm_(comm), control_(control), timeout_(timeout), limits_(limits) {
  int rank = 0;
  int ranks = 0;
  std::lock_guard lock(mpi_lock());
  check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &ranks), "MPI_Comm_size");
  rank_ = static_cast<size_t>(rank);
  ranks_ = static_cast<size_t>(ranks);
}

Transport::~Transport() {
  int finalized = 1;
  MPI_Finalized(&finalized);
  // After MPI_Finalize nothing reads the buffers any more, and nothing may be freed.
  if (finalized) return;
  const Clock::time_point until = deadline();
  for (PendingSend& pending : sends_) {
    bool done = false;
    try {
      done = wait_until(pending.request, until, "MPI_Isend");
    } catch (const Error&) {
      done = true;  // failed, so MPI is done with the buffer; no caller is left to tell
    }
    if (!done) {
      // The peer has not received it: MPI may still read the buffer, which is therefore
      // left allocated for the rest of the process.
      std::lock_guard lock(mpi_lock());
      MPI_Request_free(&pending.request);
      static_cast<void>(pending.buffer.release());
    }
  }
  // Freed only once every process is done with them: Open MPI 4.1 gives a freed
  // communicator's id to the next one, and a process that had freed its duplicate while
  // another still sent on it crashed later, in the next communicator's creation (seen in
  // phx_mpi_comm_test). The barrier has a communicator of its own, as a process whose
  // collectives no longer pair with the others' (one that timed out) may be destroying
  // this one. A communicator whose barrier does not complete in time may still be
  // written to, and is left allocated.
  MPI_Request request = MPI_REQUEST_NULL;
  try {
    {
      std::lock_guard lock(mpi_lock());
      check(MPI_Ibarrier(control_, &request), "MPI_Ibarrier");
    }
    if (!wait_until(request, deadline(), "MPI_Ibarrier")) return;
  } catch (const Error&) {
    return;
  }
  std::lock_guard lock(mpi_lock());
  MPI_Comm_free(&control_);
  // A collective that failed may still be pending on it.
  if (broken_.empty()) MPI_Comm_free(&comm_);
}

phx_comm_transport Transport::table() {
  phx_comm_transport table{};
  table.struct_size = sizeof table;
  table.rank = rank_;
  table.ranks = ranks_;
  table.user_data = this;
  table.all_gather = Entry<&Transport::all_gather>::call;
  table.all_to_all = Entry<&Transport::all_to_all>::call;
  table.broadcast = Entry<&Transport::broadcast>::call;
  table.send = Entry<&Transport::send>::call;
  table.recv = Entry<&Transport::recv>::call;
  table.destroy = destroy_transport;
  return table;
}

Clock::time_point Transport::deadline() const { return Clock::now() + timeout_; }

std::string Transport::other_ranks() const {
  constexpr size_t kListed = 8;
  if (ranks_ - 1 > kListed) return "the " + std::to_string(ranks_ - 1) + " other ranks";
  std::string list;
  for (size_t r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  return (ranks_ == 2 ? "rank " : "ranks ") + list;
}

void Transport::require_usable() const {
  if (!broken_.empty())
    throw Error(PHX_STATUS_DEVICE_UNAVAILABLE,
                "MPI transport: unusable since an earlier collective failed (" + broken_ +
                    "); destroy the communicator");
}

void Transport::reap_sends() {
  for (size_t i = 0; i < sends_.size();) {
    int done = 0;
    {
      std::lock_guard lock(mpi_lock());
      const int code = MPI_Test(&sends_[i].request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) {
        sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
        check(code, "an earlier send (MPI_Isend)");
      }
    }
    if (done) {
      sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void Transport::finish_collective(MPI_Request request, const char* what,
                                  const std::string& waited_for) {
  try {
    if (!wait_until(request, deadline(), what))
      throw Error(PHX_STATUS_DEVICE_UNAVAILABLE,
                  "MPI transport: " + std::string(what) + ", rank " + std::to_string(rank_) +
                      " of " + std::to_string(ranks_) + ", waited " + milliseconds(timeout_) +
                      " for " + waited_for + ", gone or not at this collective");
  } catch (const Error& e) {
    broken_ = e.what();
    throw;
  }
}

void Transport::exchange(ExchangeCall call, const char* what, const void* send, void* recv,
                         size_t bytes) {
  require_usable();
  reap_sends();
  Bytes part(bytes, limits_);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_lock());
    check(call(send, part.count, part.type, recv, part.count, part.type, comm_, &request), what);
  }
  finish_collective(request, what, other_ranks());
}

void Transport::all_gather(const void* send, void* recv, size_t bytes) {
  exchange(MPI_Iallgather, "all_gather (MPI_Iallgather)", send, recv, bytes);
}

void Transport::all_to_all(const void* send, void* recv, size_t bytes) {
  exchange(MPI_Ialltoall, "all_to_all (MPI_Ialltoall)", send, recv, bytes);
}

void Transport::broadcast(void* buffer, size_t bytes, size_t root) {
  require_usable();
  reap_sends();
  Bytes whole(bytes, limits_);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_lock());
    check(MPI_Ibcast(buffer, whole.count, whole.type, static_cast<int>(root), comm_, &request),
          "MPI_Ibcast");
  }
  finish_collective(request, "broadcast (MPI_Ibcast)",
                    root == rank_ ? other_ranks() : "rank " + std::to_string(root) + " (root)");
}

void Transport::send(const void* buffer, size_t bytes, size_t peer) {
  require_usable();
  reap_sends();
  PendingSend pending{std::make_unique_for_overwrite<std::byte[]>(bytes), MPI_REQUEST_NULL};
  if (bytes > 0) std::memcpy(pending.buffer.get(), buffer, bytes);
  Bytes message(bytes, limits_);
  {
    std::lock_guard lock(mpi_lock());
    check(MPI_Isend(pending.buffer.get(), message.count, message.type, static_cast<int>(peer), kTag,
                    comm_, &pending.request),
          "MPI_Isend");
  }
  sends_.push_back(std::move(pending));
}

void Transport::recv(void* buffer, size_t bytes, size_t peer) {
  require_usable();
  reap_sends();
  const Clock::time_point start = Clock::now();
  const Clock::time_point until = start + timeout_;
  const std::string from =
      "a message from rank " + std::to_string(peer) + " to rank " + std::to_string(rank_);
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  for (;;) {
    int found = 0;
    {
      std::lock_guard lock(mpi_lock());
      check(MPI_Improbe(static_cast<int>(peer), kTag, comm_, &found, &message, &status),
            "MPI_Improbe");
    }
    if (found) break;
    if (Clock::now() >= until)
      throw Error(PHX_STATUS_DEVICE_UNAVAILABLE, "MPI transport: waited " + milliseconds(timeout_) +
                                                     " for " + from +
                                                     ": the rank is gone or has not sent it");
    pause_since(start);
  }
  MPI_Count length = 0;
  {
    std::lock_guard lock(mpi_lock());
    check(MPI_Get_elements_x(&status, MPI_BYTE, &length), "MPI_Get_elements_x");
  }
  // A message of another length is still received (into memory of its own), so that the
  // next receive from peer gets the next message.
  const bool fits = static_cast<size_t>(length) == bytes;
  std::unique_ptr<std::byte[]> discarded;
  if (!fits) discarded = std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(length));
  Bytes whole(static_cast<size_t>(length), limits_);
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_lock());
    check(MPI_Imrecv(fits ? buffer : discarded.get(), whole.count, whole.type, &message, &request),
          "MPI_Imrecv");
  }
  if (!wait_until(request, until, "MPI_Imrecv")) {
    broken_ = "the rest of " + from + " did not arrive within " + milliseconds(timeout_);
    throw Error(PHX_STATUS_DEVICE_UNAVAILABLE, "MPI transport: " + broken_);
  }
  if (!fits)
    throw Error(PHX_STATUS_INVALID_ARGUMENT,
                "MPI transport: " + from + " has " + std::to_string(length) +
                    " bytes; the receive expects " + std::to_string(bytes));
}

}  // namespace phx::mpi
