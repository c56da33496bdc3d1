// The transport of comm.h (phx_comm_transport) over an MPI communicator: nonblocking MPI
// collectives and buffered messages, every wait a polling loop with a deadline. A failed
// call throws a phx::Error (phx/error.h), which the transport's entries turn into the
// calling thread's last error and status.
#pragma once

#include <mpi.h>
#include <phx/error.h>
#include <phynexus/comm.h>

#include <chrono>
#include <climits>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace phx::mpi {

// MPI counts are ints: a size above max_count bytes travels as one element of a derived
// type, made of pieces of piece_bytes and the rest. Tests lower both, to take that path
// with small buffers.
struct ByteLimits {
  size_t max_count = INT_MAX;
  size_t piece_bytes = size_t{1} << 30;
};

// Every MPI call of the library goes through this lock: under MPI_THREAD_SERIALIZED no two
// may overlap, and the streams of two communicators may run collectives at once.
std::mutex& mpi_lock();

// Throws an Error for an MPI error code (MPI_Error_string's text after what). Called
// with mpi_lock() held, as it makes MPI calls.
void check(int code, const char* what);

// Polls request until it completes, taking the lock for each poll only (MPI progresses
// only inside its calls; a blocking MPI_Wait could not stop at a deadline). False when
// deadline passes first; the request is then left pending.
bool wait_until(MPI_Request& request, std::chrono::steady_clock::time_point deadline,
                const char* what);

class Transport {
 public:
  // Takes comm and control, duplicates of one communicator that the transport alone uses
  // (control for the barrier before both are freed, when the transport is destroyed).
  Transport(MPI_Comm comm, MPI_Comm control, std::chrono::milliseconds timeout,
            ByteLimits limits = {});
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // The entries of comm.h's transport, with this as their user_data.
  phx_comm_transport table();

  void all_gather(const void* send, void* recv, size_t bytes);
  void all_to_all(const void* send, void* recv, size_t bytes);
  void broadcast(void* buffer, size_t bytes, size_t root);
  void send(const void* buffer, size_t bytes, size_t peer);
  void recv(void* buffer, size_t bytes, size_t peer);

  size_t rank() const { return rank_; }
  size_t ranks() const { return ranks_; }

 private:
  struct PendingSend {
    std::unique_ptr<std::byte[]> buffer;
    MPI_Request request;
  };

  // Refuses calls once a collective failed: MPI cannot cancel one, so the ranks' calls
  // no longer pair up.
  void require_usable() const;
  // MPI_Iallgather and MPI_Ialltoall: a part of bytes from and to every rank.
  using ExchangeCall = int (*)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, MPI_Comm,
                               MPI_Request*);
  void exchange(ExchangeCall call, const char* what, const void* send, void* recv, size_t bytes);
  // Runs a posted collective to its end, or marks the transport broken and throws.
  void finish_collective(MPI_Request request, const char* what, const std::string& waited_for);
  // Drops the pending sends that have completed; throws if one failed.
  void reap_sends();
  std::string other_ranks() const;
  std::chrono::steady_clock::time_point deadline() const;

  MPI_Comm comm_;
  MPI_Comm control_;
  size_t rank_ = 0;
  size_t ranks_ = 0;
  std::chrono::milliseconds timeout_;
  ByteLimits limits_;
  std::vector<PendingSend> sends_;
  std::string broken_;  // why the transport refuses calls; empty while it works
};

}  // namespace phx::mpi
